package kpi

import (
	"fmt"
	"sort"
	"time"

	"github.com/pipebench/pipebench"
)

// NATSDetectOptions tunes DetectNATS; zero fields take the defaults shown.
type NATSDetectOptions struct {
	// FullRatio is the share of a limit counted as full (default 0.98).
	FullRatio float64
	// StallPoints is how many consecutive observations with a backlog and
	// no ack progress make a dispatch stall (default 5).
	StallPoints int
	// TrendPoints is how many trailing observations the filling rate is
	// measured over (default 3).
	TrendPoints int
	// RestartGrace is how long after a node started again a dispatch
	// stall is put down to the restart (default 20s).
	RestartGrace time.Duration
}

func (o *NATSDetectOptions) defaults() {
	if o.FullRatio == 0 {
		o.FullRatio = 0.98
	}
	if o.StallPoints == 0 {
		o.StallPoints = 5
	}
	if o.TrendPoints < 2 {
		o.TrendPoints = 3
	}
	if o.RestartGrace == 0 {
		o.RestartGrace = 20 * time.Second
	}
}

// DetectNATS finds the event-bus failure patterns in the series the nats
// observer records, named after the eventing reference's classes:
//
//   - storage_filling: a stream's storage_used_ratio rising; reported at the
//     first observation where it rises, with the ETA to full at the net rate
//     of the last TrendPoints observations (Value: the ETA in seconds), so it
//     comes before the first refused publish.
//   - storage_full_node (F1): one node's node_storage_used_ratio reached
//     FullRatio while others had room; storage_full_all (F2): every node's
//     did (Began: when the last one filled).
//   - stream_full: a stream's storage_used_ratio reached FullRatio.
//   - dispatch_stalled (F3): JetStream kept accepting into a stream (its
//     last sequence rose) while no consumer of it acknowledged anything
//     for StallPoints observations, with messages pending, no node's
//     storage or the stream full and no consumer paused (Value: the
//     pending count when it began). A consumer whose node stopped
//     answering counts as making no progress; a stall while a node
//     restarts (and RestartGrace after) is the restart's: leaders are
//     being elected again.
//   - node_restart (the reference's "JS pod restart"): a node's start
//     time changed between two observations (Began: the last observation
//     before, Value: the seconds until it started again).
//   - rate_drop: the handled rate fell and stayed down (rateDrop).
//   - buffering: the generator's rate and the consumer's parted
//     (buffering).
//
// It also sets the KPIs memorySlopes and outstandingDrains compute. It
// reads only r.Series, r.Phases and r.Plan.
func DetectNATS(r *pipebench.Result, o NATSDetectOptions) []pipebench.Detection {
	o.defaults()
	var out []pipebench.Detection
	byName := seriesByName(r.Series)
	phase := func(t time.Time) string {
		for _, p := range r.Phases {
			if !t.Before(p.Started) && t.Before(p.Ended) {
				return p.Name
			}
		}
		return ""
	}
	// Streams filling and full.
	for _, s := range byName["storage_used_ratio"] {
		pts := s.Points
		for i := 1; i < len(pts); i++ {
			if pts[i].V >= o.FullRatio {
				out = append(out, pipebench.Detection{Detector: "stream_full", Series: s.Key(), Phase: phase(pts[i].T), Began: pts[i].T, Value: pts[i].V,
					Message: fmt.Sprintf("%s reached %.0f%% of its limit", s.Key(), 100*pts[i].V)})
				break
			}
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].V <= pts[i-1].V || pts[i].V >= o.FullRatio {
				continue
			}
			from := max(0, i-o.TrendPoints+1)
			dt := pts[i].T.Sub(pts[from].T).Seconds()
			if dt <= 0 {
				continue
			}
			rate := (pts[i].V - pts[from].V) / dt
			if rate <= 0 {
				continue
			}
			eta := (1 - pts[i].V) / rate
			full := pts[i].T.Add(time.Duration(eta * float64(time.Second)))
			out = append(out, pipebench.Detection{Detector: "storage_filling", Series: s.Key(), Phase: phase(pts[i].T), Began: pts[i].T, Value: eta,
				Message: fmt.Sprintf("%s at %.1f%% of its limit and filling at %.2f%%/s: full in about %s (%s)", s.Key(), 100*pts[i].V, 100*rate,
					(time.Duration(eta) * time.Second).Round(time.Second), full.UTC().Format("15:04:05"))})
			break
		}
	}
	// Nodes full: one (F1) or all (F2).
	nodes := byName["node_storage_used_ratio"]
	firstFull := map[string]time.Time{}
	for _, s := range nodes {
		for _, p := range s.Points {
			if p.V >= o.FullRatio {
				firstFull[s.Key()] = p.T
				break
			}
		}
	}
	if len(nodes) > 0 && len(firstFull) == len(nodes) {
		var last time.Time
		for _, t := range firstFull {
			if t.After(last) {
				last = t
			}
		}
		out = append(out, pipebench.Detection{Detector: "storage_full_all", Series: "node_storage_used_ratio", Phase: phase(last), Began: last, Value: float64(len(nodes)),
			Message: fmt.Sprintf("the storage of all %d node(s) is full (F2)", len(nodes))})
	} else {
		keys := make([]string, 0, len(firstFull))
		for k := range firstFull {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, pipebench.Detection{Detector: "storage_full_node", Series: k, Phase: phase(firstFull[k]), Began: firstFull[k], Value: 1,
				Message: fmt.Sprintf("%s is full while other nodes have room (F1)", k)})
		}
	}
	restarts := nodeRestarts(byName, phase)
	out = append(out, dispatchStalled(r, byName, o, restarts, phase)...)
	out = append(out, restarts...)
	out = append(out, rateDrop(r, byName, phase)...)
	out = append(out, buffering(r, byName, phase)...)
	memorySlopes(r, byName)
	outstandingDrains(r, byName)
	return out
}

// natsMatching returns the series whose labels agree with want on keys.
func natsMatching(ss []pipebench.Series, want map[string]string, keys ...string) *pipebench.Series {
	for i := range ss {
		ok := true
		for _, k := range keys {
			if ss[i].Labels[k] != want[k] {
				ok = false
			}
		}
		if ok {
			return &ss[i]
		}
	}
	return nil
}

// natsPointAt returns the value of the last point at or before t.
func natsPointAt(pts []pipebench.TimeValue, t time.Time) (float64, bool) {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].T.After(t) })
	if i == 0 {
		return 0, false
	}
	return pts[i-1].V, true
}
