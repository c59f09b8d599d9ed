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
		},
	}
	got := detectors(Detect(r, DetectOptions{}))
	for _, name := range []string{"stall", "shortfall", "backlog_growth", "leak"} {
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
	// Delivery a plug-in says was paused on purpose (a consumer paused:
	// DetectOptions.Paused, from the PauseReporters) is no stall either.
	paused := DetectOptions{Paused: func(t time.Time) bool { return !t.Before(at(19)) && t.Before(at(32)) }}
	if d, ok := detectors(Detect(mk(nil), paused))["stall"]; ok {
		t.Errorf("a paused consumer reported as a stall: %+v", d)
	}
	// Through DetectAll, a Detector that is a PauseReporter says so.
	var asked int
	pauser := pauseDetector{paused: func(_ *pipebench.Result, t time.Time) bool { asked++; return paused.Paused(t) }}
	if d, ok := detectors(DetectAll(mk(nil), []pipebench.Detector{pauser}))["stall"]; ok || asked == 0 {
		t.Errorf("DetectAll with a PauseReporter: stall %+v (asked %d times)", d, asked)
	}
}

// pauseDetector is a Detector that finds nothing and says when delivery
// was paused.
type pauseDetector struct {
	paused func(*pipebench.Result, time.Time) bool
}

func (pauseDetector) Detect(*pipebench.Result) []pipebench.Detection { return nil }
func (p pauseDetector) Paused(r *pipebench.Result, t time.Time) bool { return p.paused(r, t) }

// DetectAll runs every Detector it is given after the general ones, once
// each, and keeps what they found after the general detections.
func TestDetectAllRunsTheGivenDetectors(t *testing.T) {
	r := &pipebench.Result{Phases: []pipebench.PhaseResult{{Name: "load", Started: t0, Ended: t0.Add(10 * time.Second)}},
		Series: []pipebench.Series{
			series("sent_rate", nil, func(int) float64 { return 1000 }, 10, time.Second),
			series("delivered_rate", nil, func(int) float64 { return 0 }, 10, time.Second),
		}}
	calls := 0
	own := pipebench.DetectorFunc(func(got *pipebench.Result) []pipebench.Detection {
		calls++
		if got != r {
			t.Error("the Detector was given another Result")
		}
		return []pipebench.Detection{{Detector: "own", Began: t0}}
	})
	ds := DetectAll(r, []pipebench.Detector{own})
	if calls != 1 || len(ds) != 2 || ds[0].Detector != "stall" || ds[1].Detector != "own" {
		t.Errorf("calls %d, detections %+v", calls, ds)
	}
}
