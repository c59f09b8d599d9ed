package natsobs

import (
	"fmt"
	"time"

	"github.com/pipebench/pipebench"
)

// bufferingPoints is how many observations in a row the generator's rate
// must run ahead of the consumer's for buffering to have begun.
const bufferingPoints = 3

// buffering finds where the generator's rate and the rate the consuming
// service processes part, as the chef reference found it: pipebench's
// accepted_rate more than 5% above the consumers' ack rate (the server's
// consumer_acked_seq_rate, summed) for bufferingPoints observations in a
// row, the consumer not paused on purpose. It sets buffering_began on the total
// (seconds from the load's start) and returns a buffering detection.
func (o Detector) buffering(r *pipebench.Result, byName map[string][]pipebench.Series, phase func(time.Time) string) []pipebench.Detection {
	if len(r.Phases) == 0 || r.Total == nil {
		return nil
	}
	from, to := r.Phases[0].Started, r.Phases[len(r.Phases)-1].Ended
	gen := pipebench.Summed(byName["accepted_rate"], from, to)
	cons := pipebench.Summed(byName["consumer_acked_seq_rate"], from, to)
	if len(gen) == 0 || len(cons) == 0 {
		return nil
	}
	run := 0
	for i, g := range gen {
		c := pipebench.ValueAt(cons, g.T)
		if o.paused(r, g.T) {
			run = 0 // a consumer paused on purpose buffers by design
			continue
		}
		if g.V > 1.05*c && g.V-c >= 1 {
			run++
		} else {
			run = 0
		}
		if run == bufferingPoints {
			at := gen[i-run+1].T
			r.Total.Set(pipebench.KPI{Name: "buffering_began", Value: at.Sub(from).Seconds(), Unit: pipebench.UnitSeconds})
			return []pipebench.Detection{{Detector: "buffering", Series: "accepted_rate", Phase: phase(at), Began: at, Value: at.Sub(from).Seconds(),
				Message: fmt.Sprintf("buffering began %s into the load: the generator's rate (%s/s accepted) and the consumer's (%s/s acknowledged) parted",
					pipebench.FormatDuration(at.Sub(from).Round(time.Second)), pipebench.FormatCount(gen[i-run+1].V), pipebench.FormatCount(pipebench.ValueAt(cons, at)))}}
		}
	}
	return nil
}

// outstandingMin is the smallest backlog at a phase's start whose drain is
// timed.
const outstandingMin = 1000

// outstandingDrains times, in each phase that starts with at least
// outstandingMin messages outstanding in a stream (stream_messages: with
// interest or work-queue retention, what is stored and not yet
// acknowledged), how long they took to clear: from the phase's start to
// the first observation at or below 1% of that level. It sets on the
// phase outstanding_at_start, outstanding_drain_time (seconds) and
// outstanding_drain_rate (the level over that time): the chef reference's
// "a backlog of 100,000 clears in less than 5 minutes at 500/s".
func outstandingDrains(r *pipebench.Result, byName map[string][]pipebench.Series) {
	for _, s := range byName["stream_messages"] {
		for i := range r.Phases {
			p := &r.Phases[i]
			start, ok := firstAtOrAfter(s.Points, p.Started)
			if !ok || start.V < outstandingMin || start.T.After(p.Ended) {
				continue
			}
			for _, pt := range s.Points {
				if pt.T.Before(start.T) || pt.T.After(p.Ended) || pt.V > 0.01*start.V {
					continue
				}
				secs := pt.T.Sub(p.Started).Seconds()
				p.Set(pipebench.KPI{Name: "outstanding_at_start", Labels: s.Labels, Value: start.V, Unit: pipebench.UnitCount})
				p.Set(pipebench.KPI{Name: "outstanding_drain_time", Labels: s.Labels, Value: secs, Unit: pipebench.UnitSeconds})
				p.Set(pipebench.KPI{Name: "outstanding_drain_rate", Labels: s.Labels, Value: start.V / secs, Unit: pipebench.UnitPerSecond})
				break
			}
		}
	}
}

func firstAtOrAfter(pts []pipebench.TimeValue, t time.Time) (pipebench.TimeValue, bool) {
	for _, p := range pts {
		if !p.T.Before(t) {
			return p, true
		}
	}
	return pipebench.TimeValue{}, false
}

// capsReached sets, in the run's total, stream_cap_reached (labelled as
// the stream's series) to a stream's cap of messages (stream_max_msgs)
// when its messages (stream_messages) reached it during the run (from
// the first phase's start), the drain included: the cap was the subject
// of the run, not only a limit it never came near. A total that says it
// already (merged from shards that each computed it from their own
// series) is kept as it is.
func capsReached(r *pipebench.Result, byName map[string][]pipebench.Series) {
	if r.Total == nil || len(r.Phases) == 0 || len(r.Total.All("stream_cap_reached")) > 0 {
		return
	}
	from := r.Phases[0].Started
	for _, c := range byName["stream_max_msgs"] {
		limit, ok := maxFrom(c.Points, from)
		if !ok || limit <= 0 {
			continue
		}
		for _, m := range byName["stream_messages"] {
			if !sameLabelSet(m.Labels, c.Labels) {
				continue
			}
			if peak, ok := maxFrom(m.Points, from); ok && peak >= limit {
				r.Total.Set(pipebench.KPI{Name: "stream_cap_reached", Labels: c.Labels, Value: limit, Unit: pipebench.UnitCount})
			}
		}
	}
}

// maxFrom is the highest of pts at or after from.
func maxFrom(pts []pipebench.TimeValue, from time.Time) (float64, bool) {
	var m float64
	ok := false
	for _, p := range pts {
		if !p.T.Before(from) && (!ok || p.V > m) {
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
