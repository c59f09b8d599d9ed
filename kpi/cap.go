package kpi

import (
	"time"

	"github.com/pipebench/pipebench"
)

// capsReached sets, in the run's total, stream_cap_reached (labelled as
// the stream's series) to a stream's cap of messages (stream_max_msgs)
// when its messages (stream_messages) reached it during the run, the
// drain included: the cap was the subject of the run, not only a limit
// it never came near.
func capsReached(t *pipebench.PhaseResult, series []pipebench.Series, from, until time.Time) {
	for _, c := range series {
		if c.Name != "stream_max_msgs" {
			continue
		}
		limit, ok := maxIn(c.Points, from, until)
		if !ok || limit <= 0 {
			continue
		}
		for _, m := range series {
			if m.Name != "stream_messages" || !sameLabelSet(m.Labels, c.Labels) {
				continue
			}
			if peak, ok := maxIn(m.Points, from, until); ok && peak >= limit {
				t.Set(pipebench.KPI{Name: "stream_cap_reached", Labels: c.Labels, Value: limit, Unit: pipebench.UnitCount})
			}
		}
	}
}

func maxIn(pts []pipebench.TimeValue, from, until time.Time) (float64, bool) {
	var m float64
	ok := false
	for _, p := range pts {
		if !p.T.Before(from) && !p.T.After(until) && (!ok || p.V > m) {
			m, ok = p.V, true
		}
	}
	return m, ok
}

func sameLabelSet(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
