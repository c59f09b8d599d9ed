package metricsout

import (
	"slices"
	"sort"
	"strings"
)

// kind is how a family is exposed.
type kind int

const (
	gauge kind = iota
	counter
	histogram
)

// family is one metric with all its series at one moment, the form both
// the Prometheus exposition and the OTLP push are made from, so that the
// two cannot disagree.
type family struct {
	Name string // the Prometheus name
	Help string
	Kind kind
	// Unit is the OTLP unit (UCUM): "s", "By", "1", or an annotation
	// like "{item}" that a Prometheus exporter adds no suffix for.
	Unit   string
	Labels []string // label names, the same for every point, run_id first
	Points []point
}

// point is one series of a family: its label values (in the family's
// order) and its value, or its histogram.
type point struct {
	Values []string
	Value  float64
	Hist   *hist
}

// otlpName is the OTLP name of a Prometheus name given the metric's OTLP
// unit and whether it is a counter: without _total, and without the
// suffix a Prometheus exporter adds for the unit (_seconds for "s",
// _bytes for "By", _ratio for "1", _per_second for ".../s"), so that a
// collector's Prometheus exporter gives the Prometheus name back.
func otlpName(prom, unit string, isCounter bool) string {
	name := prom
	if isCounter {
		name = strings.TrimSuffix(name, "_total")
	}
	if perSecond, ok := strings.CutSuffix(unit, "/s"); ok {
		name = strings.TrimSuffix(name, "_per_second")
		unit = perSecond
	}
	switch unit {
	case "s":
		name = strings.TrimSuffix(name, "_seconds")
	case "By":
		name = strings.TrimSuffix(name, "_bytes")
	case "1":
		name = strings.TrimSuffix(name, "_ratio")
	}
	return name
}

// families is the exposition under construction.
type families struct {
	runID string
	list  []*family
	index map[string]*family
}

func newFamilies(runID string) *families {
	return &families{runID: runID, index: map[string]*family{}}
}

// add appends a point to the family name (made on first use with help,
// kind, unit and the label names after run_id); values are the labels'
// values in that order.
func (fs *families) add(name, help string, k kind, unit string, labels []string, values []string, v float64, h *hist) {
	f := fs.index[name]
	if f == nil {
		f = &family{Name: name, Help: help, Kind: k, Unit: unit, Labels: append([]string{"run_id"}, labels...)}
		fs.index[name] = f
		fs.list = append(fs.list, f)
	}
	f.Points = append(f.Points, point{Values: append([]string{fs.runID}, values...), Value: v, Hist: h})
}

// set and hist add a point of one of pipebench's own families (specs),
// without labels but run_id or with label pairs name, value, name, value...
func (fs *families) set(name string, v float64, kv ...string) { fs.own(name, v, nil, kv) }

func (fs *families) hist(name string, h hist) { fs.own(name, 0, &h, nil) }

func (fs *families) own(name string, v float64, h *hist, kv []string) {
	sp := specs[name]
	n, vs := split(kv)
	fs.add(name, sp.help, sp.kind, sp.unit, n, vs, v, h)
}

// stateset adds a gauge with one series per state, label label: 1 for the
// state now, 0 for every other. Behind a cache of last values (a
// collector's Prometheus exporter) every state is overwritten at each
// push, so only the current one reads 1.
func (fs *families) stateset(name, label string, states []string, now string) {
	seen := map[string]bool{}
	for _, s := range states {
		if seen[s] {
			continue
		}
		seen[s] = true
		v := 0.0
		if s == now {
			v = 1
		}
		fs.set(name, v, label, s)
	}
}

func split(kv []string) (names, values []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		names = append(names, kv[i])
		values = append(values, kv[i+1])
	}
	return names, values
}

// addLabeled adds a point whose labels come as a map. Every point of a
// family carries the same label names: the union of what its points came
// with (an observer's series of one name can differ in labels), missing
// values empty.
func (fs *families) addLabeled(name, help string, k kind, unit string, labels map[string]string, v float64) {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := fs.index[name]
	if f == nil {
		fs.add(name, help, k, unit, keys, valuesOf(labels, keys), v, nil)
		return
	}
	for _, key := range keys {
		if !slices.Contains(f.Labels, key) {
			f.Labels = append(f.Labels, key)
			for i := range f.Points {
				f.Points[i].Values = append(f.Points[i].Values, "")
			}
		}
	}
	f.Points = append(f.Points, point{Values: append([]string{fs.runID}, valuesOf(labels, f.Labels[1:])...), Value: v})
}

func valuesOf(labels map[string]string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = labels[k]
	}
	return out
}
