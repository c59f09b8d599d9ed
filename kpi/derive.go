package kpi

import (
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// Deriver turns raw observed points into the series KPIs are computed from:
// a counter X is kept as it is and also becomes the rate series X_rate (per second between two
// observations; a counter reset starts over), "cpu_seconds" becomes
// "cpu_cores", the gauge "memory_rss_bytes" becomes "memory_mb", histogram
// buckets (names ending in _bucket, _sum, _count) are kept as they are, and
// any other gauge is kept as it is.
//
// A Deriver is owned by one goroutine.
type Deriver struct {
	last map[string]pipebench.Point
}

// NewDeriver returns a Deriver with no history.
func NewDeriver() *Deriver { return &Deriver{last: map[string]pipebench.Point{}} }

// Derived is one value of a derived series.
type Derived struct {
	Name   string
	Labels map[string]string
	Unit   pipebench.Unit
	Kind   pipebench.MetricKind
	At     time.Time
	Value  float64
}

// Add takes one observation's points and returns the derived values.
func (d *Deriver) Add(points []pipebench.Point) []Derived {
	var out []Derived
	for _, p := range points {
		switch {
		case p.Kind == pipebench.KindCounter && !isHistogramPart(p.Name):
			// The raw total is kept too: its last value is what the
			// pipeline counted in all, for exact accounting.
			out = append(out, Derived{Name: p.Name, Labels: p.Labels, Unit: pipebench.UnitCount, Kind: pipebench.KindCounter, At: p.At, Value: p.Value})
			key := pipebench.KeyOf(p.Name, p.Labels)
			prev, ok := d.last[key]
			d.last[key] = p
			if !ok {
				continue
			}
			dt := p.At.Sub(prev.At).Seconds()
			if dt <= 0 {
				continue
			}
			delta := p.Value - prev.Value
			if delta < 0 { // counter reset: the process restarted
				delta = p.Value
			}
			name, unit := p.Name+"_rate", pipebench.UnitPerSecond
			if p.Name == "cpu_seconds" {
				name, unit = "cpu_cores", pipebench.UnitCores
			}
			out = append(out, Derived{Name: name, Labels: p.Labels, Unit: unit, Kind: pipebench.KindGauge, At: p.At, Value: delta / dt})
		case p.Name == "memory_rss_bytes":
			out = append(out, Derived{Name: "memory_mb", Labels: p.Labels, Unit: pipebench.UnitMB, Kind: pipebench.KindGauge, At: p.At, Value: p.Value / (1 << 20)})
		default:
			unit := pipebench.UnitCount
			out = append(out, Derived{Name: p.Name, Labels: p.Labels, Unit: unit, Kind: p.Kind, At: p.At, Value: p.Value})
		}
	}
	return out
}

func isHistogramPart(name string) bool {
	return strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count")
}
