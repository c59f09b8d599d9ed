package compare

import (
	"testing"

	"github.com/pipebench/pipebench"
)

func run(version string, sent, p99 float64) *pipebench.Result {
	return &pipebench.Result{Manifest: pipebench.Manifest{Version: version, Case: "single"}, Phases: []pipebench.PhaseResult{{Name: "load", KPIs: []pipebench.KPI{
		{Name: "sent_rate", Value: sent}, {Name: "latency.p99", Value: p99},
		{Name: "memory_mb", Labels: map[string]string{"instance": "a"}, Value: 100}, {Name: "memory_mb", Labels: map[string]string{"instance": "b"}, Value: 120},
	}}}}
}

func find(vs []Verdict, kpi string) Verdict {
	for _, v := range vs {
		if v.KPI == kpi {
			return v
		}
	}
	return Verdict{}
}

func TestRepeatedRunsJudgeAgainstNoise(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1010, 10.5), run("1", 990, 9.5)}
	// p99 +40%: far outside ~5% noise x3; sent -1%: inside.
	cand := []*pipebench.Result{run("2", 1000, 14), run("2", 995, 14.2), run("2", 1005, 13.8)}
	vs := Diff(base, cand, Options{})
	if v := find(vs, "latency.p99"); !v.Regressed || v.Reason == "" {
		t.Errorf("p99: %+v", v)
	}
	if v := find(vs, "sent_rate"); v.Regressed || v.Improved || v.Inconclusive {
		t.Errorf("sent_rate within noise flagged: %+v", v)
	}
	if v := find(vs, "memory_mb"); v.Baseline != 120 {
		t.Errorf("memory reduces to the max instance: %+v", v)
	}
	ok, bad := Gate(vs, 0.1)
	if ok || len(bad) != 1 || bad[0].KPI != "latency.p99" {
		t.Errorf("gate: %v %+v", ok, bad)
	}
}

func TestOneRunPerSideSaysSo(t *testing.T) {
	vs := Diff([]*pipebench.Result{run("1", 1000, 10)}, []*pipebench.Result{run("2", 900, 20)}, Options{})
	if v := find(vs, "sent_rate"); !v.Inconclusive || v.Regressed {
		t.Errorf("-10%% with one run each must be inconclusive: %+v", v)
	}
	if v := find(vs, "latency.p99"); !v.Regressed {
		t.Errorf("+100%% must be flagged even with one run: %+v", v)
	}
	// A lower rate is worse; a lower latency is better.
	vs = Diff([]*pipebench.Result{run("1", 1000, 10)}, []*pipebench.Result{run("2", 500, 5)}, Options{})
	if !find(vs, "sent_rate").Regressed || !find(vs, "latency.p99").Improved {
		t.Errorf("directions: %+v", vs)
	}
}

// Two scenarios with a case of the same name are compared each with
// itself, never with the other.
func TestScenariosNeverMix(t *testing.T) {
	in := func(scen string, r *pipebench.Result) *pipebench.Result { r.Manifest.Scenario = scen; return r }
	base := []*pipebench.Result{in("traces", run("1", 1000, 10)), in("traces", run("1", 1000, 10)),
		in("metrics", run("1", 100, 50)), in("metrics", run("1", 100, 50))}
	cand := []*pipebench.Result{in("traces", run("2", 1000, 10)), in("traces", run("2", 1000, 10))}
	vs := Diff(base, cand, Options{})
	for _, v := range vs {
		if v.Scenario != "traces" || v.Baseline != v.Candidate {
			t.Errorf("mixed: %+v", v)
		}
	}
	if ok, bad := Gate(vs, 0.1); !ok {
		t.Errorf("the gate failed on another scenario's runs: %+v", bad)
	}
}

// One run against one run never fails the gate, however large the change:
// the noise is unknown. The verdict says so.
func TestGateNeedsTwoRunsPerSide(t *testing.T) {
	vs := Diff([]*pipebench.Result{run("1", 1000, 10)}, []*pipebench.Result{run("2", 500, 30)}, Options{})
	ok, bad := Gate(vs, 0.1)
	if !ok || len(bad) != 0 {
		t.Errorf("one run each failed the gate: %+v", bad)
	}
	for _, v := range vs {
		if !v.TooFew() {
			t.Errorf("%s: not marked too few: %+v", v.KPI, v)
		}
	}
	// Two against two judges.
	vs = Diff([]*pipebench.Result{run("1", 1000, 10), run("1", 1001, 10)}, []*pipebench.Result{run("2", 500, 30), run("2", 501, 30)}, Options{})
	if ok, _ := Gate(vs, 0.1); ok {
		t.Errorf("two runs each: a halved rate passed the gate")
	}
}
