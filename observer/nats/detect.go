package natsobs

import (
	"fmt"
	"sort"
	"time"

	"github.com/pipebench/pipebench"
)

// Detector reads the series the nats observer records for the event-bus
// failure patterns, named after the eventing reference's classes: the
// nats observer's optional ability (pipebench.Detector, declared with its
// Factory), which kpi runs for every plan that has the observer. Zero
// fields take the defaults shown.
type Detector struct {
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

var (
	_ pipebench.Detector      = Detector{}
	_ pipebench.PauseReporter = Detector{}
)

func (o *Detector) defaults() {
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

// Detect finds, in the series the observer records:
//
//   - storage_fill and storage_full: a stream's storage_used_bytes
//     against its storage_limit_bytes, filling (Value: the ETA to full in
//     seconds at the slope of the whole run) or at 98% of it.
//   - storage_filling: a stream's storage_used_ratio rising; reported at
//     the first observation where it rises, with the ETA to full at the
//     net rate of the last TrendPoints observations (Value: the ETA in
//     seconds), so it comes before the first refused publish.
//   - stream_full: a stream's storage_used_ratio reached FullRatio.
//     (Where storage_fill or storage_full saw a stream, storage_filling
//     and stream_full are left out: one finding each.)
//   - storage_full_node (F1): one node's node_storage_used_ratio reached
//     FullRatio while others had room; storage_full_all (F2): every node's
//     did (Began: when the last one filled).
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
//   - buffering: the generator's rate and the consumer's parted
//     (buffering).
//
// It also sets the KPIs outstandingDrains and capsReached compute. It
// reads only r.Series, r.Phases, r.Plan and r.Total.
func (d Detector) Detect(r *pipebench.Result) []pipebench.Detection {
	o := d
	o.defaults()
	byName := pipebench.SeriesByName(r.Series)
	out := storageFill(byName)
	general := len(out) > 0
	for _, f := range o.classes(r, byName) {
		if general && (f.Detector == "storage_filling" || f.Detector == "stream_full") {
			continue
		}
		out = append(out, f)
	}
	outstandingDrains(r, byName)
	capsReached(r, byName)
	return out
}

// Paused reports whether a consumer the observer saw said it was paused
// at t (consumer_paused): the sink pauses its consumer in a planned
// outage, and delivery stops by design (pipebench.PauseReporter).
func (Detector) Paused(r *pipebench.Result, t time.Time) bool {
	for _, s := range r.Series {
		if s.Name != "consumer_paused" {
			continue
		}
		if v, ok := pipebench.PointAt(s.Points, t); ok && v > 0 {
			return true
		}
	}
	return false
}

// paused reports whether delivery stopped on purpose at t: a planned
// outage, or a consumer paused.
func (d Detector) paused(r *pipebench.Result, t time.Time) bool {
	return d.Paused(r, t) || r.InOutage(t)
}

// storageFill finds a stream's storage (its bytes against its limit)
// filling toward the limit, or at it.
func storageFill(byName map[string][]pipebench.Series) []pipebench.Detection {
	var out []pipebench.Detection
	// Storage filling toward its limit.
	for _, used := range byName["storage_used_bytes"] {
		var limit []pipebench.TimeValue
		for _, l := range byName["storage_limit_bytes"] {
			if l.Labels["instance"] == used.Labels["instance"] {
				limit = l.Points
			}
		}
		if len(used.Points) < 3 || len(limit) == 0 {
			continue
		}
		last := used.Points[len(used.Points)-1]
		lim := limit[len(limit)-1].V
		if lim <= 0 {
			continue
		}
		if last.V >= 0.98*lim {
			out = append(out, pipebench.Detection{Detector: "storage_full", Series: used.Key(), Began: firstAbove(used.Points, 0.98*lim),
				Message: fmt.Sprintf("%s reached %.0f%% of its limit", used.Key(), 100*last.V/lim), Value: last.V / lim})
			continue
		}
		if slope := pipebench.Slope(used.Points); slope > 0 {
			eta := (lim - last.V) / slope
			out = append(out, pipebench.Detection{Detector: "storage_fill", Series: used.Key(), Began: used.Points[0].T,
				Message: fmt.Sprintf("%s is filling at %s bytes/s: full in about %s", used.Key(), pipebench.FormatCount(slope), pipebench.FormatDuration((time.Duration(eta) * time.Second).Round(time.Second))), Value: eta})
		}
	}
	return out
}

// classes finds the patterns named after the eventing reference's
// classes (see Detect), in this order: streams filling and full, nodes
// full, dispatch stalls, node restarts, buffering.
func (o Detector) classes(r *pipebench.Result, byName map[string][]pipebench.Series) []pipebench.Detection {
	var out []pipebench.Detection
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
	out = append(out, o.dispatchStalled(r, byName, restarts, phase)...)
	out = append(out, restarts...)
	out = append(out, o.buffering(r, byName, phase)...)
	return out
}

// firstAbove is the time of the first of pts at or above v, else of the
// last.
func firstAbove(pts []pipebench.TimeValue, v float64) time.Time {
	for _, p := range pts {
		if p.V >= v {
			return p.T
		}
	}
	return pts[len(pts)-1].T
}
