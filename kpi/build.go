package kpi

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
)

// Quantiles are the latency quantiles every phase reports, with the suffix
// used in KPI names.
var Quantiles = []struct {
	Suffix string
	Q      float64
}{
	{"p50", 50}, {"p75", 75}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}, {"p9999", 99.99},
}

// PhaseInput is everything known about one phase once it is over.
type PhaseInput struct {
	Name       string
	Started    time.Time
	Ended      time.Time
	TargetRate float64 // planned items per second over the phase
	Sends      SendStats
	// Arrivals is nil when the run has no sink.
	Arrivals *ArrivalStats
	Faulted  uint64
	// Generator is what pipebench's own process spent while the phase
	// ran; nil when not measured (a merge of shards).
	Generator *GeneratorUse
}

// GeneratorUse is what pipebench's own process spent over a stretch of
// time, to tell its own limit from the system's.
type GeneratorUse struct {
	// CPU is the process's CPU time, user and system.
	CPU time.Duration
	// Wait is how long its threads were ready to run but waited for a
	// CPU that something else held (Linux: schedstat's run delay, summed
	// over its threads; 0 where unknown).
	Wait time.Duration
	// CPUs is how many CPUs it may use at once (GOMAXPROCS).
	CPUs int
}

// Build computes the KPIs of one phase from its samples, its arrivals and
// the series observed during the run (only the points inside the phase's
// window are used).
func Build(in PhaseInput, series []pipebench.Series) pipebench.PhaseResult {
	p := pipebench.PhaseResult{Name: in.Name, Started: in.Started, Ended: in.Ended}
	secs := in.Ended.Sub(in.Started).Seconds()
	rate := func(n uint64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	add := func(name string, v float64, u pipebench.Unit, labels ...string) {
		k := pipebench.KPI{Name: name, Value: v, Unit: u}
		if len(labels) > 0 {
			k.Labels = map[string]string{}
			for i := 0; i+1 < len(labels); i += 2 {
				k.Labels[labels[i]] = labels[i+1]
			}
		}
		p.KPIs = append(p.KPIs, k)
	}
	s := in.Sends
	// sent counts what left pipebench; what the system under test held
	// back (held_back) and what pipebench missed (missed) are apart, so
	// that target = sent + held_back + missed for a phase that ran to its
	// end.
	sent := s.SentItems()
	accepted := s.Items[pipebench.ClassOK]
	held := s.HeldBackItems()
	if in.TargetRate > 0 { // 0: a closed-model phase, which has no target
		add("target_rate", in.TargetRate, pipebench.UnitPerSecond)
	}
	add("sent_rate", rate(sent), pipebench.UnitPerSecond)
	add("accepted_rate", rate(accepted), pipebench.UnitPerSecond)
	add("sent", float64(sent), pipebench.UnitCount)
	add("accepted", float64(accepted), pipebench.UnitCount)
	if s.AcceptedBytes > 0 { // 0: a driver that sends no body of bytes
		add("accepted_bytes", float64(s.AcceptedBytes), pipebench.UnitCount)
		add("accepted_mb_rate", rate(s.AcceptedBytes)/1e6, pipebench.UnitMBPerSecond)
	}
	add("held_back", float64(held), pipebench.UnitCount)
	add("held_back_rate", rate(held), pipebench.UnitPerSecond)
	for _, reason := range sortedKeys(s.HeldBack) {
		add("held_back", float64(s.HeldBack[reason]), pipebench.UnitCount, "reason", reason)
	}
	if after := heldAfter(s, in.Started); !math.IsNaN(after) {
		add(HeldAfter, after, pipebench.UnitSeconds)
	}
	add("missed", float64(s.Missed), pipebench.UnitCount)
	// dropped: every planned item not sent, whoever's limit it was.
	add("dropped", float64(held+s.Missed), pipebench.UnitCount)
	if s.Abandoned > 0 {
		add("abandoned", float64(s.Abandoned), pipebench.UnitCount)
	}
	for _, c := range []pipebench.Class{pipebench.ClassRefused, pipebench.ClassTimeout, pipebench.ClassError} {
		add("errors", float64(s.Items[c]), pipebench.UnitCount, "class", c.String())
	}
	if s.Latency != nil && s.Latency.TotalCount() > 0 {
		addQuantiles(add, "latency", s.Latency)
		addQuantiles(add, "service_time", s.Service)
		if s.Wait != nil && s.Wait.TotalCount() > 0 {
			addQuantiles(add, "wait", s.Wait)
		}
		// OMB's publish delay: how late each send started against its
		// scheduled time.
		addQuantiles(add, "schedule_lag", s.Lag)
		if s.ReadLag != nil && s.ReadLag.TotalCount() > 0 {
			add("read_lag.p99", ms(s.ReadLag.ValueAtQuantile(99)), pipebench.UnitMillis)
			add("read_lag.max", ms(s.ReadLag.Max()), pipebench.UnitMillis)
		}
	}
	if g := in.Generator; g != nil && secs > 0 {
		add("generator_cpu_cores", g.CPU.Seconds()/secs, pipebench.UnitCores)
		add("generator_cpu_wait", g.Wait.Seconds()/secs, pipebench.UnitCores)
		add("generator_cpus", float64(g.CPUs), pipebench.UnitCount)
	}
	if a := in.Arrivals; a != nil {
		add("delivered_rate", rate(a.Delivered), pipebench.UnitPerSecond)
		add("delivered", float64(a.Delivered), pipebench.UnitCount)
		if a.E2E != nil && a.E2E.TotalCount() > 0 {
			for _, q := range Quantiles {
				add("e2e_latency."+q.Suffix, ms(a.E2E.ValueAtQuantile(q.Q)), pipebench.UnitMillis)
			}
			add("e2e_latency.max", ms(a.E2E.Max()), pipebench.UnitMillis)
		}
		add("lost", float64(a.Lost), pipebench.UnitCount)
		add("duplicates", float64(a.Duplicates), pipebench.UnitCount)
		add("reordered", float64(a.Reordered), pipebench.UnitCount)
		add("faulted", float64(in.Faulted), pipebench.UnitCount)
		p.KPIs = append(p.KPIs, PipelineKPIs(a.Pipelines, secs)...)
	}
	p.KPIs = append(p.KPIs, ObservedKPIs(series, in.Started, in.Ended)...)
	return p
}

func addQuantiles(add func(string, float64, pipebench.Unit, ...string), name string, h *hdrhistogram.Histogram) {
	for _, q := range Quantiles {
		add(name+"."+q.Suffix, ms(h.ValueAtQuantile(q.Q)), pipebench.UnitMillis)
	}
	add(name+".max", ms(h.Max()), pipebench.UnitMillis)
	add(name+".mean", h.Mean()/1000, pipebench.UnitMillis)
}

// ms converts µs to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }

// ObservedKPIs computes the pipeline KPIs of a window [from, to] from the
// series observers produced (after Derive): series whose name ends in
// "_rate" or is "cpu_cores" give their mean over the window; "memory_mb"
// gives its max; a raw counter gives NAME.total (its value at the end of the
// window); any other gauge gives NAME.max and NAME.last. Series the
// runner writes itself (target_rate, sent_rate, ...) are skipped: their KPIs
// come from exact counts. Histograms reported as NAME_bucket counters give
// their quantiles over the window (HistogramKPIs). A series with no point
// inside the window but one before it (every scrape in the window failed)
// gives its KPIs from that last reading, marked LastReading.
func ObservedKPIs(series []pipebench.Series, from, to time.Time) []pipebench.KPI {
	var out []pipebench.KPI
	for _, s := range series {
		if runnerSeries[s.Name] || isHistogramPart(s.Name) {
			continue
		}
		var pts []pipebench.TimeValue
		for _, tv := range s.Points {
			if !tv.T.Before(from) && !tv.T.After(to) {
				pts = append(pts, tv)
			}
		}
		stale := false
		if len(pts) == 0 {
			// No reading inside the window (a failed scrape): the last
			// one before it stands in, marked, so the row survives.
			i := sort.Search(len(s.Points), func(i int) bool { return !s.Points[i].T.Before(from) })
			if i == 0 || isHistogramPart(s.Name) {
				continue
			}
			pts, stale = s.Points[i-1:i], true
		}
		n := len(out)
		switch {
		case s.Kind == pipebench.KindCounter:
			// A raw counter: its value at the end of the window, the
			// pipeline's own running total.
			out = append(out, pipebench.KPI{Name: s.Name + ".total", Labels: s.Labels, Value: pts[len(pts)-1].V, Unit: pipebench.UnitCount})
		case strings.HasSuffix(s.Name, "_rate") || s.Name == "cpu_cores":
			out = append(out, pipebench.KPI{Name: s.Name, Labels: s.Labels, Value: rateMean(s.Points, pts), Unit: s.Unit})
		case s.Name == "memory_mb":
			out = append(out, pipebench.KPI{Name: s.Name, Labels: s.Labels, Value: maxOf(pts), Unit: s.Unit})
		default:
			out = append(out,
				pipebench.KPI{Name: s.Name + ".max", Labels: s.Labels, Value: maxOf(pts), Unit: s.Unit},
				pipebench.KPI{Name: s.Name + ".last", Labels: s.Labels, Value: pts[len(pts)-1].V, Unit: s.Unit})
		}
		for i := n; stale && i < len(out); i++ {
			out[i].LastReading = true
		}
	}
	out = append(out, HistogramKPIs(series, from, to)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// runnerSeries are the series the runner derives from its own counts.
var runnerSeries = map[string]bool{
	"target_rate": true, "sent_rate": true, "accepted_rate": true, "delivered_rate": true, "held_back_rate": true,
	"backlog": true, "schedule_lag_ms": true, "in_flight": true,
	"latency_p50_ms": true, "latency_p90_ms": true, "latency_p99_ms": true,
	"failed_rate": true, "faulted_rate": true, "e2e_p50_ms": true, "e2e_p90_ms": true, "e2e_p99_ms": true,
}

// rateMean is the mean of the rate points pts (a window of the series
// all), each weighted by the time it covers: since the point before it in
// the series (a derived rate is the counter's growth over exactly that
// time). An interval in which the system could not be observed (a hung
// process) then counts for its length, not for one point; with even
// intervals it is the plain mean.
func rateMean(all, pts []pipebench.TimeValue) float64 {
	if len(pts) < 2 || len(all) < 2 {
		return mean(pts)
	}
	var sum, span float64
	for _, p := range pts {
		i := sort.Search(len(all), func(i int) bool { return !all[i].T.Before(p.T) })
		var w float64
		switch {
		case i > 0:
			w = p.T.Sub(all[i-1].T).Seconds()
		case i+1 < len(all):
			w = all[i+1].T.Sub(p.T).Seconds() // the first point: as long as the next gap
		}
		if w <= 0 {
			continue
		}
		sum += p.V * w
		span += w
	}
	if span <= 0 {
		return mean(pts)
	}
	return sum / span
}

func mean(pts []pipebench.TimeValue) float64 {
	var s float64
	for _, p := range pts {
		s += p.V
	}
	return s / float64(len(pts))
}

func maxOf(pts []pipebench.TimeValue) float64 {
	m := math.Inf(-1)
	for _, p := range pts {
		m = math.Max(m, p.V)
	}
	return m
}
