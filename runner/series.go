package runner

import (
	"sort"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// maxPoints bounds every series so a soak of days keeps bounded memory
// and a Result of bounded size. Past it, the older half of the series is
// merged two points into one (age): the most recent half stays at the
// observation interval, and the older a point, the more intervals it
// stands for (a soak's first hours end up in a few dozen points each).
const maxPoints = 4096

// seriesSet collects series by key. Owned by the observation goroutine.
type seriesSet struct {
	byKey map[string]*pipebench.Series
}

func newSeriesSet() *seriesSet { return &seriesSet{byKey: map[string]*pipebench.Series{}} }

func (s *seriesSet) add(name string, labels map[string]string, unit pipebench.Unit, kind pipebench.MetricKind, at time.Time, v float64) {
	key := pipebench.KeyOf(name, labels)
	se := s.byKey[key]
	if se == nil {
		se = &pipebench.Series{Name: name, Labels: labels, Unit: unit, Kind: kind}
		s.byKey[key] = se
	}
	se.Points = append(se.Points, pipebench.TimeValue{T: at, V: v})
	if len(se.Points) > maxPoints {
		age(se)
	}
}

// age merges the older half of a series' points two into one, each pair
// into one point at the later one's time whose value keeps what the KPIs
// and detectors read from the series: a counter's value at that time (a
// running total: rates and totals stay exact), a rate's mean over the
// time both stood for (weighted by it: merged points stand for unequal
// spans), any other gauge's highest value (a queue's or a backlog's peak,
// storage's fullest moment, memory's top stay in the series).
func age(se *pipebench.Series) {
	pts := se.Points
	old := len(pts) / 2
	merge := mergeFunc(se)
	out := pts[:0]
	i := 0
	for ; i+1 < old; i += 2 {
		prev := time.Time{}
		if i > 0 {
			prev = pts[i-1].T
		}
		out = append(out, pipebench.TimeValue{T: pts[i+1].T, V: merge(prev, pts[i], pts[i+1])})
	}
	se.Points = append(out, pts[i:]...)
}

// mergeFunc returns how two neighbouring points of se (after prev, the
// point before them; zero for the first) become one value.
func mergeFunc(se *pipebench.Series) func(prev time.Time, a, b pipebench.TimeValue) float64 {
	switch {
	case se.Kind == pipebench.KindCounter:
		return func(_ time.Time, _, b pipebench.TimeValue) float64 { return b.V }
	case strings.HasSuffix(se.Name, "_rate") || se.Name == "cpu_cores":
		return func(prev time.Time, a, b pipebench.TimeValue) float64 {
			wa, wb := a.T.Sub(prev).Seconds(), b.T.Sub(a.T).Seconds()
			if prev.IsZero() || wa <= 0 || wb <= 0 {
				return (a.V + b.V) / 2
			}
			return (a.V*wa + b.V*wb) / (wa + wb)
		}
	default:
		return func(_ time.Time, a, b pipebench.TimeValue) float64 { return max(a.V, b.V) }
	}
}

// list returns the series sorted by key, deep enough copied that the caller
// may keep them while the set goes on growing.
func (s *seriesSet) list() []pipebench.Series {
	keys := make([]string, 0, len(s.byKey))
	for k := range s.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]pipebench.Series, 0, len(keys))
	for _, k := range keys {
		se := *s.byKey[k]
		se.Points = append([]pipebench.TimeValue(nil), se.Points...)
		out = append(out, se)
	}
	return out
}
