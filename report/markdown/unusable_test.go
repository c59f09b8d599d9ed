package markdown

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
)

func render(t *testing.T, g *Grid) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// invalid turns a run into the case: a run the generator could not
// hold, whose p99 (5,439 ms) describes pipebench, not the system.
func invalid(r *pipebench.Result) *pipebench.Result {
	r.Manifest.Status = pipebench.StatusInvalid
	r.Manifest.RunID = "run-invalid"
	r.Manifest.Reasons = []string{"phase sustained: the generator started 8,000 of 20,000 planned items (40.0%)"}
	for i := range r.Phases {
		r.Phases[i].Set(pipebench.KPI{Name: "latency.p99", Value: 5439})
	}
	return r
}

// In a versions × cases table, the invalid run's cells are struck out,
// its group starts with INVALID and a footnote reference, and the footnote
// gives the reason; valid cells are untouched.
func TestInvalidCellsAreMarkedInVersionTables(t *testing.T) {
	var results []*pipebench.Result
	for _, v := range []string{"1.0.0", "1.1.0"} {
		for _, c := range []string{"First", "Second"} {
			r := resulttest.Pipeline(v, c, 20000)
			r.Phases = r.Phases[:1]
			r.Manifest.Status = pipebench.StatusPassed
			if v == "1.0.0" && c == "Second" {
				invalid(r)
			}
			results = append(results, r)
		}
	}
	out := render(t, Build(results, Options{Columns: []Column{{Header: "Sent/s", KPI: "sent_rate"}, {Header: "P99", KPI: "latency.p99"}, {Header: "Status", KPI: "@status"}}}))
	want := "| 1.0.0 | 20000 | 4.2 | passed | INVALID[^1] ~~20000~~ | ~~5439~~ | invalid |"
	if !strings.Contains(out, want) {
		t.Errorf("row lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, "| 1.1.0 | 20000 | 4.2 | passed | 20000 | 4.2 | passed |") {
		t.Errorf("valid row changed:\n%s", out)
	}
	note := "[^1]: 1.0.0, Second INVALID (run run-invalid): phase sustained: the generator started 8,000 of 20,000 planned items (40.0%). Its numbers do not describe the system under test"
	if !strings.Contains(out, "\n\n"+note) {
		t.Errorf("footnote lacks %q:\n%s", note, out)
	}
	if strings.Count(out, "[^1]") != 2 || strings.Contains(out, "[^2]") {
		t.Errorf("one run, one footnote:\n%s", out)
	}
}

// In a row-per-run table (a suite's table: rows: run) the row label
// carries the status; run values (@case, @duration) stay as they are.
// Aborted and running runs are marked as invalid ones are, each with its
// own footnote, numbered in the table's order.
func TestUnusableRowsAreMarkedInRunTables(t *testing.T) {
	cols := []Column{{Header: "Scale", KPI: "@case"}, {Header: "Sent/s", KPI: "sent_rate"}, {Header: "P99", KPI: "latency.p99"}, {Header: "Took", KPI: "@duration"}}
	var results []*pipebench.Result
	for i, st := range []pipebench.Status{pipebench.StatusPassed, pipebench.StatusRunning, pipebench.StatusInvalid, pipebench.StatusAborted, pipebench.StatusFailed} {
		r := resulttest.Pipeline("2.0", string(st)+" case", 500)
		r.Manifest.Started = r.Manifest.Started.Add(time.Duration(i) * time.Hour)
		r.Manifest.Ended = r.Manifest.Ended.Add(time.Duration(i) * time.Hour)
		r.Manifest.Status = st
		r.Manifest.RunID = "r" + string(st)
		r.Manifest.Reasons = []string{"because " + string(st)}
		if st == pipebench.StatusInvalid {
			invalid(r)
		}
		tot := r.Phases[0]
		r.Total = &tot
		results = append(results, r)
	}
	out := render(t, BuildRuns(results, Options{Layout: LayoutRuns, Columns: cols}))
	for _, want := range []string{
		"| passed case | 500 | 4.2 | 3 min 20 s |",
		"| running case RUNNING[^1] | ~~500~~ | ~~4.2~~ | 3 min 20 s |",
		"| invalid case INVALID[^2] | ~~500~~ | ~~5439~~ | 3 min 20 s |",
		"| aborted case ABORTED[^3] | ~~500~~ | ~~4.2~~ | 3 min 20 s |",
		"| failed case | 500 | 4.2 | 3 min 20 s |",
		"[^1]: 2.0, running case RUNNING (run rrunning): because running.",
		"[^2]: 2.0, invalid case INVALID (run run-invalid): phase sustained: the generator started",
		"[^3]: 2.0, aborted case ABORTED (run raborted): because aborted.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

// A single invalid run rendered by phase (report --format md): every
// phase row is marked with the one footnote.
func TestInvalidRunByPhase(t *testing.T) {
	r := invalid(resulttest.Pipeline("0.4", "burst", 500))
	var b bytes.Buffer
	if err := New(Options{Layout: LayoutPhases, Columns: []Column{{Header: "P99", KPI: "latency.p99"}}}).Report(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "| sustained INVALID[^1] | ~~5439~~ |") || !strings.Contains(out, "| recovery INVALID[^1] | ~~5439~~ |") || strings.Count(out, "\n[^1]: ") != 1 {
		t.Errorf("phases:\n%s", out)
	}
}

// ShownKPIs lists what a table shows: a blast suite's columns, each from
// its phase; a row-per-run table's from the total; the default columns
// picked from the results.
func TestShownKPIs(t *testing.T) {
	blast := Options{Layout: LayoutRuns, Columns: []Column{
		{Header: "Scale", KPI: "@case"}, {Header: "Time to Complete (s)", KPI: "time_to_complete", Phase: "blast"},
		{Header: "Peak Queue", KPI: "peak_backlog", Phase: "blast"}, {Header: "Avg Rate", KPI: "completion_rate", Phase: "blast"},
		{Header: "Sent", KPI: "sent"}, {Header: "Status", KPI: "@status"},
	}}
	got := ShownKPIs(nil, blast)
	want := []Shown{{"time_to_complete", "blast", AggValue}, {"peak_backlog", "blast", AggValue}, {"completion_rate", "blast", AggValue}, {"sent", TotalRow, AggValue}}
	if len(got) != len(want) {
		t.Fatalf("blast: %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("blast[%d]: %+v, want %+v", i, got[i], want[i])
		}
	}
	ref := ShownKPIs([]*pipebench.Result{resulttest.Pipeline("1", "c", 100)}, Options{})
	if len(ref) != len(Reference) || ref[0].KPI != "receiver_accepted_rate" || ref[0].Phase != "" || ref[3].Agg != AggInstances {
		t.Errorf("reference: %+v", ref)
	}
}
