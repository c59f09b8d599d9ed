package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

func run(version string, sent, p99 float64) *pipebench.Result {
	return &pipebench.Result{Manifest: pipebench.Manifest{Version: version, Case: "single", Status: pipebench.StatusCompleted},
		Phases: []pipebench.PhaseResult{{Name: "load", KPIs: []pipebench.KPI{
			{Name: "sent_rate", Value: sent}, {Name: "latency.p99", Value: p99},
			{Name: "memory_mb", Labels: map[string]string{"instance": "a"}, Value: 100}, {Name: "memory_mb", Labels: map[string]string{"instance": "b"}, Value: 120},
		}}}}
}

func find(t *testing.T, rep *Report, kpi string) Verdict {
	t.Helper()
	for _, v := range rep.Verdicts {
		if v.KPI == kpi {
			return v
		}
	}
	t.Fatalf("no verdict on %s: %+v", kpi, rep.Verdicts)
	return Verdict{}
}

func diff(t *testing.T, base, cand []*pipebench.Result, o Options) *Report {
	t.Helper()
	rep, err := Diff(base, cand, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRepeatedRunsJudgedByInterval(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1010, 10.5), run("1", 990, 9.5)}
	// p99 +40%: its whole interval lies far beyond 5%; sent -0.2%: within.
	cand := []*pipebench.Result{run("2", 1000, 14), run("2", 995, 14.2), run("2", 1005, 13.8)}
	rep := diff(t, base, cand, Options{Tolerance: 0.05})
	v := find(t, rep, "latency.p99")
	if v.Judgement != Regressed || !(v.Low > 0.05) || !(v.Low <= v.Change && v.Change <= v.High) {
		t.Errorf("p99: %+v", v)
	}
	if s := v.String(); !strings.Contains(s, "latency.p99 (single / load): +40.0% [+") || !strings.Contains(s, "▼ worse: the whole interval lies beyond ±5%") {
		t.Errorf("p99 text: %s", s)
	}
	if v := find(t, rep, "sent_rate"); v.Judgement != Same || v.Low < -0.05 || v.High > 0.05 {
		t.Errorf("sent_rate within noise: %+v", v)
	}
	if v := find(t, rep, "memory_mb"); v.Baseline != 120 {
		t.Errorf("memory reduces to the max instance: %+v", v)
	}
	if bad := rep.Regressions(); len(bad) != 1 || bad[0].KPI != "latency.p99" {
		t.Errorf("regressions: %+v", bad)
	}
}

// A change whose interval reaches inside the tolerance is not a
// regression, however far its point estimate lies beyond it.
func TestIntervalMustLieWhollyBeyondTolerance(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1000, 12), run("1", 1000, 11)}
	cand := []*pipebench.Result{run("2", 1000, 12), run("2", 1000, 14.5), run("2", 1000, 13)}
	rep := diff(t, base, cand, Options{Tolerance: 0.10})
	v := find(t, rep, "latency.p99")
	if v.Change <= 0.10 || v.Judgement != Unclear || v.Low > 0.10 {
		t.Fatalf("p99 +19%% with overlapping runs: %+v", v)
	}
	if len(rep.Regressions()) != 0 {
		t.Errorf("an unclear change was counted: %+v", rep.Regressions())
	}
}

func TestOneRunPerSideIsTooFew(t *testing.T) {
	rep := diff(t, []*pipebench.Result{run("1", 1000, 10)}, []*pipebench.Result{run("2", 500, 30)}, Options{})
	for _, v := range rep.Verdicts {
		if v.Judgement != TooFew || !math.IsNaN(v.Low) {
			t.Errorf("%s: %+v", v.KPI, v)
		}
	}
	if len(rep.Regressions()) != 0 {
		t.Errorf("one run each failed the gate: %+v", rep.Regressions())
	}
	notes := strings.Join(rep.Notes(), "\n")
	if !strings.Contains(notes, "too few runs") || !strings.Contains(notes, "at least 2") {
		t.Errorf("notes: %s", notes)
	}
	// Two against two judges, in both directions: a lower rate is worse, a
	// lower latency better.
	rep = diff(t, []*pipebench.Result{run("1", 1000, 10), run("1", 1001, 10.1)}, []*pipebench.Result{run("2", 500, 5), run("2", 501, 5.1)}, Options{Tolerance: 0.1})
	if find(t, rep, "sent_rate").Judgement != Regressed || find(t, rep, "latency.p99").Judgement != Improved {
		t.Errorf("directions: %+v", rep.Verdicts)
	}
}

// Two scenarios with a case of the same name are compared each with
// itself, never with the other.
func TestScenariosNeverMix(t *testing.T) {
	in := func(scen string, r *pipebench.Result) *pipebench.Result { r.Manifest.Scenario = scen; return r }
	base := []*pipebench.Result{in("traces", run("1", 1000, 10)), in("traces", run("1", 1000, 10)),
		in("metrics", run("1", 100, 50)), in("metrics", run("1", 100, 50))}
	cand := []*pipebench.Result{in("traces", run("2", 1000, 10)), in("traces", run("2", 1000, 10))}
	rep := diff(t, base, cand, Options{})
	for _, v := range rep.Verdicts {
		if v.Scenario != "traces" || v.Baseline != v.Candidate || v.Judgement != Same {
			t.Errorf("mixed: %+v", v)
		}
	}
}

// Invalid, aborted, running and errored runs are left out of both sides,
// counted and explained; failed runs (a threshold failed) are compared.
func TestUnusableRunsAreLeftOut(t *testing.T) {
	with := func(r *pipebench.Result, s pipebench.Status, id string, reasons ...string) *pipebench.Result {
		r.Manifest.Status, r.Manifest.RunID, r.Manifest.Reasons = s, id, reasons
		return r
	}
	// The case: a baseline run the generator could not hold, p99
	// 5,439 ms; compared with it, the candidate's p99 looked "-99%".
	base := []*pipebench.Result{
		with(run("1", 1000, 40), pipebench.StatusCompleted, "b1"),
		with(run("1", 400, 5439), pipebench.StatusInvalid, "b2", "phase load: the generator started 40.0% of planned items"),
		with(run("1", 1000, 41), pipebench.StatusFailed, "b3"),
		with(run("1", 1000, 39), pipebench.StatusPassed, "b4"),
	}
	cand := []*pipebench.Result{
		with(run("2", 1000, 40), pipebench.StatusPassed, "c1"),
		with(run("2", 1000, 41), pipebench.StatusPassed, "c2"),
		with(run("2", 300, 90), pipebench.StatusAborted, "c3", "stopped by a signal after 0 of 1 phases"),
		with(run("2", 300, 90), pipebench.StatusRunning, "c4"),
		with(run("2", 1000, 40), pipebench.StatusPassed, "c5"),
	}
	rep := diff(t, base, cand, Options{Tolerance: 0.05})
	if rep.Usable != [2]int{3, 3} || len(rep.Excluded) != 3 {
		t.Fatalf("usable %v, excluded %+v", rep.Usable, rep.Excluded)
	}
	v := find(t, rep, "latency.p99")
	if v.Baseline != 40 || v.Judgement == Improved || v.Change > 0.01 {
		t.Errorf("p99 judged with an invalid run: %+v", v)
	}
	notes := strings.Join(rep.Notes(), "\n")
	for _, want := range []string{"left out of the comparison: 3 run(s)", "1 invalid, 1 aborted, 1 running",
		"1 single, run b2: invalid: phase load: the generator started 40.0%", "run c3: aborted: stopped by a signal", "run c4: running: running"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// A KPI whose runs spread more than MaxCV and whose interval cannot decide
// is named erratic and does not fail the gate; a change whose whole
// interval lies beyond the tolerance counts however erratic the runs.
func TestErraticKPIs(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1000, 30), run("1", 1000, 5)}
	cand := []*pipebench.Result{run("2", 1000, 80), run("2", 1000, 20), run("2", 1000, 60)}
	rep := diff(t, base, cand, Options{Tolerance: 0.1})
	v := find(t, rep, "latency.p99")
	if v.Judgement != Erratic || !strings.Contains(v.Reason, "CV 0.8") || len(rep.Regressions()) != 0 || v.FormatInterval() == "" {
		t.Fatalf("erratic p99: %+v", v)
	}
	if notes := strings.Join(rep.Notes(), "\n"); !strings.Contains(notes, "too erratic to judge") || !strings.Contains(notes, "latency.p99 (single / load)") {
		t.Errorf("notes: %s", notes)
	}
	if u := rep.Undecided(); u != "1 erratic" {
		t.Errorf("undecided: %q", u)
	}
	// A higher bound calls it unclear.
	rep = diff(t, base, cand, Options{Tolerance: 0.1, MaxCV: 2})
	if v := find(t, rep, "latency.p99"); v.Judgement != Unclear {
		t.Errorf("MaxCV 2: %+v", v)
	}
	// Seventy times slower: erratic runs, but the whole interval lies
	// beyond the tolerance.
	cand = []*pipebench.Result{run("2", 1000, 1000), run("2", 1000, 1100), run("2", 1000, 1050)}
	rep = diff(t, base, cand, Options{Tolerance: 0.1})
	if v := find(t, rep, "latency.p99"); v.Judgement != Regressed || !strings.Contains(v.Reason, "spread widely (CV 0.8") {
		t.Errorf("70x: %+v", v)
	}
}

// Loss from none: every baseline run lost 0. With three runs a side losing
// in every candidate run is beyond chance; with two it cannot be.
func TestChangeFromZero(t *testing.T) {
	lost := func(v string, n float64) *pipebench.Result {
		r := run(v, 1000, 10)
		r.Phases[0].KPIs = append(r.Phases[0].KPIs, pipebench.KPI{Name: "lost", Value: n})
		return r
	}
	rep := diff(t, []*pipebench.Result{lost("1", 0), lost("1", 0), lost("1", 0)}, []*pipebench.Result{lost("2", 50), lost("2", 60), lost("2", 55)}, Options{})
	if v := find(t, rep, "lost"); v.Judgement != Regressed || v.FormatChange() != "new" {
		t.Errorf("3/3: %+v", v)
	}
	rep = diff(t, []*pipebench.Result{lost("1", 0), lost("1", 0)}, []*pipebench.Result{lost("2", 50), lost("2", 55)}, Options{})
	if v := find(t, rep, "lost"); v.Judgement != Unclear || !strings.Contains(v.Reason, "beyond chance") {
		t.Errorf("2/2: %+v", v)
	}
	rep = diff(t, []*pipebench.Result{lost("1", 0), lost("1", 0)}, []*pipebench.Result{lost("2", 0), lost("2", 0)}, Options{})
	if v := find(t, rep, "lost"); v.Judgement != Same {
		t.Errorf("0 and 0: %+v", v)
	}
}

// The same runs give the same intervals, in any order: the bootstrap has
// a fixed seed.
func TestIntervalsAreReproducible(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1010, 10.5), run("1", 990, 9.5), run("1", 1003, 9.9)}
	cand := []*pipebench.Result{run("2", 1000, 11), run("2", 995, 10.2), run("2", 1005, 10.8)}
	a := diff(t, base, cand, Options{})
	rev := []*pipebench.Result{base[3], base[1], base[0], base[2]}
	b := diff(t, rev, []*pipebench.Result{cand[2], cand[0], cand[1]}, Options{})
	for i := range a.Verdicts {
		if a.Verdicts[i].Low != b.Verdicts[i].Low || a.Verdicts[i].High != b.Verdicts[i].High || a.Verdicts[i].Judgement != b.Verdicts[i].Judgement {
			t.Errorf("%s: %+v != %+v", a.Verdicts[i].KPI, a.Verdicts[i], b.Verdicts[i])
		}
	}
}

// Options that would make the interval meaningless are refused: a NaN
// tolerance passes every comparison.
func TestBadOptionsAreRefused(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1001, 10)}
	cand := []*pipebench.Result{run("2", 1000, 182), run("2", 1001, 182)}
	for _, o := range []Options{
		{Tolerance: math.NaN()}, {Tolerance: math.Inf(1)}, {Tolerance: -0.1},
		{Confidence: math.NaN()}, {Confidence: 1}, {Confidence: 1.5}, {Confidence: -0.5},
		{MaxCV: math.NaN()}, {MaxCV: -1}, {Resamples: -1}, {Measures: []Measure{{}}},
	} {
		if rep, err := Diff(base, cand, o); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
			t.Errorf("%+v: accepted (%v, %v)", o, rep, err)
		}
	}
}

// Measures choose the KPIs, their phase (or the total row) and their
// reduction, as a table's columns do.
func TestMeasures(t *testing.T) {
	blast := func(v string, ttc, peak, rate float64) *pipebench.Result {
		r := &pipebench.Result{Manifest: pipebench.Manifest{Version: v, Case: "50%", Status: pipebench.StatusPassed},
			Phases: []pipebench.PhaseResult{{Name: "blast", KPIs: []pipebench.KPI{
				{Name: "sent", Value: 750}, {Name: "time_to_complete", Value: ttc}, {Name: "peak_backlog", Value: peak}, {Name: "completion_rate", Value: rate},
				{Name: "errors", Labels: map[string]string{"class": "refused"}, Value: 3}, {Name: "errors", Labels: map[string]string{"class": "timeout"}, Value: 4},
			}}}}
		r.Total = &pipebench.PhaseResult{Name: "total", KPIs: []pipebench.KPI{{Name: "delivered", Value: 750}}}
		return r
	}
	base := []*pipebench.Result{blast("1", 10, 300, 75), blast("1", 10.2, 310, 73.5), blast("1", 9.9, 295, 75.8)}
	cand := []*pipebench.Result{blast("2", 15, 450, 50), blast("2", 15.3, 460, 49), blast("2", 14.8, 440, 50.7)}
	ms := []Measure{{KPI: "sent"}, {KPI: "time_to_complete", Phase: "blast"}, {KPI: "peak_backlog"}, {KPI: "completion_rate"},
		{KPI: "errors", Reduce: ReduceMax}, {KPI: "delivered", Phase: Total}}
	rep := diff(t, base, cand, Options{Measures: ms, Tolerance: 0.1})
	want := map[string]Judgement{"sent": Same, "time_to_complete": Regressed, "peak_backlog": Regressed, "completion_rate": Regressed, "errors": Same, "delivered": Same}
	if len(rep.Verdicts) != len(want) {
		t.Fatalf("verdicts: %+v", rep.Verdicts)
	}
	for _, v := range rep.Verdicts {
		if v.Judgement != want[v.KPI] {
			t.Errorf("%s: %s, want %s: %+v", v.KPI, v.Judgement, want[v.KPI], v)
		}
	}
	if v := find(t, rep, "errors"); v.Baseline != 4 {
		t.Errorf("errors reduced by max: %+v", v)
	}
	if v := find(t, rep, "delivered"); v.Phase != Total {
		t.Errorf("delivered from the total: %+v", v)
	}
}

func TestHigherIsWorse(t *testing.T) {
	for kpi, want := range map[string]bool{"latency.p99": true, "lost": true, "time_to_complete": true, "peak_backlog": true,
		"sent_rate": false, "completion_rate": false, "sent": false, "delivered": false, "receiver_refused_rate": true,
		"exporter_failed_rate": true, "memory_mb": true, "effect_latency_ms.p99": true} {
		if got := HigherIsWorse(kpi); got != want {
			t.Errorf("%s: %v", kpi, got)
		}
	}
}

func TestDistributions(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{{0.95, 1, 6.3138}, {0.95, 2, 2.9200}, {0.95, 10, 1.8125}, {0.975, 5, 2.5706}, {0.995, 1, 63.657}, {0.95, 1e9, 1.6449}} {
		if got := studentQuantile(c.p, c.df); math.Abs(got-c.want) > 1e-3*c.want {
			t.Errorf("t(%v, %v) = %v, want %v", c.p, c.df, got, c.want)
		}
	}
	if p := separationP(3, 3); math.Abs(p-0.05) > 1e-12 {
		t.Errorf("separation 3/3: %v", p)
	}
}
