package kpi

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Three pipelines each deliver a copy of every item: no duplicates; a
// copy delivered twice by one pipeline is a duplicate of that pipeline
// alone; items one pipeline never delivered are its loss, and the totals'.
func TestArrivalsPerPipeline(t *testing.T) {
	a := runningPhase(100)
	now := time.Now()
	p1, p2, p3 := a.Pipeline("p1"), a.Pipeline("p2"), a.Pipeline("p3")
	for seq := uint64(0); seq < 100; seq++ {
		p1.Arrive(seq, now.Add(-time.Millisecond), now)
		p3.Arrive(seq, now.Add(-time.Millisecond), now)
		if seq < 70 {
			p2.Arrive(seq, now.Add(-time.Millisecond), now)
		}
	}
	p3.Arrive(5, now, now) // a true duplicate
	p2.Faulted(30)
	if got := a.Outstanding(); got != 30 {
		t.Errorf("outstanding %d, want the 30 copies p2 lacks", got)
	}
	if a.Pipeline("p1") != p1 {
		t.Error("Pipeline made a second recorder for p1")
	}
	st := a.Stats(0, 100)
	if st.Delivered != 100 || st.Own != 100 || st.Duplicates != 1 || st.Lost != 30 {
		t.Errorf("totals: delivered %d own %d duplicates %d lost %d, want 100 100 1 30", st.Delivered, st.Own, st.Duplicates, st.Lost)
	}
	want := map[string][3]uint64{"p1": {100, 0, 0}, "p2": {70, 0, 30}, "p3": {100, 1, 0}}
	for name, w := range want {
		ps := st.Pipelines[name]
		if ps.Delivered != w[0] || ps.Duplicates != w[1] || ps.Lost != w[2] {
			t.Errorf("%s: delivered %d duplicates %d lost %d, want %v", name, ps.Delivered, ps.Duplicates, ps.Lost, w)
		}
	}
	if f := st.Pipelines["p2"].Faulted; f != 30 {
		t.Errorf("p2 faulted %d, want 30", f)
	}
	if f, _ := a.Totals(); f != 30 {
		t.Errorf("total faulted %d, want 30", f)
	}
	ks := PipelineKPIs(st.Pipelines, 1)
	if len(ks) != 3*7 {
		t.Fatalf("%d pipeline KPIs, want 21: %v", len(ks), ks)
	}
	if k := ks[0]; k.Name != "pipeline_delivered_rate" || k.Labels["pipeline"] != "p1" || k.Value != 100 {
		t.Errorf("first KPI %+v", k)
	}
	run := a.RunStats(1, 0, 100)
	if run.Lost != 30 || run.Pipelines["p2"].Lost != 30 || run.Pipelines["p1"].Delivered != 100 {
		t.Errorf("run stats: lost %d, p2 lost %d, p1 delivered %d", run.Lost, run.Pipelines["p2"].Lost, run.Pipelines["p1"].Delivered)
	}
}

func TestArrivalsPipelinesBounded(t *testing.T) {
	a := NewArrivals(1, nil)
	for i := 0; i < MaxPipelines; i++ {
		if a.Pipeline(string(rune('a'+i%26))+string(rune('0'+i/26))) == nil {
			t.Fatalf("pipeline %d refused", i)
		}
	}
	if a.Pipeline("one-too-many") != nil {
		t.Error("more than MaxPipelines pipelines were made")
	}
}

// With pipelines, the summary says loss and duplicates are copies and
// names the pipelines that had them.
func TestSummaryNamesPipelines(t *testing.T) {
	tot := pipebench.PhaseResult{Name: "total", KPIs: []pipebench.KPI{
		{Name: "accepted", Value: 3000}, {Name: "lost", Value: 2700}, {Name: "duplicates", Value: 4},
		{Name: "pipeline_lost", Labels: map[string]string{"pipeline": "p1"}, Value: 0},
		{Name: "pipeline_lost", Labels: map[string]string{"pipeline": "p2"}, Value: 2700},
		{Name: "pipeline_duplicates", Labels: map[string]string{"pipeline": "p3"}, Value: 4},
	}}
	got := strings.Join(Summary(&pipebench.Result{Total: &tot}), "\n")
	for _, want := range []string{"2,700 copies of the 3,000 accepted items never arrived at the sink (lost), by pipeline: p2 2,700",
		"4 items arrived more than once through the same pipeline (duplicates), by pipeline: p3 4"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
}

// What each pipeline delivers after the last phase is the drain's, kept
// apart from the phase's, so the drain row has per-pipeline cells.
func TestPipelinesDuringDrain(t *testing.T) {
	a := runningPhase(10)
	now := time.Now()
	p1, p2 := a.Pipeline("p1"), a.Pipeline("p2")
	for seq := uint64(0); seq < 10; seq++ {
		p1.Arrive(seq, now, now)
	}
	p2.Arrive(0, now, now)
	a.SetRunning(1) // the drain
	for seq := uint64(1); seq < 10; seq++ {
		p2.Arrive(seq, now, now)
	}
	p2.Faulted(2)
	drain := a.PipelinesDuring(1)
	if d := drain["p1"].Delivered; d != 0 {
		t.Errorf("p1 delivered %d during the drain, want 0", d)
	}
	if d, f := drain["p2"].Delivered, drain["p2"].Faulted; d != 9 || f != 2 {
		t.Errorf("p2 during the drain: delivered %d faulted %d, want 9 2", d, f)
	}
	if d := a.PipelinesDuring(0)["p2"].Delivered; d != 1 {
		t.Errorf("p2 delivered %d during the phase, want 1", d)
	}
	if NewArrivals(1, nil).PipelinesDuring(1) != nil {
		t.Error("no pipelines told apart: want nil")
	}
}

// runningPhase is the Arrivals of one phase under way whose first n
// sends (sequence numbers 0 to n-1) were accepted.
func runningPhase(n int) *Arrivals {
	a := NewArrivals(1, nil)
	a.StartPhase(0, 0)
	a.SetRunning(0)
	a.Accept(0, n)
	return a
}
