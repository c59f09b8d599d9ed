package pipebench

import (
	"slices"
	"sort"
	"time"
)

// Detector is the optional ability of a plug-in to read, in a Result, the
// series it records under names of its own, and find the patterns only
// they show (the nats observer's full storage of one node or all, a
// stream that takes messages in but dispatches none, a node restarting).
// A plug-in declares it with its factory (Factory.WithDetector), so that
// a Result read back later, or merged from shards, is read the same way
// as when it was assembled: kpi.Assemble and kpi.Merge run the detectors
// their callers found in the Registry for the plan's plug-ins
// (Registry.Detectors), after the general ones, which read only the KPI
// names every plug-in shares.
//
// Detect reads r.Series, r.Phases, r.Plan and r.Total, returns what it
// found (each with the time it began and a message in plain words), and
// may set on r.Total and r.Phases the KPIs it derives from those series
// (a stream's drain time). It is called once per Result, whatever the
// number of the plug-in's instances in the plan.
type Detector interface {
	Detect(r *Result) []Detection
}

// DetectorFunc is a Detector made of a function.
type DetectorFunc func(r *Result) []Detection

// Detect calls f.
func (f DetectorFunc) Detect(r *Result) []Detection { return f(r) }

// PauseReporter is the optional ability of a Detector to say that its
// plug-in's series show delivery paused on purpose at t (a consumer the
// sink paused): the general stall detector does not count that time as
// a stall, as it does not count a planned outage (Result.InOutage).
type PauseReporter interface {
	Paused(r *Result, t time.Time) bool
}

// WithDetector returns f declaring d, the plug-in's own reading of a
// Result's series (see Detector).
func (f Factory[T]) WithDetector(d Detector) Factory[T] {
	f.Detector = d
	return f
}

// Detectors returns the Detectors of the plug-ins p names (its observers
// in order, then its system under test, sink, driver and generator), each
// kind of plug-in once however many times it is named. A type the
// registry does not know (a Result of a build with other plug-ins) has
// none.
func (r *Registry) Detectors(p Plan) []Detector {
	var out []Detector
	seen := map[string]bool{}
	add := func(kind, name string, d Detector) {
		if d == nil || seen[kind+"/"+name] {
			return
		}
		seen[kind+"/"+name] = true
		out = append(out, d)
	}
	for _, c := range p.Observers {
		f, _ := r.Observers.Lookup(c.Type)
		add("observer", c.Type, f.Detector)
	}
	if p.SUT != nil {
		f, _ := r.SUTs.Lookup(p.SUT.Type)
		add("sut", p.SUT.Type, f.Detector)
	}
	if p.Sink != nil {
		f, _ := r.Sinks.Lookup(p.Sink.Type)
		add("sink", p.Sink.Type, f.Detector)
	}
	f, _ := r.Drivers.Lookup(p.Target.Type)
	add("driver", p.Target.Type, f.Detector)
	g, _ := r.Generators.Lookup(p.Workload.Type)
	add("generator", p.Workload.Type, g.Detector)
	return out
}

// InOutage reports whether t falls in a sink outage r's plan asked for (a
// phase's faults.outages, measured from the phase's start), or up to two
// observation intervals after one, while delivery picks up again: nothing
// delivered then is the plan, not a failure.
func (r *Result) InOutage(t time.Time) bool {
	slack := 2 * r.Plan.Interval.D()
	for _, ph := range r.Phases {
		var faults FaultPolicy
		for _, pp := range r.Plan.Phases {
			if pp.Name == ph.Name {
				faults = pp.Faults
				break
			}
		}
		for _, w := range faults.Outages {
			from := ph.Started.Add(w.Start.D())
			if !t.Before(from) && t.Before(from.Add(w.Duration.D()+slack)) {
				return true
			}
		}
	}
	return false
}

// SeriesByName groups series by name, each name's in their order.
func SeriesByName(series []Series) map[string][]Series {
	byName := map[string][]Series{}
	for _, s := range series {
		byName[s.Name] = append(byName[s.Name], s)
	}
	return byName
}

// PointAt returns the value of the last of pts (in time order) at or
// before t; false when none is.
func PointAt(pts []TimeValue, t time.Time) (float64, bool) {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].T.After(t) })
	if i == 0 {
		return 0, false
	}
	return pts[i-1].V, true
}

// ValueAt is the value of the last of pts at or before t, or of the first
// when t is before them all. pts must not be empty.
func ValueAt(pts []TimeValue, t time.Time) float64 {
	v := pts[0].V
	for _, p := range pts {
		if p.T.After(t) {
			break
		}
		v = p.V
	}
	return v
}

// Slope is the least-squares slope of pts, per second (0 when their times
// do not spread).
func Slope(pts []TimeValue) float64 {
	n := float64(len(pts))
	t0 := pts[0].T
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		x := p.T.Sub(t0).Seconds()
		sx += x
		sy += p.V
		sxx += x * x
		sxy += x * p.V
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// Summed returns the points of ss inside [from, to] added up by time (the
// instances of one series summed), in time order.
func Summed(ss []Series, from, to time.Time) []TimeValue {
	sum := map[time.Time]float64{}
	var order []time.Time
	for _, s := range ss {
		for _, p := range s.Points {
			if p.T.Before(from) || p.T.After(to) {
				continue
			}
			if _, seen := sum[p.T]; !seen {
				order = append(order, p.T)
			}
			sum[p.T] += p.V
		}
	}
	slices.SortFunc(order, func(a, b time.Time) int { return a.Compare(b) })
	out := make([]TimeValue, len(order))
	for i, t := range order {
		out[i] = TimeValue{T: t, V: sum[t]}
	}
	return out
}
