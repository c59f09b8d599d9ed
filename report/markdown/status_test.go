package markdown

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

func run(kase string, status pipebench.Status, secs float64, kpis ...pipebench.KPI) *pipebench.Result {
	t0 := time.Unix(1000, 0)
	ph := pipebench.PhaseResult{Name: "load", Started: t0, Ended: t0.Add(time.Duration(secs * float64(time.Second))), KPIs: kpis}
	return &pipebench.Result{Manifest: pipebench.Manifest{Case: kase, Status: status, Started: t0, Ended: ph.Ended},
		Phases: []pipebench.PhaseResult{ph}, Total: &ph}
}

// The status words against the baseline, "≥ BOUND" for a quantile beyond
// the last bucket, a unit conversion, a missing KPI's text and the time
// the load ran, in a table of runs; an invalid run keeps its status word
// and its numbers are struck out.
func TestStatusWordsCappedQuantilesAndMissingCells(t *testing.T) {
	p75 := func(v float64) pipebench.KPI {
		return pipebench.KPI{Name: "api_seconds.p75", Value: v, Unit: pipebench.UnitSeconds}
	}
	capped := []pipebench.KPI{{Name: "api_seconds.p99", Value: 60, Unit: pipebench.UnitSeconds}, {Name: "api_seconds.p99.ge", Value: 60, Unit: pipebench.UnitSeconds}}
	invalid := run("Extended", pipebench.StatusInvalid, 300, p75(9))
	invalid.Manifest.Reasons = []string{"database restarted 2 time(s) during the run (first seen 31s into it): the numbers do not describe one steady system"}
	runs := []*pipebench.Result{
		run("Baseline", pipebench.StatusCompleted, 60, append([]pipebench.KPI{p75(0.02), {Name: "inserts_rate", Value: 2, Unit: pipebench.UnitPerSecond}}, capped...)...),
		run("Moderate", pipebench.StatusCompleted, 180, p75(0.093)),
		run("High", pipebench.StatusCompleted, 180, p75(0.35)),
		run("Extreme", pipebench.StatusCompleted, 180, p75(0.482)),
		invalid,
	}
	o := Options{Layout: LayoutRuns, Columns: []Column{
		{Header: "Test", KPI: "@case"},
		{Header: "Ran", KPI: LoadValue},
		{Header: "P75 (ms)", KPI: "api_seconds.p75", Unit: "ms"},
		{Header: "P99 (ms)", KPI: "api_seconds.p99", Unit: "ms", Missing: "no API server"},
		{Header: "Inserts (ops/min)", KPI: "inserts_rate", Unit: "/min", Missing: "-"},
		{Header: "Status", KPI: StatusValue},
	}, Status: &Status{Baseline: "Baseline", KPI: "api_seconds.p75", Phase: "load", Otherwise: "Stable", Invalid: "Test invalid",
		Rules: []StatusRule{{Word: "Degraded", Above: 20}, {Word: "Slower", Above: 10}}}}
	var b bytes.Buffer
	if err := Render(&b, BuildRuns(runs, o)); err != nil {
		t.Fatal(err)
	}
	want := `| Test | Ran | P75 (ms) | P99 (ms) | Inserts (ops/min) | Status |
| ---: | :---: | :---: | :---: | :---: | :---: |
| Baseline | 1 min | 20 | ≥ 60 s | 120 | Baseline |
| Moderate | 3 min | 93 | no API server | - | Stable |
| High | 3 min | 350 | no API server | - | Slower (18x) |
| Extreme | 3 min | 482 | no API server | - | Degraded (24x) |
| Extended INVALID[^1] | 5 min | ~~9000~~ | ~~no API server~~ | ~~-~~ | Test invalid (database restarted 2 time(s) during the run (first seen 31s into it)) |

[^1]: Extended INVALID: database restarted 2 time(s) during the run (first seen 31s into it): the numbers do not describe one steady system. Its numbers do not describe the system under test: struck out here, left out of compare and gate.
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A run's stage breakdown: each stage from its series, its share of the
// blast's time to complete, in the scenario's order.
func TestStageBreakdown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	lbl := func(name, mode, order string) map[string]string {
		return map[string]string{"stage": name, "mode": mode, "order": order}
	}
	r := &pipebench.Result{Manifest: pipebench.Manifest{Case: "50%"},
		Phases: []pipebench.PhaseResult{{Name: "blast", Started: at(0), Ended: at(20),
			KPIs: []pipebench.KPI{{Name: "sent", Value: 750}, {Name: "time_to_complete", Value: 300}}}},
		Series: []pipebench.Series{
			{Name: "stage_phase", Labels: map[string]string{"stage": "Sending [A]->[B]", "mode": "parallel", "order": "0", "phase": "blast"}, Points: []pipebench.TimeValue{{T: at(0), V: 1}}},
			{Name: "stage_seconds", Labels: lbl("FQM [D]->[E]", "sequential", "2"), Points: []pipebench.TimeValue{{T: at(0), V: 10}, {T: at(100), V: 100}, {T: at(300), V: 287.5}}},
			{Name: "stage_events", Labels: lbl("FQM [D]->[E]", "sequential", "2"), Points: []pipebench.TimeValue{{T: at(0), V: 0}, {T: at(300), V: 750}}},
			{Name: "stage_queue", Labels: lbl("FQM [D]->[E]", "sequential", "2"), Points: []pipebench.TimeValue{{T: at(0), V: 0}, {T: at(20), V: 688}, {T: at(300), V: 0}}},
			{Name: "stage_seconds", Labels: lbl("Store [D]", "parallel", "1"), Points: []pipebench.TimeValue{{T: at(0), V: 0}, {T: at(300), V: 3.75}}},
			{Name: "stage_events", Labels: lbl("Store [D]", "parallel", "1"), Points: []pipebench.TimeValue{{T: at(0), V: 0}, {T: at(300), V: 750}}},
		}}
	var b bytes.Buffer
	if err := RenderStages(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Where the time goes (50%: 300 s end to end)",
		"| Sending [A]->[B] | 27 ms | 750 | 20 s | 7% (overlapped) | - | in parallel: masked by the others |",
		"| Store [D] | 5.0 ms | 750 | 3.8 s | 1% (overlapped) | - | in parallel: masked by the others |",
		"| FQM [D]->[E] | 370 ms | 750 | 278 s | 92% | 688 | in sequence: adds up in the total |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Index(b.String(), "Sending") > strings.Index(b.String(), "Store [D]") {
		t.Errorf("stages out of the scenario's order:\n%s", b.String())
	}
}

// A case that ended with work left by its ledger is not stable: its word
// says how much is left and where; a rule that names it worse keeps its
// word and says the same.
func TestStatusWordsWorkLeft(t *testing.T) {
	p75 := func(v float64) pipebench.KPI {
		return pipebench.KPI{Name: "api_seconds.p75", Value: v, Unit: pipebench.UnitSeconds}
	}
	left := func(r *pipebench.Result) *pipebench.Result {
		r.Total.Set(pipebench.KPI{Name: "pending_at_end", Value: 7500, Unit: pipebench.UnitCount})
		r.Total.Set(pipebench.KPI{Name: "held_at_end_where", Labels: map[string]string{"where": "store (stored, not yet cordoned)"}, Value: 7500})
		return r
	}
	runs := []*pipebench.Result{
		run("Baseline", pipebench.StatusCompleted, 60, p75(0.02)),
		left(run("Heavy", pipebench.StatusCompleted, 60, p75(0.03))),
		left(run("Extreme", pipebench.StatusCompleted, 60, p75(0.5))),
		run("Light", pipebench.StatusCompleted, 60, p75(0.02), pipebench.KPI{Name: "pending_at_end", Value: 0}),
	}
	o := Options{Layout: LayoutRuns, Columns: []Column{{Header: "Test", KPI: "@case"}, {Header: "Status", KPI: StatusValue}},
		Status: &Status{Baseline: "Baseline", KPI: "api_seconds.p75", Otherwise: "Stable", Invalid: "Test invalid", Rules: []StatusRule{{Word: "Degraded", Above: 20}}}}
	var b bytes.Buffer
	if err := Render(&b, BuildRuns(runs, o)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Heavy | Work left (7,500 pending at end (store (stored, not yet cordoned))) |",
		"| Extreme | Degraded (25x; 7,500 pending at end (store (stored, not yet cordoned))) |",
		"| Light | Stable |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
