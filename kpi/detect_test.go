package kpi

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// t0 is the start of the tests' made-up timelines.
var t0 = time.Unix(10000, 0).UTC()

// at is the time s seconds after t0.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// reading is a series' point: v, read s seconds after t0.
func reading(s int, v float64) pipebench.TimeValue { return pipebench.TimeValue{T: at(s), V: v} }

func series(name string, labels map[string]string, f func(i int) float64, n int, step time.Duration) pipebench.Series {
	s := pipebench.Series{Name: name, Labels: labels}
	for i := 0; i < n; i++ {
		s.Points = append(s.Points, pipebench.TimeValue{T: t0.Add(time.Duration(i) * step), V: f(i)})
	}
	return s
}

func detectors(ds []pipebench.Detection) map[string]pipebench.Detection {
	m := map[string]pipebench.Detection{}
	for _, d := range ds {
		m[d.Detector] = d
	}
	return m
}

func TestDetectorsFindPatterns(t *testing.T) {
	inst := map[string]string{"instance": "c-0"}
	r := &pipebench.Result{
		Phases: []pipebench.PhaseResult{{Name: "load", Started: t0, Ended: t0.Add(60 * time.Second)}},
		Series: []pipebench.Series{
			series("target_rate", nil, func(int) float64 { return 1000 }, 60, time.Second),
			series("sent_rate", nil, func(i int) float64 { return map[bool]float64{true: 700, false: 1000}[i >= 30] }, 60, time.Second),
			series("delivered_rate", nil, func(i int) float64 { return map[bool]float64{true: 0, false: 1000}[i >= 20 && i < 30] }, 60, time.Second),
			series("backlog", nil, func(i int) float64 { return float64(i * 100) }, 60, time.Second),
			series("memory_mb", inst, func(i int) float64 { return 100 + float64(i) }, 60, 10*time.Second),
			series("storage_used_bytes", inst, func(i int) float64 { return float64(i) * 1e6 }, 60, time.Second),
			series("storage_limit_bytes", inst, func(int) float64 { return 1e9 }, 60, time.Second),
		},
	}
	got := detectors(Detect(r, DetectOptions{}))
	for _, name := range []string{"stall", "shortfall", "backlog_growth", "leak", "storage_fill"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s not detected; got %v", name, got)
		}
	}
	if b := got["stall"].Began; !b.Equal(t0.Add(20 * time.Second)) {
		t.Errorf("stall began %v, want t0+20s", b.Sub(t0))
	}
	if b := got["shortfall"].Began; !b.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("shortfall began %v, want t0+30s", b.Sub(t0))
	}
	// 1 MB/s used, 1000 MB limit, 59 MB used at the end: ~941 s left.
	if eta := got["storage_fill"].Value; eta < 930 || eta > 950 {
		t.Errorf("storage ETA %v s, want about 941", eta)
	}
	if l := got["leak"].Value; l < 359 || l > 361 {
		t.Errorf("leak %v MB/h, want 360", l)
	}
}

func TestDetectorsQuietOnHealthyNoisyRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(base float64) func(int) float64 {
		return func(int) float64 { return base * (1 + 0.004*(rng.Float64()-0.5)) }
	}
	r := &pipebench.Result{
		Phases: []pipebench.PhaseResult{{Name: "load", Started: t0, Ended: t0.Add(10 * time.Minute)}},
		Series: []pipebench.Series{
			series("target_rate", nil, func(int) float64 { return 1000 }, 600, time.Second),
			series("sent_rate", nil, noise(1000), 600, time.Second),
			series("delivered_rate", nil, noise(1000), 600, time.Second),
			series("backlog", nil, func(int) float64 { return float64(rng.IntN(50)) }, 600, time.Second),
			series("memory_mb", nil, noise(150), 600, time.Second),
		},
	}
	if got := Detect(r, DetectOptions{}); len(got) != 0 {
		t.Errorf("false positives: %+v", got)
	}
}

// Nothing delivered during an outage the plan asked for (and while
// delivery picks up after it) is not a stall; the same gap unplanned is.
func TestStallSkipsPlannedOutages(t *testing.T) {
	delivered := func(i int) float64 { return map[bool]float64{true: 0, false: 1000}[i >= 20 && i < 31] }
	mk := func(outages []pipebench.Window) *pipebench.Result {
		return &pipebench.Result{
			Plan: pipebench.Plan{Interval: pipebench.Duration(time.Second),
				Phases: []pipebench.PlanPhase{{Name: "load", Faults: pipebench.FaultPolicy{Outages: outages}}}},
			Phases: []pipebench.PhaseResult{{Name: "load", Started: t0, Ended: t0.Add(60 * time.Second)}},
			Series: []pipebench.Series{
				series("sent_rate", nil, func(int) float64 { return 1000 }, 60, time.Second),
				series("delivered_rate", nil, delivered, 60, time.Second),
			},
		}
	}
	if _, ok := detectors(Detect(mk(nil), DetectOptions{}))["stall"]; !ok {
		t.Fatal("an unplanned gap of 11 s is not a stall")
	}
	planned := []pipebench.Window{{Start: pipebench.Duration(20 * time.Second), Duration: pipebench.Duration(10 * time.Second)}}
	if d, ok := detectors(Detect(mk(planned), DetectOptions{}))["stall"]; ok {
		t.Errorf("a planned outage reported as a stall: %+v", d)
	}
	// A consumer that says it is paused is not stalled either.
	r := mk(nil)
	r.Series = append(r.Series, series("consumer_paused", map[string]string{"consumer": "c"}, func(i int) float64 {
		return map[bool]float64{true: 1, false: 0}[i >= 19 && i < 32]
	}, 60, time.Second))
	if d, ok := detectors(Detect(r, DetectOptions{}))["stall"]; ok {
		t.Errorf("a paused consumer reported as a stall: %+v", d)
	}
}
