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
