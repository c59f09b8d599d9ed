package natsobs

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/pipebench/pipebench"
)

// dispatchStalled finds F3, per stream: windows of StallPoints observations
// over which the stream's last sequence rose (JetStream accepted) while the
// highest ack floor of its consumers did not move, with messages pending,
// and nothing explains it (a node's storage or the stream full, a consumer
// paused, a planned outage, a node restarting). A stream without a stream_last_seq series is
// judged by its consumers' pending count rising instead. One detection per
// stall, at its first observation.
func (o Detector) dispatchStalled(r *pipebench.Result, byName map[string][]pipebench.Series, restarts []pipebench.Detection, phase func(time.Time) string) []pipebench.Detection {
	var out []pipebench.Detection
	streams := map[string]bool{}
	for _, name := range []string{"stream_last_seq", "consumer_acked_seq", "consumer_pending"} {
		for _, s := range byName[name] {
			if n := s.Labels["stream"]; n != "" {
				streams[n] = true
			}
		}
	}
	names := make([]string, 0, len(streams))
	for n := range streams {
		names = append(names, n)
	}
	sort.Strings(names)
	ofStream := func(name, stream string) []pipebench.Series {
		var ss []pipebench.Series
		for _, s := range byName[name] {
			if s.Labels["stream"] == stream {
				ss = append(ss, s)
			}
		}
		return ss
	}
	// maxAt is the highest value at or before t over the series (ok false
	// when none has a point yet).
	maxAt := func(ss []pipebench.Series, t time.Time) (float64, bool) {
		m, ok := 0.0, false
		for _, s := range ss {
			if v, found := pipebench.PointAt(s.Points, t); found && (!ok || v > m) {
				m, ok = v, true
			}
		}
		return m, ok
	}
	sumAt := func(ss []pipebench.Series, t time.Time) float64 {
		sum := 0.0
		for _, s := range ss {
			if v, found := pipebench.PointAt(s.Points, t); found {
				sum += v
			}
		}
		return sum
	}
	for _, stream := range names {
		lastSeq := ofStream("stream_last_seq", stream)
		acked := ofStream("consumer_acked_seq", stream)
		pending := ofStream("consumer_pending", stream)
		ratio := ofStream("storage_used_ratio", stream)
		if len(acked) == 0 {
			continue // no consumer: nothing to dispatch to
		}
		// The observation times: the stream's, else its consumers'.
		var times []time.Time
		base := lastSeq
		if len(base) == 0 {
			base = pending
		}
		for _, s := range base {
			for _, p := range s.Points {
				times = append(times, p.T)
			}
		}
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
		explained := func(t time.Time) bool {
			for _, d := range restarts {
				up := d.Began.Add(time.Duration(d.Value * float64(time.Second)))
				if !t.Before(d.Began) && !t.After(up.Add(o.RestartGrace)) {
					return true
				}
			}
			for _, n := range byName["node_storage_used_ratio"] {
				if v, ok := pipebench.PointAt(n.Points, t); ok && v >= o.FullRatio {
					return true
				}
			}
			if v, ok := maxAt(ratio, t); ok && v >= o.FullRatio {
				return true
			}
			return o.paused(r, t)
		}
		// stalled says whether the step from times[i-1] to times[i] took
		// messages in without any acknowledged.
		stalled := func(i int) bool {
			prev, t := times[i-1], times[i]
			a0, ok0 := maxAt(acked, prev)
			a1, ok1 := maxAt(acked, t)
			if !ok0 || !ok1 || a1 > a0 || explained(t) {
				return false
			}
			if len(lastSeq) > 0 {
				l1, _ := maxAt(lastSeq, t)
				return l1 > a1
			}
			return sumAt(pending, t) > 0
		}
		accepted := func(from, to int) bool {
			if len(lastSeq) > 0 {
				l0, _ := maxAt(lastSeq, times[from])
				l1, _ := maxAt(lastSeq, times[to])
				return l1 > l0
			}
			return sumAt(pending, times[to]) > sumAt(pending, times[from])
		}
		for i := 1; i < len(times); i++ {
			if !stalled(i) {
				continue
			}
			j := i
			for j+1 < len(times) && stalled(j+1) {
				j++
			}
			if j-i+1 >= o.StallPoints && accepted(i-1, j) {
				began := times[i]
				held := sumAt(pending, began)
				if len(lastSeq) > 0 {
					l, _ := maxAt(lastSeq, began)
					a, _ := maxAt(acked, began)
					held = l - a
				}
				out = append(out, pipebench.Detection{Detector: "dispatch_stalled", Series: pipebench.KeyOf("stream", map[string]string{"stream": stream}),
					Phase: phase(began), Began: began, Value: held,
					Message: fmt.Sprintf("stream %s: JetStream kept accepting but dispatched nothing for %s (%d observations) while storage was not full (F3); %s messages pending when it began",
						stream, pipebench.FormatDuration(times[j].Sub(times[i-1]).Round(time.Second)), j-i+1, pipebench.FormatCount(held))})
			}
			i = j
		}
	}
	return out
}

// nodeRestarts finds the nodes whose start time changed between two
// observations: the eventing reference's "JS pod restart".
func nodeRestarts(byName map[string][]pipebench.Series, phase func(time.Time) string) []pipebench.Detection {
	var out []pipebench.Detection
	for _, s := range byName["server_start_time"] {
		for i := 1; i < len(s.Points); i++ {
			prev, p := s.Points[i-1], s.Points[i]
			if math.Abs(p.V-prev.V) <= 1 {
				continue
			}
			started := time.UnixMilli(int64(p.V * 1000)).UTC()
			down := max(0, started.Sub(prev.T).Seconds())
			out = append(out, pipebench.Detection{Detector: "node_restart", Series: s.Key(), Phase: phase(prev.T), Began: prev.T, Value: down,
				Message: fmt.Sprintf("%s restarted: last seen up at %s, started again at %s (JS pod restart)",
					s.Labels["instance"], prev.T.UTC().Format("15:04:05"), started.Format("15:04:05"))})
		}
	}
	return out
}
