package kpi

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

var natsT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func natsSeries(name string, labels map[string]string, vals ...float64) pipebench.Series {
	s := pipebench.Series{Name: name, Labels: labels}
	for i, v := range vals {
		s.Points = append(s.Points, pipebench.TimeValue{T: natsT0.Add(time.Duration(i) * time.Second), V: v})
	}
	return s
}

func natsFind(ds []pipebench.Detection, name string) []pipebench.Detection {
	var out []pipebench.Detection
	for _, d := range ds {
		if d.Detector == name {
			out = append(out, d)
		}
	}
	return out
}

// The handled rate at 290/s for 30 observations, then 70/s: a drop after
// 30 s (from the load's start), with the levels before and after; a rate
// that only wobbles is no drop.
func TestRateDrop(t *testing.T) {
	var vals []float64
	vals = append(vals, 0) // the first rate spans the start-up
	for i := 0; i < 30; i++ {
		vals = append(vals, 290+float64(i%3))
	}
	for i := 0; i < 20; i++ {
		vals = append(vals, 70+float64(i%5))
	}
	r := &pipebench.Result{Series: []pipebench.Series{natsSeries("handled_rate", map[string]string{"instance": "eventproxy-0"}, vals...)},
		Phases: []pipebench.PhaseResult{{Name: "soak", Started: natsT0, Ended: natsT0.Add(60 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
	ds := natsFind(DetectAll(r, nil), "rate_drop")
	if len(ds) != 1 || !ds[0].Began.Equal(natsT0.Add(31*time.Second)) {
		t.Fatalf("drop %+v", ds)
	}
	before, _ := r.Total.Get("rate_before_drop")
	after, _ := r.Total.Get("rate_after_drop")
	upFor, _ := r.Total.Get("time_before_drop")
	if before != 291 || after != 72 || upFor != 31 {
		t.Errorf("before %v, after %v, for %v s", before, after, upFor)
	}
	flat := &pipebench.Result{Series: []pipebench.Series{natsSeries("handled_rate", nil, 300, 300, 280, 310, 290, 300, 260, 300, 310, 290, 300, 280)},
		Phases: r.Phases, Total: &pipebench.PhaseResult{Name: "total"}}
	if ds := natsFind(DetectAll(flat, nil), "rate_drop"); len(ds) != 0 {
		t.Errorf("drop on a steady rate: %+v", ds)
	}
	// The same fall when the plan asked for it (a phase at 70/s after one
	// at 290/s, as the quickstart's recovery phase) is no drop; the same
	// fall against a steady target is one.
	for _, c := range []struct {
		after float64
		want  int
	}{{72, 0}, {290, 1}} {
		target := []float64{0}
		for i := 0; i < 30; i++ {
			target = append(target, 290)
		}
		for i := 0; i < 20; i++ {
			target = append(target, c.after)
		}
		planned := &pipebench.Result{Series: []pipebench.Series{r.Series[0], natsSeries("target_rate", nil, target...)},
			Phases: r.Phases, Total: &pipebench.PhaseResult{Name: "total"}}
		if ds := natsFind(DetectAll(planned, nil), "rate_drop"); len(ds) != c.want {
			t.Errorf("target %v/s after 30 s: %d drops, want %d", c.after, len(ds), c.want)
		}
	}
}

// A memory_mb rising 1 MB a minute over 3 minutes: 20 MB/h over the
// second half.
func TestMemorySlope(t *testing.T) {
	var mem []float64
	for i := 0; i <= 60; i++ {
		mem = append(mem, 50+float64(i)/60) // 1 MB a minute
	}
	mem2 := natsSeries("memory_mb", map[string]string{"instance": "nats-0"}, mem...)
	for i := range mem2.Points {
		mem2.Points[i].T = natsT0.Add(time.Duration(i) * 3 * time.Second) // 3 min
	}
	r := &pipebench.Result{Series: []pipebench.Series{mem2},
		Phases: []pipebench.PhaseResult{{Name: "drain", Started: natsT0, Ended: natsT0.Add(30 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
	DetectAll(r, nil)
	if slope, _ := r.Total.Get("memory_slope", "instance", "nats-0"); slope < 19.9 || slope > 20.1 {
		t.Errorf("memory slope %v MB/h, want 20", slope)
	}
}
