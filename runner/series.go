package runner

import (
	"sort"
	"time"

	"github.com/pipebench/pipebench"
)

// maxPoints bounds every series so a soak of days keeps bounded memory:
// past it, neighbouring points are merged two into one (mean of values,
// time of the later).
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
		half := se.Points[:0]
		for i := 0; i+1 < len(se.Points); i += 2 {
			a, b := se.Points[i], se.Points[i+1]
			half = append(half, pipebench.TimeValue{T: b.T, V: (a.V + b.V) / 2})
		}
		se.Points = half
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
