package markdown

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// A table's cells say what their numbers need: a peak of the last phase
// is the drain's when the buffer peaked after the load, marked so; a peak
// of the run's total says when; an empty cell says why; runs of several
// versions get a version column, scaled runs a scale column.
func TestCellsSayPeaksReasonsVersionsAndScale(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mk := func(kase, version string, buffer, drainBuffer float64) *pipebench.Result {
		ph := pipebench.PhaseResult{Name: "load", Started: t0, Ended: t0.Add(2 * time.Minute), KPIs: []pipebench.KPI{{Name: "buffer_kbytes.max", Value: buffer}}}
		drain := pipebench.PhaseResult{Name: "drain", Started: ph.Ended, Ended: ph.Ended.Add(30 * time.Second), KPIs: []pipebench.KPI{{Name: "buffer_kbytes.max", Value: drainBuffer}}}
		total := pipebench.PhaseResult{Name: "total", Started: t0, Ended: drain.Ended, KPIs: []pipebench.KPI{
			{Name: "buffer_kbytes.max", Value: max(buffer, drainBuffer)}, {Name: "buffer_kbytes.max_at", Value: 134, Unit: pipebench.UnitSeconds}}}
		r := &pipebench.Result{Manifest: pipebench.Manifest{Case: kase, Version: version, Status: pipebench.StatusCompleted, Started: t0, Ended: drain.Ended},
			Phases: []pipebench.PhaseResult{ph}, Drain: &drain, Total: &total}
		r.Plan.Phases = []pipebench.PlanPhase{{Name: "load", Duration: pipebench.Duration(2 * time.Minute)}}
		return r
	}
	// Rows per version: the phase's cell, with the drain's peak.
	var b bytes.Buffer
	o := Options{Columns: []Column{{Header: "Buffer", KPI: "buffer_kbytes.max", Agg: AggMax}, {Header: "Lost", KPI: "lost"}}}
	if err := Render(&b, Build([]*pipebench.Result{mk("Multi", "0.162.0", 220300, 248724)}, o)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| 0.162.0 | 248724 (in the drain) | not measured in this run |") {
		t.Errorf("the phase's cell does not take the drain's peak, or the empty cell says nothing:\n%s", b.String())
	}
	// Rows per run: the total's peak and when; two versions; a scaled run.
	scaled := mk("Multi", "0.163.0", 100, 50)
	scaled.Plan.ScaledFrom = pipebench.Duration(20 * time.Minute)
	b.Reset()
	o = Options{Layout: LayoutRuns, Columns: []Column{{Header: "Test", KPI: "@case"}, {Header: "Buffer", KPI: "buffer_kbytes.max", Agg: AggMax}, {Header: "Pending", KPI: "pending_at_end", Phase: "burst"}}}
	if err := Render(&b, BuildRuns([]*pipebench.Result{mk("Single", "0.162.0", 220300, 248724), scaled}, o)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Test | Buffer | Pending | Version | Scale |",
		"| Single | 248724 (at 2m14s, in the drain) | no phase burst in this run | 0.162.0 | as written |",
		"| Multi | 100 (at 2m14s, in the drain) | no phase burst in this run | 0.163.0 | 2m of 20m (x0.1) |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
