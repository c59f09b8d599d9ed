package kpi

import (
	"testing"

	"github.com/pipebench/pipebench"
)

func holder(name string, labels map[string]string, pts ...pipebench.TimeValue) pipebench.Series {
	return pipebench.Series{Name: name, Labels: labels, Kind: pipebench.KindGauge, Points: pts}
}

func phaseLost(name string, lost float64) pipebench.PhaseResult {
	return pipebench.PhaseResult{Name: name, KPIs: []pipebench.KPI{{Name: "lost", Value: lost, Unit: pipebench.UnitCount}}}
}

// What the pipeline holds at the last observation is pending, not lost:
// the sum of the holder series observed then (a series observed no more is
// not counted), at most the lost count, taken from the last phases first.
func TestPendingIsNotLost(t *testing.T) {
	ss := []pipebench.Series{
		holder("consumer_pending", map[string]string{"stream": "S", "consumer": "D"}, reading(1, 9000), reading(9, 4000)),
		holder("ack_pending", map[string]string{"stream": "S", "consumer": "D"}, reading(9, 377)),
		// A consumer that went away before the end holds nothing now.
		holder("consumer_pending", map[string]string{"stream": "S", "consumer": "old"}, reading(5, 500)),
		holder("memory_mb", nil, reading(9, 80)),
	}
	if held, ok := HeldAtEnd(ss, at(9)); !ok || held != 4377 {
		t.Fatalf("held %v %v, want 4,377", held, ok)
	}
	if held, ok := HeldAtEnd(ss, at(2)); !ok || held != 9000 {
		t.Errorf("held at 2 s: %v %v", held, ok)
	}
	if _, ok := HeldAtEnd(ss[3:], at(9)); ok {
		t.Error("no holder series, yet something held")
	}

	for _, c := range []struct {
		name                          string
		phases                        []float64
		wantTotal, wantPending        float64
		wantPhaseLost, wantPhasePends []float64
	}{
		{"all pending", []float64{0, 1000, 3370}, 0, 4370, []float64{0, 0, 0}, []float64{0, 1000, 3370}},
		{"some lost", []float64{100, 2000, 3000}, 723, 4377, []float64{100, 623, 0}, []float64{0, 1377, 3000}},
	} {
		var sum float64
		phases := make([]pipebench.PhaseResult, len(c.phases))
		for i, l := range c.phases {
			phases[i] = phaseLost("p", l)
			sum += l
		}
		total := phaseLost("total", sum)
		applyPending(&total, phases, ss, at(9))
		lost, _ := total.Get("lost")
		pend, _ := total.Get("pending_at_end")
		held, _ := total.Get("held_at_end")
		if lost != c.wantTotal || pend != c.wantPending || held != 4377 {
			t.Errorf("%s: total lost %v pending %v held %v, want %v, %v, 4,377", c.name, lost, pend, held, c.wantTotal, c.wantPending)
		}
		var addLost, addPend float64
		for i := range phases {
			l, _ := phases[i].Get("lost")
			p, _ := phases[i].Get("pending_at_end")
			addLost, addPend = addLost+l, addPend+p
			if l != c.wantPhaseLost[i] || p != c.wantPhasePends[i] {
				t.Errorf("%s: phase %d lost %v pending %v, want %v, %v", c.name, i, l, p, c.wantPhaseLost[i], c.wantPhasePends[i])
			}
		}
		if addLost != lost || addPend != pend {
			t.Errorf("%s: phases add up to lost %v pending %v, the total says %v, %v", c.name, addLost, addPend, lost, pend)
		}
	}

	// Without a sink there is no lost to take pending from.
	noSink := pipebench.PhaseResult{Name: "total"}
	applyPending(&noSink, nil, ss, at(9))
	if len(noSink.KPIs) != 0 {
		t.Errorf("KPIs without a sink: %v", noSink.KPIs)
	}
}

// Shards of one run each took the pipeline's pending off their own lost;
// merged, the pipeline's pending counts once.
func TestMergePending(t *testing.T) {
	shard := func(lost, pending []float64, held float64) *pipebench.Result {
		r := &pipebench.Result{}
		var tl, tp float64
		for i := range lost {
			p := phaseLost("p", lost[i])
			if pending[i] > 0 {
				p.Set(pipebench.KPI{Name: "pending_at_end", Value: pending[i]})
			}
			r.Phases = append(r.Phases, p)
			tl, tp = tl+lost[i], tp+pending[i]
		}
		tot := phaseLost("total", tl)
		tot.Set(pipebench.KPI{Name: "pending_at_end", Value: tp})
		tot.Set(pipebench.KPI{Name: "held_at_end", Value: held})
		r.Total = &tot
		return r
	}
	// The pipeline held 600; each shard's raw lost was 10+400 and 0+500.
	a := shard([]float64{10, 0}, []float64{0, 400}, 600)
	b := shard([]float64{0, 0}, []float64{0, 500}, 600)
	merged := &pipebench.Result{Phases: []pipebench.PhaseResult{phaseLost("p", 10), phaseLost("p", 0)}}
	tot := phaseLost("total", 10)
	merged.Total = &tot
	mergePending([]*pipebench.Result{a, b}, merged)
	lost, _ := merged.Total.Get("lost")
	pend, _ := merged.Total.Get("pending_at_end")
	if lost != 310 || pend != 600 {
		t.Errorf("merged lost %v pending %v, want 310 and 600", lost, pend)
	}
	l0, _ := merged.Phases[0].Get("lost")
	l1, _ := merged.Phases[1].Get("lost")
	p1, _ := merged.Phases[1].Get("pending_at_end")
	if l0 != 10 || l1 != 300 || p1 != 600 {
		t.Errorf("merged phases: lost %v, %v; pending %v", l0, l1, p1)
	}
}

// A collector of several pipelines: what each pipeline's exporter still
// queued when the drain ended is that pipeline's pending, off its own
// lost (the total's and the phases', from the last back); a pipeline that
// lost nothing is left alone.
func TestPipelinePending(t *testing.T) {
	q := func(exporter, instance string, v float64) pipebench.Series {
		return holder("per_exporter_queue_size", map[string]string{"exporter": exporter, "instance": instance}, reading(9, v))
	}
	ss := []pipebench.Series{
		holder("exporter_queue_size", map[string]string{"instance": "collector-0"}, reading(9, 30)),
		q("otlp/p1", "collector-0", 2), q("otlp/p2", "collector-0", 20), q("otlp/p2", "collector-1", 8),
	}
	lost := func(name string, p1, p2, total float64) pipebench.PhaseResult {
		ph := phaseLost(name, total)
		ph.Set(pipebench.KPI{Name: "pipeline_lost", Labels: map[string]string{"pipeline": "p1"}, Value: p1})
		ph.Set(pipebench.KPI{Name: "pipeline_lost", Labels: map[string]string{"pipeline": "p2"}, Value: p2})
		return ph
	}
	phases := []pipebench.PhaseResult{lost("a", 0, 2790, 2790), lost("b", 0, 10, 10)}
	total := lost("total", 0, 2800, 2800)
	applyPending(&total, phases, ss, at(9))
	get := func(ph *pipebench.PhaseResult, name, p string) float64 { v, _ := ph.Get(name, "pipeline", p); return v }
	if l, p := get(&total, "pipeline_lost", "p2"), get(&total, "pipeline_pending_at_end", "p2"); l != 2772 || p != 28 {
		t.Errorf("p2: lost %v pending %v, want 2,772 and 28 (its exporter's queues)", l, p)
	}
	if _, ok := total.Get("pipeline_pending_at_end", "pipeline", "p1"); ok || get(&total, "pipeline_lost", "p1") != 0 {
		t.Error("p1 lost nothing, yet it has a pending count")
	}
	if l, _ := total.Get("lost"); l != 2770 {
		t.Errorf("total lost %v, want 2,770 (30 held in all)", l)
	}
	if l, p := get(&phases[1], "pipeline_lost", "p2"), get(&phases[1], "pipeline_pending_at_end", "p2"); l != 0 || p != 10 {
		t.Errorf("last phase: lost %v pending %v, want 0 and 10", l, p)
	}
	if l, p := get(&phases[0], "pipeline_lost", "p2"), get(&phases[0], "pipeline_pending_at_end", "p2"); l != 2772 || p != 18 {
		t.Errorf("first phase: lost %v pending %v, want 2,772 and 18", l, p)
	}
}

// Shards of one run through one collector of several pipelines: each
// shard took its share of a pipeline's queue off that pipeline's lost;
// merged, the queue counts once, off the pipeline's merged lost (and from
// the last phase back), and a pipeline whose exporter held nothing keeps
// its lost.
func TestMergePipelinePending(t *testing.T) {
	lbl := func(p string) map[string]string { return map[string]string{"pipeline": p} }
	shard := func(p2Lost, p2Pending []float64, p3Lost float64) *pipebench.Result {
		r := &pipebench.Result{}
		var tl, tp float64
		for i := range p2Lost {
			ph := phaseLost("p", p2Lost[i])
			ph.Set(pipebench.KPI{Name: "pipeline_lost", Labels: lbl("p2"), Value: p2Lost[i]})
			if p2Pending[i] > 0 {
				ph.Set(pipebench.KPI{Name: "pipeline_pending_at_end", Labels: lbl("p2"), Value: p2Pending[i]})
				ph.Set(pipebench.KPI{Name: "pending_at_end", Value: p2Pending[i]})
			}
			r.Phases = append(r.Phases, ph)
			tl, tp = tl+p2Lost[i], tp+p2Pending[i]
		}
		tot := phaseLost("total", tl)
		tot.Set(pipebench.KPI{Name: "pipeline_lost", Labels: lbl("p2"), Value: tl})
		tot.Set(pipebench.KPI{Name: "pipeline_pending_at_end", Labels: lbl("p2"), Value: tp})
		tot.Set(pipebench.KPI{Name: "pipeline_lost", Labels: lbl("p3"), Value: p3Lost})
		tot.Set(pipebench.KPI{Name: "pending_at_end", Value: tp})
		tot.Set(pipebench.KPI{Name: "held_at_end", Value: 50})
		tot.Set(pipebench.KPI{Name: "pipeline_held_at_end", Labels: lbl("p2"), Value: 50})
		r.Total = &tot
		return r
	}
	// p2's exporter held 50 at the end; each shard's raw p2 lost was
	// 5 + 50 and 0 + 40 (the rest of its lost in the first phase).
	a := shard([]float64{5, 0}, []float64{0, 50}, 7)
	b := shard([]float64{0, 0}, []float64{0, 40}, 3)
	mergedPhase := func(name string, p2 float64) pipebench.PhaseResult {
		ph := phaseLost(name, p2)
		ph.Set(pipebench.KPI{Name: "pipeline_lost", Labels: lbl("p2"), Value: p2})
		ph.Set(pipebench.KPI{Name: "pipeline_pending_at_end", Labels: lbl("p2"), Value: 90}) // summed by the merge: twice the queue
		return ph
	}
	merged := &pipebench.Result{Phases: []pipebench.PhaseResult{mergedPhase("p", 5), mergedPhase("p", 0)}}
	tot := mergedPhase("total", 5)
	tot.Set(pipebench.KPI{Name: "pipeline_lost", Labels: lbl("p3"), Value: 10})
	merged.Total = &tot
	mergePending([]*pipebench.Result{a, b}, merged)
	get := func(ph *pipebench.PhaseResult, name, p string) float64 { v, _ := ph.Get(name, "pipeline", p); return v }
	if l, p := get(merged.Total, "pipeline_lost", "p2"), get(merged.Total, "pipeline_pending_at_end", "p2"); l != 45 || p != 50 {
		t.Errorf("p2: lost %v pending %v, want 45 (5 + 90 - 50) and 50 (its queue, once)", l, p)
	}
	if l, p := get(&merged.Phases[1], "pipeline_lost", "p2"), get(&merged.Phases[1], "pipeline_pending_at_end", "p2"); l != 40 || p != 50 {
		t.Errorf("last phase: lost %v pending %v, want 40 and 50", l, p)
	}
	if l, p := get(&merged.Phases[0], "pipeline_lost", "p2"), get(&merged.Phases[0], "pipeline_pending_at_end", "p2"); l != 5 || p != 0 {
		t.Errorf("first phase: lost %v pending %v, want 5 and none", l, p)
	}
	if l := get(merged.Total, "pipeline_lost", "p3"); l != 10 {
		t.Errorf("p3 held nothing: lost %v, want 10", l)
	}
	if h := get(merged.Total, "pipeline_held_at_end", "p2"); h != 50 {
		t.Errorf("p2's held %v, want 50", h)
	}
}
