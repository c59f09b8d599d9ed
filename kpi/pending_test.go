package kpi

import (
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

func ledgerSeries(name string, labels map[string]string, pts ...pipebench.TimeValue) pipebench.Series {
	return pipebench.Series{Name: name, Labels: labels, Kind: pipebench.KindGauge, Points: pts}
}

func phaseLost(name string, lost float64) pipebench.PhaseResult {
	return pipebench.PhaseResult{Name: name, KPIs: []pipebench.KPI{{Name: "lost", Value: lost, Unit: pipebench.UnitCount}}}
}

// phasesLost returns phases with these lost counts and their total.
func phasesLost(lost ...float64) ([]pipebench.PhaseResult, pipebench.PhaseResult) {
	var sum float64
	phases := make([]pipebench.PhaseResult, len(lost))
	for i, l := range lost {
		phases[i] = phaseLost("p", l)
		sum += l
	}
	return phases, phaseLost("total", sum)
}

func kpiOf(t *testing.T, p *pipebench.PhaseResult, name string, labels ...string) float64 {
	t.Helper()
	v, ok := p.Get(name, labels...)
	if !ok {
		t.Fatalf("%s has no %s%v: %v", p.Name, name, labels, p.KPIs)
	}
	return v
}

// The missing items (accepted, not arrived) split by the pipeline's own
// readings after the drain: what the source had not read yet, then what
// the pipeline held, the rest lost; the latest items are the unread and
// the pending ones, so the phases take them from the last back and add
// up to the run. The pipeline's count of what it dropped stands beside.
func TestLedgerSplitsMissing(t *testing.T) {
	ss := []pipebench.Series{
		ledgerSeries(pipebench.LedgerHeld, map[string]string{"where": "queue A"}, reading(1, 9000), reading(9, 3000)),
		ledgerSeries(pipebench.LedgerHeld, map[string]string{"where": "queue B"}, reading(9, 377)),
		ledgerSeries(pipebench.LedgerUnread, map[string]string{"where": "files"}, reading(9, 1000)),
		ledgerSeries(pipebench.LedgerDropped, map[string]string{"where": "exporters"}, reading(9, 700)),
		ledgerSeries("memory_mb", nil, reading(9, 80)),
	}
	phases, total := phasesLost(100, 2000, 3000)
	applyPending(&total, phases, ss, at(9), "span", false)
	want := map[string]float64{"missing": 5100, "unread_at_source": 1000, "pending_at_end": 3377, "lost": 723, "held_at_end": 3377, "unread_at_end": 1000, "lost_confirmed": 700}
	for name, v := range want {
		if got := kpiOf(t, &total, name); got != v {
			t.Errorf("total %s %v, want %v", name, got, v)
		}
	}
	wantPhases := []map[string]float64{
		{"missing": 100, "unread_at_source": 0, "pending_at_end": 0, "lost": 100},
		{"missing": 2000, "unread_at_source": 0, "pending_at_end": 1377, "lost": 623},
		{"missing": 3000, "unread_at_source": 1000, "pending_at_end": 2000, "lost": 0},
	}
	for i, w := range wantPhases {
		for name, v := range w {
			if got := kpiOf(t, &phases[i], name); got != v {
				t.Errorf("phase %d %s %v, want %v", i, name, got, v)
			}
		}
	}
	if _, ok := total.Get("unaccounted"); ok {
		t.Error("every term was read, yet some items are unaccounted")
	}

	// More held than missing: pending is at most what is missing (the
	// pipeline may hold items whose send was not accepted, or copies
	// already delivered); held_at_end says what it held.
	phases, total = phasesLost(0, 200)
	applyPending(&total, phases, ss, at(9), "span", false)
	if u, p, l, h := kpiOf(t, &total, "unread_at_source"), kpiOf(t, &total, "pending_at_end"), kpiOf(t, &total, "lost"), kpiOf(t, &total, "held_at_end"); u != 200 || p != 0 || l != 0 || h != 3377 {
		t.Errorf("200 missing: unread %v pending %v lost %v held %v, want 200, 0, 0, 3,377", u, p, l, h)
	}

	// Nothing missing: every term is 0, read or not.
	phases, total = phasesLost(0, 0)
	applyPending(&total, phases, nil, at(9), "span", false)
	for _, name := range []string{"missing", "unread_at_source", "pending_at_end", "lost"} {
		if v := kpiOf(t, &total, name); v != 0 {
			t.Errorf("nothing missing: %s %v", name, v)
		}
	}

	// Without a sink there is nothing missing to split.
	noSink := pipebench.PhaseResult{Name: "total"}
	applyPending(&noSink, nil, ss, at(9), "span", false)
	if len(noSink.KPIs) != 0 {
		t.Errorf("KPIs without a sink: %v", noSink.KPIs)
	}
}

// A term that cannot be read is unknown, never inferred: the missing
// items it leaves open are unaccounted, lost is not given, and the run
// says why: a holder not read after the drain (a stream without a leader
// the observer reported the term unknown for, a node that did not
// answer), a pipeline counting in another unit, nothing reading the
// pipeline at all.
func TestLedgerUnknown(t *testing.T) {
	because := func(p *pipebench.PhaseResult, term string) string {
		for _, k := range p.All("ledger_unknown") {
			if k.Labels["term"] == term {
				return k.Labels["because"]
			}
		}
		return ""
	}
	for _, c := range []struct {
		name   string
		series []pipebench.Series
		why    string
	}{
		{"not read at the end", []pipebench.Series{ledgerSeries(pipebench.LedgerHeld, map[string]string{"where": "stream EVENTS"}, reading(1, 50), reading(8, 40))},
			"stream EVENTS was not read after the drain (its last reading was 1s before the end)"},
		{"said unknown", []pipebench.Series{
			ledgerSeries(pipebench.LedgerHeld, map[string]string{"where": "stream EVENTS"}, reading(8, 40)),
			ledgerSeries(pipebench.LedgerUnknown, map[string]string{"term": "held", "because": "no node leads stream EVENTS"}, reading(9, 1))},
			"no node leads stream EVENTS"},
		{"another unit", []pipebench.Series{ledgerSeries(pipebench.LedgerHeld, map[string]string{"where": "collector-0", "counts": "metric points"}, reading(9, 12000))},
			"collector-0 holds 12,000 metric points, and the run counts events"},
		{"nothing read", nil, "nothing read what the pipeline holds"},
	} {
		phases, total := phasesLost(10, 90)
		applyPending(&total, phases, c.series, at(9), "event", false)
		if _, ok := total.Get("lost"); ok {
			t.Errorf("%s: lost given although what is held is unknown: %v", c.name, total.KPIs)
		}
		if _, ok := total.Get("pending_at_end"); ok {
			t.Errorf("%s: pending given although unknown", c.name)
		}
		if u := kpiOf(t, &total, "unaccounted"); u != 100 {
			t.Errorf("%s: unaccounted %v, want 100", c.name, u)
		}
		if u := kpiOf(t, &phases[0], "unaccounted"); u != 10 {
			t.Errorf("%s: the first phase's unaccounted %v, want 10", c.name, u)
		}
		if w := because(&total, "pending_at_end"); !strings.Contains(w, c.why) {
			t.Errorf("%s: because %q, want %q", c.name, w, c.why)
		}
	}
	// A pipeline counting in another unit that holds nothing holds no
	// items either.
	phases, total := phasesLost(10, 90)
	applyPending(&total, phases, []pipebench.Series{ledgerSeries(pipebench.LedgerHeld, map[string]string{"counts": "metric points"}, reading(9, 0))}, at(9), "event", false)
	if l, p := kpiOf(t, &total, "lost"), kpiOf(t, &total, "pending_at_end"); l != 100 || p != 0 {
		t.Errorf("nothing held in metric points: lost %v pending %v, want 100 and 0", l, p)
	}
}

// A collector of several pipelines: each pipeline's pending is what its
// own exporters held, off its own missing copies; the source's unread
// items are missing from every pipeline; the total's terms are the
// pipelines' added.
func TestPipelineLedger(t *testing.T) {
	held := func(p, instance string, v float64) pipebench.Series {
		return ledgerSeries(pipebench.LedgerHeld, map[string]string{"pipeline": p, "where": instance + " otlp/" + p}, reading(9, v))
	}
	ss := []pipebench.Series{held("p1", "collector-0", 2), held("p2", "collector-0", 20), held("p2", "collector-1", 8),
		ledgerSeries(pipebench.LedgerUnread, map[string]string{"where": "files"}, reading(9, 5))}
	lost := func(name string, p1, p2 float64) pipebench.PhaseResult {
		ph := phaseLost(name, p1+p2)
		ph.Set(pipebench.KPI{Name: "pipeline_lost", Labels: map[string]string{"pipeline": "p1"}, Value: p1})
		ph.Set(pipebench.KPI{Name: "pipeline_lost", Labels: map[string]string{"pipeline": "p2"}, Value: p2})
		return ph
	}
	phases := []pipebench.PhaseResult{lost("a", 0, 2790), lost("b", 5, 10)}
	total := lost("total", 5, 2800)
	applyPending(&total, phases, ss, at(9), "span", false)
	get := func(ph *pipebench.PhaseResult, name, p string) float64 { return kpiOf(t, ph, name, "pipeline", p) }
	if u, pe, l := get(&total, "pipeline_unread_at_source", "p2"), get(&total, "pipeline_pending_at_end", "p2"), get(&total, "pipeline_lost", "p2"); u != 5 || pe != 28 || l != 2767 {
		t.Errorf("p2: unread %v pending %v lost %v, want 5, 28 (its exporters'), 2,767", u, pe, l)
	}
	if u, pe, l := get(&total, "pipeline_unread_at_source", "p1"), get(&total, "pipeline_pending_at_end", "p1"), get(&total, "pipeline_lost", "p1"); u != 5 || pe != 0 || l != 0 {
		t.Errorf("p1: unread %v pending %v lost %v, want 5, 0, 0", u, pe, l)
	}
	if u, pe, l := kpiOf(t, &total, "unread_at_source"), kpiOf(t, &total, "pending_at_end"), kpiOf(t, &total, "lost"); u != 10 || pe != 28 || l != 2767 {
		t.Errorf("total: unread %v pending %v lost %v, want the pipelines' added: 10, 28, 2,767", u, pe, l)
	}
	if u, pe, l := get(&phases[1], "pipeline_unread_at_source", "p2"), get(&phases[1], "pipeline_pending_at_end", "p2"), get(&phases[1], "pipeline_lost", "p2"); u != 5 || pe != 5 || l != 0 {
		t.Errorf("p2's last phase: unread %v pending %v lost %v, want 5, 5, 0", u, pe, l)
	}
	var sum float64
	for i := range phases {
		sum += kpiOf(t, &phases[i], "lost")
	}
	if sum != kpiOf(t, &total, "lost") {
		t.Errorf("the phases' lost add up to %v, the total's is %v", sum, kpiOf(t, &total, "lost"))
	}
}

// Shards of one run each split their own missing items by the pipeline's
// state; merged, the pipeline's state counts once (shard 1's reading),
// split off the shards' added missing items.
func TestMergeLedger(t *testing.T) {
	ss := []pipebench.Series{
		ledgerSeries(pipebench.LedgerHeld, map[string]string{"where": "q"}, reading(9, 600)),
		ledgerSeries(pipebench.LedgerUnread, map[string]string{"where": "files"}, reading(9, 20)),
	}
	shard := func(lost ...float64) *pipebench.Result {
		phases, total := phasesLost(lost...)
		applyPending(&total, phases, ss, at(9), "span", false)
		return &pipebench.Result{Phases: phases, Total: &total}
	}
	// Missing 10+400 and 0+500: each shard alone took 20 unread and up
	// to 600 pending off its own.
	a, b := shard(10, 400), shard(0, 500)
	if l := kpiOf(t, a.Total, "lost"); l != 0 {
		t.Fatalf("shard a lost %v", l)
	}
	// The merge sums what it finds (the pipeline's terms twice).
	merged := &pipebench.Result{Phases: []pipebench.PhaseResult{phaseLost("p", 10), phaseLost("p", 0)}}
	tot := phaseLost("total", 10)
	tot.Set(pipebench.KPI{Name: "pending_at_end", Value: 1200})
	merged.Total = &tot
	mergePending([]*pipebench.Result{a, b}, merged)
	for name, want := range map[string]float64{"missing": 910, "unread_at_source": 20, "pending_at_end": 600, "lost": 290, "held_at_end": 600} {
		if v := kpiOf(t, merged.Total, name); v != want {
			t.Errorf("merged %s %v, want %v", name, v, want)
		}
	}
	if l0, l1, p1 := kpiOf(t, &merged.Phases[0], "lost"), kpiOf(t, &merged.Phases[1], "lost"), kpiOf(t, &merged.Phases[1], "pending_at_end"); l0 != 10 || l1 != 280 || p1 != 600 {
		t.Errorf("merged phases: lost %v, %v; pending %v", l0, l1, p1)
	}
}
