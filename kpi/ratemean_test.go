package kpi

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// A rate observed every second, then not for 30 s (the process hung; the
// point after covers those 30 s): the phase's rate weighs each point by
// the time it covers (the first point, as long as the next gap), as the
// counter's growth over the window.
func TestObservedRateWeighsGaps(t *testing.T) {
	s := pipebench.Series{Name: "handled_rate", Labels: map[string]string{"instance": "eventproxy-0"}, Unit: pipebench.UnitPerSecond,
		Points: []pipebench.TimeValue{reading(0, 100), reading(1, 100), reading(2, 100), reading(3, 100), reading(33, 10), reading(34, 100)}}
	ks := ObservedKPIs([]pipebench.Series{s}, t0, t0.Add(34*time.Second))
	if len(ks) != 1 || ks[0].Value != (100*4+10*30+100)/35.0 {
		t.Errorf("KPIs %+v, want the time-weighted mean %v", ks, (100*4+10*30+100)/35.0)
	}
	even := pipebench.Series{Name: "x_rate", Points: []pipebench.TimeValue{reading(0, 1), reading(1, 2), reading(2, 3)}}
	if ks := ObservedKPIs([]pipebench.Series{even}, t0, t0.Add(2*time.Second)); ks[0].Value != 2 {
		t.Errorf("even intervals: %v, want the plain mean 2", ks[0].Value)
	}
}
