package kpi

import (
	"fmt"
	"slices"
	"time"

	"github.com/pipebench/pipebench"
)

// loadWindow is the span of the run's phases.
func loadWindow(r *pipebench.Result) (from, to time.Time, ok bool) {
	if len(r.Phases) == 0 {
		return
	}
	return r.Phases[0].Started, r.Phases[len(r.Phases)-1].Ended, true
}

// summedRate returns the first of names that has series, its points inside
// [from, to] summed over instances (points at the same time added).
func summedRate(byName map[string][]pipebench.Series, from, to time.Time, names ...string) (string, []pipebench.TimeValue) {
	for _, name := range names {
		if ss := byName[name]; len(ss) > 0 {
			return name, pipebench.Summed(ss, from, to)
		}
	}
	return "", nil
}

// dropMinPoints is the fewest observations before and after a rate drop.
const dropMinPoints = 5

// rateDrop finds a handled rate that fell during the run and stayed down,
// as the eventing reference reports it ("70 (290 for 3h)": 290/s for the
// first 3 hours, 70/s after). The rate is the proxy's handled_rate (summed
// over instances), else the pipeline's receiver_accepted_rate, else
// pipebench's accepted_rate; the drop is the split of the load's
// observations into a before and an after that fits them best as two
// levels (least squares), reported when the after level is at most 70% of
// the before level, both last at least dropMinPoints observations, and at
// least 80% of the observations after lie below the midpoint, and, where
// the plan's target rate is known, the rate fell against the target (a
// phase planned at a lower rate is no drop). It sets on
// the total rate_before_drop, rate_after_drop and time_before_drop (from
// the load's start) and returns a rate_drop detection.
func rateDrop(r *pipebench.Result, byName map[string][]pipebench.Series, phase func(time.Time) string) []pipebench.Detection {
	from, to, ok := loadWindow(r)
	if !ok || r.Total == nil {
		return nil
	}
	name, pts := summedRate(byName, from, to, "handled_rate", "receiver_accepted_rate", "accepted_rate")
	if len(pts) > 0 {
		pts = pts[1:] // the first rate spans the start-up
	}
	n := len(pts)
	if n < 2*dropMinPoints {
		return nil
	}
	prefix := make([]float64, n+1)
	prefix2 := make([]float64, n+1)
	for i, p := range pts {
		prefix[i+1] = prefix[i] + p.V
		prefix2[i+1] = prefix2[i] + p.V*p.V
	}
	sse := func(a, b int) float64 { // of pts[a:b] around its mean
		k := float64(b - a)
		s := prefix[b] - prefix[a]
		return prefix2[b] - prefix2[a] - s*s/k
	}
	best, bestK := 0.0, -1
	for k := dropMinPoints; k <= n-dropMinPoints; k++ {
		if e := sse(0, k) + sse(k, n); bestK < 0 || e < best {
			best, bestK = e, k
		}
	}
	before := (prefix[bestK] - prefix[0]) / float64(bestK)
	after := (prefix[n] - prefix[bestK]) / float64(n-bestK)
	if before <= 0 || after > 0.7*before {
		return nil
	}
	mid, below := (before+after)/2, 0
	for _, p := range pts[bestK:] {
		if p.V < mid {
			below++
		}
	}
	if float64(below) < 0.8*float64(n-bestK) {
		return nil
	}
	// A drop the plan asked for (a phase at a lower rate) is no drop:
	// the rate must have fallen against the target, not with it.
	if _, target := summedRate(byName, from, to, "target_rate"); len(target) > 0 {
		mean := func(ps []pipebench.TimeValue) float64 {
			sum := 0.0
			for _, p := range ps {
				sum += pipebench.ValueAt(target, p.T)
			}
			return sum / float64(len(ps))
		}
		if tb, ta := mean(pts[:bestK]), mean(pts[bestK:]); tb > 0 && ta > 0 && after/ta > 0.7*before/tb {
			return nil
		}
	}
	at := pts[bestK].T
	upFor := at.Sub(from)
	r.Total.Set(pipebench.KPI{Name: "rate_before_drop", Value: before, Unit: pipebench.UnitPerSecond})
	r.Total.Set(pipebench.KPI{Name: "rate_after_drop", Value: after, Unit: pipebench.UnitPerSecond})
	r.Total.Set(pipebench.KPI{Name: "time_before_drop", Value: upFor.Seconds(), Unit: pipebench.UnitSeconds})
	return []pipebench.Detection{{Detector: "rate_drop", Series: name, Phase: phase(at), Began: at, Value: after,
		Message: fmt.Sprintf("%s fell to %s/s after %s at %s/s, and stayed down", name, pipebench.FormatCount(after),
			pipebench.FormatDuration(upFor.Round(time.Second)), pipebench.FormatCount(before))}}
}

// memorySlopes sets, on the total, memory_slope{instance} for every
// memory_mb series: the least-squares slope of its second half (past the
// warm-up) in MB per hour, when that half spans a minute or more with 10
// points or more: what a soak's "flat memory" claim is checked against.
func memorySlopes(r *pipebench.Result, byName map[string][]pipebench.Series) {
	if r.Total == nil {
		return
	}
	for _, s := range byName["memory_mb"] {
		if len(s.Points) < 2 {
			continue
		}
		first, last := s.Points[0].T, s.Points[len(s.Points)-1].T
		half := s.Points[sortSearchTime(s.Points, first.Add(last.Sub(first)/2)):]
		if len(half) < 10 || half[len(half)-1].T.Sub(half[0].T) < time.Minute {
			continue
		}
		r.Total.Set(pipebench.KPI{Name: "memory_slope", Labels: s.Labels, Value: pipebench.Slope(half) * 3600, Unit: "MB/h"})
	}
}

// sortSearchTime is the index of the first point at or after t.
func sortSearchTime(pts []pipebench.TimeValue, t time.Time) int {
	i, _ := slices.BinarySearchFunc(pts, t, func(p pipebench.TimeValue, t time.Time) int { return p.T.Compare(t) })
	return i
}

// phaseFrom is the name of the phase of r that t falls in, from its start
// to before its end ("" outside every phase).
func phaseFrom(r *pipebench.Result, t time.Time) string {
	for _, p := range r.Phases {
		if !t.Before(p.Started) && t.Before(p.Ended) {
			return p.Name
		}
	}
	return ""
}
