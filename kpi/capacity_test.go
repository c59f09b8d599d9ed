package kpi

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Steps at 400, 600 and 800/s against a consumer that keeps up to 650/s,
// then a phase at 300/s in which the backlog drains at 350/s of headroom.
func TestCapacity(t *testing.T) {
	phase := func(name string, target, acc, del, backlog float64) pipebench.PhaseResult {
		p := pipebench.PhaseResult{Name: name}
		p.Set(pipebench.KPI{Name: "target_rate", Value: target})
		p.Set(pipebench.KPI{Name: "accepted_rate", Value: acc})
		p.Set(pipebench.KPI{Name: "delivered_rate", Value: del})
		p.Set(pipebench.KPI{Name: "dropped", Value: 0})
		p.Set(pipebench.KPI{Name: "backlog.max", Value: backlog})
		return p
	}
	res := &pipebench.Result{Phases: []pipebench.PhaseResult{
		phase("s 400/s", 400, 400, 400, 5),
		phase("s 600/s", 600, 600, 598, 20),
		phase("s 800/s", 800, 800, 650, 30000),
		phase("recover", 300, 300, 650, 30000),
	}, Total: &pipebench.PhaseResult{Name: "total"}}
	res.Total.Set(pipebench.KPI{Name: "delivered", Value: 1})
	res.Total.Set(pipebench.KPI{Name: "backlog.max", Value: 100000})
	words := strings.Join(Capacity(res), "\n")
	if v, _ := res.Total.Get("capacity"); v != 600 {
		t.Errorf("capacity %v, want 600 (the highest step that kept up)", v)
	}
	if v, _ := res.Phases[3].Get("headroom"); v != 350 {
		t.Errorf("headroom %v, want 350", v)
	}
	if v, _ := res.Total.Get("drain_estimate"); v < 285 || v > 286 {
		t.Errorf("drain_estimate %v s, want 100,000 / 350", v)
	}
	for _, want := range []string{"steady-state capacity about 600/s", "a backlog of 100,000 clears in 4m46s at 350/s of headroom (measured in phase recover)"} {
		if !strings.Contains(words, want) {
			t.Errorf("summary lacks %q:\n%s", want, words)
		}
	}
}

// A 10-minute soak at a constant 1,000/s whose delivery falls from 1,000/s
// to 600/s in its last hours: a throughput_drop detection and a drift of
// 0.6; steady delivery gives a drift of 1 and no detection.
func TestDrift(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	run := func(late float64) *pipebench.Result {
		tgt := pipebench.Series{Name: "target_rate"}
		del := pipebench.Series{Name: "delivered_rate"}
		for s := 0; s <= 600; s++ {
			at := t0.Add(time.Duration(s) * time.Second)
			v := 1000.0
			if s > 400 {
				v = late
			}
			tgt.Points = append(tgt.Points, pipebench.TimeValue{T: at, V: 1000})
			del.Points = append(del.Points, pipebench.TimeValue{T: at, V: v})
		}
		res := &pipebench.Result{Series: []pipebench.Series{tgt, del},
			Phases: []pipebench.PhaseResult{{Name: "soak", Started: t0, Ended: t0.Add(10 * time.Minute)}},
			Total:  &pipebench.PhaseResult{Name: "total"}}
		res.Total.Set(pipebench.KPI{Name: "delivered", Value: 1})
		return res
	}
	res := run(600)
	ds := Drift(res)
	if d, _ := res.Total.Get("throughput_drift"); d < 0.59 || d > 0.61 {
		t.Errorf("drift %v, want 0.6", d)
	}
	if len(ds) != 1 || ds[0].Detector != "throughput_drop" || !strings.Contains(ds[0].Message, "from 100% of the target in the first 2m to 60% in the last 2m") {
		t.Errorf("detections %+v", ds)
	}
	res = run(1000)
	if ds := Drift(res); len(ds) != 0 {
		t.Errorf("steady delivery detected as a drop: %+v", ds)
	}
	if d, _ := res.Total.Get("throughput_drift"); d != 1 {
		t.Errorf("steady drift %v", d)
	}
}

// The OpenMessaging Benchmark's backlog pattern: a 20 s phase at 300/s with
// the consumer paused for its first 8 s (the backlog climbs to 2,400),
// then resumed while the producers go on; the consumer clears 300/s net,
// so the backlog falls to 5% of its peak 8 s after the resume. A second
// case never clears before the run ends.
func TestDrainMeasured(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	run := func(net float64) *pipebench.Result {
		bl := pipebench.Series{Name: "backlog"}
		for s := 0; s <= 25; s++ {
			v := 300.0 * float64(s)
			if s > 8 {
				v = max(2400-net*float64(s-8), 30)
			}
			bl.Points = append(bl.Points, pipebench.TimeValue{T: t0.Add(time.Duration(s) * time.Second), V: v})
		}
		plan := pipebench.PlanPhase{Name: "backlog", Duration: pipebench.Duration(20 * time.Second)}
		plan.Faults.Outages = []pipebench.Window{{Start: 0, Duration: pipebench.Duration(8 * time.Second)}}
		return &pipebench.Result{
			Plan:   pipebench.Plan{Interval: pipebench.Duration(time.Second), Phases: []pipebench.PlanPhase{plan}},
			Phases: []pipebench.PhaseResult{{Name: "backlog", Started: t0, Ended: t0.Add(20 * time.Second)}},
			Total:  &pipebench.PhaseResult{Name: "total"},
			Series: []pipebench.Series{bl},
		}
	}
	res := run(300)
	words := strings.Join(drainMeasured(res), "\n")
	if v, _ := res.Phases[0].Get("drain_measured"); v != 8 {
		t.Errorf("drain_measured %v s, want 8 (2,400 at 300/s net, to 5%% of the peak)", v)
	}
	if v, _ := res.Total.Get("drain_rate"); v != 300 {
		t.Errorf("drain_rate %v/s, want 300", v)
	}
	if want := "a backlog of 2,400 built while the consumer was paused cleared 8s after it resumed (300/s net)"; !strings.Contains(words, want) {
		t.Errorf("summary lacks %q:\n%s", want, words)
	}
	res = run(50)
	words = strings.Join(drainMeasured(res), "\n")
	if _, ok := res.Total.Get("drain_measured"); ok {
		t.Error("a backlog that never cleared has a drain_measured")
	}
	if !strings.Contains(words, "had not cleared when the run ended") {
		t.Errorf("summary does not say the backlog never cleared:\n%s", words)
	}
}
