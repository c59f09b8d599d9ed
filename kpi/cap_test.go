package kpi

import (
	"testing"

	"github.com/pipebench/pipebench"
)

// A stream's cap is the run's subject when its messages reached it: only
// then does the total say stream_cap_reached (the chef suite's Cap
// column), with the cap; a cap never come near gives nothing.
func TestCapsReached(t *testing.T) {
	l := map[string]string{"stream": "EVENTS"}
	g := func(name string, pts ...pipebench.TimeValue) pipebench.Series {
		return pipebench.Series{Name: name, Labels: l, Kind: pipebench.KindGauge, Points: pts}
	}
	for _, c := range []struct {
		peak float64
		want bool
	}{{10000, true}, {4000, false}} {
		var tot pipebench.PhaseResult
		capsReached(&tot, []pipebench.Series{g("stream_max_msgs", reading(1, 10000), reading(9, 10000)), g("stream_messages", reading(1, 0), reading(5, c.peak), reading(9, 0))}, at(0), at(9))
		v, ok := tot.Get("stream_cap_reached", "stream", "EVENTS")
		if ok != c.want || (ok && v != 10000) {
			t.Errorf("peak %v: stream_cap_reached %v %v, want %v", c.peak, v, ok, c.want)
		}
	}
}
