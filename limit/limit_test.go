package limit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/limit"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/runner"
	httpsink "github.com/pipebench/pipebench/sink/http"
)

func registry(t *testing.T) *pipebench.Registry {
	return scenariotest.Registry(t, payload.EventFactory(), httpdriver.Factory(), httpsink.Factory())
}

func plan(t *testing.T, reg *pipebench.Registry, yaml string) pipebench.Plan {
	t.Helper()
	return scenariotest.Plan(t, reg, "limit.yaml", yaml)
}

// sinkPlan is the plan of scenario name: events of 64 bytes sent over
// connections HTTP connections to the sink alone, with the scenario's
// other keys (its phases...) in rest.
func sinkPlan(t *testing.T, reg *pipebench.Registry, name string, connections int, rest string) pipebench.Plan {
	t.Helper()
	return plan(t, reg, fmt.Sprintf(`name: %s
target: {driver: http, connections: %d}
workload: {generator: event, size: 64}
sink: {type: http}`, name, connections)+rest)
}

// limitedSink is the plan of the searches against the sink's own limit:
// one phase, load, of duration at 500/s over 16 connections, under the
// fault policy faults (the limit), then a 2-second drain.
func limitedSink(t *testing.T, reg *pipebench.Registry, name, duration, faults string) pipebench.Plan {
	t.Helper()
	return sinkPlan(t, reg, name, 16, fmt.Sprintf(`
drain: 2s
phases:
  - name: load
    duration: %s
    rate: 500/s
    faults: %s
`, duration, faults))
}

func runWith(reg *pipebench.Registry) limit.RunFunc {
	return func(ctx context.Context, p pipebench.Plan) (*pipebench.Result, error) {
		return runner.Run(ctx, runner.Params{Plan: p, Registry: reg})
	}
}

// The sink alone, limited to 1,000 requests/s with a 100 ms bucket (a
// sharp capacity, as a gateway's): the search finds it within 5%. A 1%
// tolerance and 4-second probes keep a loaded machine's scheduling stalls
// (sends bunched after a late wake-up) from reading as refusals, while
// 5% over the limit still refuses about 2.4% of a probe.
func TestSearchFindsTheSinksRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a search of about ten 2-second probes")
	}
	reg := registry(t)
	p := limitedSink(t, reg, "limit-sink", "2s", "{rate_limit: 1000/s, rate_limit_burst: 100ms}")
	var lines []string
	ans, err := limit.Search(context.Background(), limit.Params{
		Plan: p, Run: runWith(reg), Start: 750, Probe: 4 * time.Second, Precision: 0.05, Tolerance: 0.01, Budget: 3 * time.Minute,
		Progress: func(pr limit.Probe, br limit.Bracket) {
			lines = append(lines, pipebench.FormatCount(float64(pr.Rate))+" stable="+map[bool]string{true: "yes", false: "no: " + pr.Why}[pr.Stable])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probes:\n%s", strings.Join(lines, "\n"))
	if ans.Stopped != "precision" {
		t.Errorf("stopped by %s", ans.Stopped)
	}
	if ans.Sustainable < 950 || ans.Sustainable > 1050 {
		t.Errorf("sustainable %v/s, want 1,000/s ± 5%%", ans.Sustainable)
	}
	if ans.FirstUnstable <= ans.Sustainable || !strings.Contains(ans.FailedBecause, "refused") {
		t.Errorf("first unstable %v (%s)", ans.FirstUnstable, ans.FailedBecause)
	}
	res := ans.Result(p, 0, time.Now(), nil)
	if v, _ := res.Total.Get("sustainable_rate"); v != ans.Sustainable || len(res.Phases) != len(ans.Probes) {
		t.Errorf("result: %v, %d phases for %d probes", v, len(res.Phases), len(ans.Probes))
	}
	// The charts of the search: the target rate over time holds each
	// probe's rate in turn.
	rates := map[float64]bool{}
	for _, s := range res.Series {
		if s.Name == "target_rate" {
			for _, p := range s.Points {
				rates[p.V] = true
			}
		}
	}
	for _, p := range ans.Probes {
		if !rates[float64(p.Rate)] {
			t.Errorf("the target_rate series lacks probe %v/s: %v", p.Rate, rates)
		}
	}
}

// The longest burst at 1,500/s that a 1,000/s limit with a 1-second bucket
// absorbs is about 2 s (the bucket's 1,000 plus 1,000/s refilled, against
// 1,500/s).
func TestSearchBurstTolerance(t *testing.T) {
	if testing.Short() {
		t.Skip("a search of several probes")
	}
	reg := registry(t)
	p := limitedSink(t, reg, "burst-sink", "1s", "{rate_limit: 1000/s}")
	ans, err := limit.Search(context.Background(), limit.Params{
		Plan: p, Run: runWith(reg), Burst: 1500, Probe: 500 * time.Millisecond, Precision: 0.1, Budget: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Sustainable < 1.6 || ans.Sustainable > 2.2 {
		t.Errorf("burst tolerance %v s, want about 2 s (probes %d, stopped %s, %s)", ans.Sustainable, len(ans.Probes), ans.Stopped, ans.FailedBecause)
	}
}

// Judge: pipebench's own limit (a generator_limit detection, from the
// run's validity) is its ceiling, never the system's limit; items the
// system held back (max_in_flight answers outstanding) are the system's
// limit: a valid run, unstable.
func TestJudgeTellsTheCeilingApart(t *testing.T) {
	res := &pipebench.Result{Manifest: pipebench.Manifest{Status: pipebench.StatusInvalid,
		Reasons: []string{"phase probe: pipebench could not keep up: it did not make 90 of 100 planned items"}},
		Detections: []pipebench.Detection{{Detector: kpi.DetectGeneratorLimit, Phase: "probe", Message: "pipebench's own limit: it did not make 90 of 100 planned items"}}}
	if pr := limit.Judge(res, 0.001); !pr.Ceiling || pr.Stable || !strings.Contains(pr.Why, "pipebench's own limit") {
		t.Errorf("pipebench's shortfall: %+v", pr)
	}
	held := pipebench.PhaseResult{Name: "probe"}
	held.Set(pipebench.KPI{Name: "sent", Value: 10})
	held.Set(pipebench.KPI{Name: "held_back", Value: 90})
	held.Set(pipebench.KPI{Name: "held_back", Value: 90, Labels: map[string]string{"reason": kpi.HeldMaxInFlight}})
	res = &pipebench.Result{Manifest: pipebench.Manifest{Status: pipebench.StatusCompleted}, Phases: []pipebench.PhaseResult{held}, Total: &held}
	if pr := limit.Judge(res, 0.001); pr.Ceiling || pr.Stable || !strings.Contains(pr.Why, "90 items held back by the system under test (max_in_flight") {
		t.Errorf("held back by the system: %+v", pr)
	}
	// An invalid probe for any other reason (nothing reached the target)
	// is neither.
	res = &pipebench.Result{Manifest: pipebench.Manifest{Status: pipebench.StatusInvalid, Reasons: []string{"nothing reached the system under test"}}}
	if pr := limit.Judge(res, 0.001); pr.Ceiling || pr.Stable {
		t.Errorf("nothing reached: %+v", pr)
	}
}

// A system that never saturates within the generator's reach: the search
// stops at the ceiling and says it is pipebench's, not the system's.
func TestSearchStopsAtTheGeneratorsCeiling(t *testing.T) {
	p := pipebench.Plan{Scenario: "x", Phases: []pipebench.PlanPhase{{Name: "p", Duration: pipebench.Duration(time.Second), BatchSize: 1, MaxInFlight: 10,
		Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 100}}}}
	// A generator that holds up to 1,000/s: above it, the runner would
	// mark the probe invalid for its shortfall.
	run := func(_ context.Context, pl pipebench.Plan) (*pipebench.Result, error) {
		rate := pl.Phases[0].Profile.Rate
		res := &pipebench.Result{Manifest: pipebench.Manifest{Status: pipebench.StatusCompleted}}
		ph := pipebench.PhaseResult{Name: pl.Phases[0].Name}
		sent := float64(rate)
		if rate > 1000 {
			res.Manifest.Status = pipebench.StatusInvalid
			res.Manifest.Reasons = []string{"phase probe: pipebench could not keep up"}
			res.Detections = []pipebench.Detection{{Detector: kpi.DetectGeneratorLimit, Phase: "probe", Message: "pipebench's own limit: pipebench could not keep up"}}
			sent = 1000
		}
		ph.Set(pipebench.KPI{Name: "sent", Value: sent})
		ph.Set(pipebench.KPI{Name: "sent_rate", Value: sent})
		res.Phases = []pipebench.PhaseResult{ph}
		res.Total = &ph
		return res, nil
	}
	ans, err := limit.Search(context.Background(), limit.Params{Plan: p, Run: run, Probe: 3 * time.Second, Start: 100})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Stopped != "ceiling" || ans.Sustainable != 800 {
		t.Errorf("stopped %s at %v, want the ceiling after 800/s", ans.Stopped, ans.Sustainable)
	}
	if w := strings.Join(ans.Words(0), " "); !strings.Contains(w, "at least 800/s") || !strings.Contains(w, "pipebench's own ceiling here is 1,000/s (it sent that much of the 1,600/s probe)") || !strings.Contains(w, "shards") {
		t.Errorf("words: %s", w)
	}
}

// The budget is a hard limit: a search whose probes would go on (a sink
// that takes any rate) stops when the budget is spent, within the abort's
// grace, with the probes so far; a budget that cannot hold one probe is
// refused before anything runs.
func TestBudgetIsAHardLimit(t *testing.T) {
	reg := registry(t)
	p := sinkPlan(t, reg, "limit-budget", 4, `
interval: 500ms
drain: 1s
phases:
  - {name: load, duration: 2s, rate: 100/s}
`)
	if _, err := limit.Search(context.Background(), limit.Params{Plan: p, Run: runWith(reg), Probe: 2 * time.Second, Budget: 2 * time.Second}); pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Fatalf("a 2 s budget for 2 s probes with a 1 s drain: %v, want a usage error", err)
	}
	// A probe is observed at least six times, at intervals of 100 ms at
	// the least: one under 300 ms cannot hold three readings.
	if _, err := limit.Search(context.Background(), limit.Params{Plan: p, Run: runWith(reg), Probe: 250 * time.Millisecond}); pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Fatalf("a 250 ms probe: %v, want a usage error", err)
	}
	start := time.Now()
	ans, err := limit.Search(context.Background(), limit.Params{Plan: p, Run: runWith(reg), Start: 100, Probe: 2 * time.Second, Budget: 7 * time.Second})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Stopped != "budget" || len(ans.Probes) == 0 {
		t.Fatalf("stopped %q after %d probes", ans.Stopped, len(ans.Probes))
	}
	// The runner's abort grace (5 s) and a second of teardown at most.
	if took > 7*time.Second+6*time.Second {
		t.Errorf("a 7 s budget took %s", took)
	}
	res := ans.Result(p, 0, start, nil)
	if res.Manifest.Status != pipebench.StatusCompleted || !strings.Contains(strings.Join(res.Manifest.Reasons, " "), "budget") {
		t.Errorf("status %s, reasons %v", res.Manifest.Status, res.Manifest.Reasons)
	}
}

// A probe's line: rate or burst, verdict, bracket so far ("?" for a side
// not found yet), budget left (none without a budget).
func TestProbeLine(t *testing.T) {
	pr := limit.Probe{Rate: 4000, Duration: 1500 * time.Millisecond, Why: "loss 2.0%"}
	for _, c := range []struct {
		br    limit.Bracket
		burst bool
		want  string
	}{
		{limit.Bracket{Left: -1}, false, "probe 4,000/s: unstable: loss 2.0%"},
		{limit.Bracket{Stable: 2000, Left: 90 * time.Second}, false, "probe 4,000/s: unstable: loss 2.0%  [bracket 2,000 .. ?]  budget left 1m30s"},
		{limit.Bracket{Stable: 1.2, Unstable: 1.5, Left: -1}, true, "probe 1.5s at 4,000/s: unstable: loss 2.0%  [bracket 1.2s .. 1.5s]"},
	} {
		if got := pr.Line(c.br, c.burst); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
	pr.Stable = true
	if got := pr.Line(limit.Bracket{Left: -1}, false); got != "probe 4,000/s: stable" {
		t.Errorf("stable: %q", got)
	}
}

// A probe whose backlog was read fewer than three times cannot show
// whether it grew: it is not judged stable, and the reason says what to
// change. Three readings that do not grow are stable; three that grow by
// far more than 5% of the rate are not.
func TestJudgeNeedsThreeReadingsOfTheBacklog(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	result := func(backlog ...float64) *pipebench.Result {
		var pts []pipebench.TimeValue
		for i, v := range backlog {
			pts = append(pts, pipebench.TimeValue{T: t0.Add(time.Duration(i+1) * 900 * time.Millisecond), V: v})
		}
		total := &pipebench.PhaseResult{KPIs: []pipebench.KPI{{Name: "sent", Value: 1500}}}
		return &pipebench.Result{
			Manifest: pipebench.Manifest{Status: pipebench.StatusCompleted},
			Phases:   []pipebench.PhaseResult{{Name: "probe", Started: t0, Ended: t0.Add(3 * time.Second)}},
			Total:    total,
			Series:   []pipebench.Series{{Name: "backlog", Points: pts}},
		}
	}
	if pr := limit.Judge(result(0, 100), 0.01); pr.Stable || !strings.Contains(pr.Why, "read 2 times during the probe, too few") {
		t.Errorf("two readings: stable %v, why %q", pr.Stable, pr.Why)
	}
	if pr := limit.Judge(result(5, 5, 5), 0.01); !pr.Stable {
		t.Errorf("three flat readings: not stable: %q", pr.Why)
	}
	if pr := limit.Judge(result(100, 200, 300), 0.01); pr.Stable || !strings.Contains(pr.Why, "backlog growing") {
		t.Errorf("three growing readings: stable %v, why %q", pr.Stable, pr.Why)
	}
}

// Each probe is observed at least every sixth of its length, so that its
// backlog slope rests on about six readings; a scenario's shorter
// interval is kept.
func TestProbesAreObservedSixTimes(t *testing.T) {
	reg := registry(t)
	for _, tc := range []struct {
		interval string
		want     time.Duration
	}{{"", 500 * time.Millisecond}, {"interval: 750ms\n", 500 * time.Millisecond}, {"interval: 300ms\n", 300 * time.Millisecond}} {
		p := sinkPlan(t, reg, "limit-interval", 4, `
`+tc.interval+`drain: 1s
phases:
  - {name: load, duration: 3s, rate: 100/s}
`)
		var got []time.Duration
		run := runWith(reg)
		_, err := limit.Search(context.Background(), limit.Params{Plan: p, Start: 100, Max: 100, Probe: 3 * time.Second, Precision: 0.5, Budget: 30 * time.Second,
			Run: func(ctx context.Context, pl pipebench.Plan) (*pipebench.Result, error) {
				got = append(got, pl.Interval.D())
				return run(ctx, pl)
			}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0] != tc.want {
			t.Errorf("interval %q: the probes ran with %v, want %s", strings.TrimSpace(tc.interval), got, tc.want)
		}
	}
}
