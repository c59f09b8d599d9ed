package resulttest

import (
	"math"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// WithSeries gives r (a Pipeline result) series over its three minutes, a
// point every 5 s, shaped like a real backpressure run: the exporter falls
// behind in the second phase, its queue and the backlog grow and memory
// with them, and the third phase drains them. It returns r.
func WithSeries(r *pipebench.Result) *pipebench.Result {
	acc, _ := r.Phases[0].Get("accepted_rate")
	start := r.Manifest.Started
	type gen struct {
		name   string
		labels map[string]string
		unit   pipebench.Unit
		f      func(sec float64) float64
	}
	inst := func(i string) map[string]string { return map[string]string{"instance": "collector-" + i} }
	// exported(s): the exporter keeps up, then sends 30%, then catches up.
	exported := func(s float64) float64 {
		switch {
		case s < 60:
			return acc
		case s < 120:
			return 0.3 * acc
		case s < 150:
			return 1.4 * acc
		}
		return acc
	}
	queue := func(s float64) float64 {
		switch {
		case s < 60:
			return 0
		case s < 120:
			return (s - 60) / 60 * 509
		case s < 150:
			return 509 * (150 - s) / 30
		}
		return 0
	}
	wobble := func(s float64) float64 { return 1 + 0.02*math.Sin(s/7) }
	gens := []gen{
		{"target_rate", nil, pipebench.UnitPerSecond, func(float64) float64 { return acc }},
		{"sent_rate", nil, pipebench.UnitPerSecond, func(s float64) float64 { return acc * wobble(s) }},
		{"accepted_rate", nil, pipebench.UnitPerSecond, func(s float64) float64 { return acc * wobble(s) }},
		{"receiver_accepted_rate", inst("0"), pipebench.UnitPerSecond, func(s float64) float64 { return acc * wobble(s) }},
		{"exporter_sent_rate", inst("0"), pipebench.UnitPerSecond, exported},
		{"delivered_rate", nil, pipebench.UnitPerSecond, exported},
		{"exporter_queue_size", inst("0"), pipebench.UnitCount, queue},
		{"backlog", nil, pipebench.UnitCount, func(s float64) float64 { return queue(s) * 100 }},
		{"memory_mb", inst("0"), pipebench.UnitMB, func(s float64) float64 { return 137 + queue(s)*3.5 }},
		{"memory_mb", inst("1"), pipebench.UnitMB, func(s float64) float64 { return 139 + queue(s)*3.1 }},
		{"cpu_cores", inst("0"), pipebench.UnitCores, func(s float64) float64 { return 0.9 * wobble(s) }},
		{"cpu_cores", inst("1"), pipebench.UnitCores, func(s float64) float64 { return 1.1 * wobble(s) }},
		{"latency_p50_ms", nil, pipebench.UnitMillis, func(s float64) float64 { return 0.42 * wobble(s) }},
		{"latency_p90_ms", nil, pipebench.UnitMillis, func(s float64) float64 { return 0.9 * wobble(s) }},
		{"latency_p99_ms", nil, pipebench.UnitMillis, func(s float64) float64 { return 4.2 * wobble(s) }},
	}
	r.Series = nil
	for _, g := range gens {
		s := pipebench.Series{Name: g.name, Labels: g.labels, Unit: g.unit}
		for sec := 5.0; sec <= 180; sec += 5 {
			s.Points = append(s.Points, pipebench.TimeValue{T: start.Add(time.Duration(sec) * time.Second), V: math.Round(g.f(sec)*100) / 100})
		}
		r.Series = append(r.Series, s)
	}
	return r
}

// WithFaults gives r (a Pipeline result with WithSeries) what a run in
// which things went wrong adds: the sink refused items in the second
// phase (sends refused by the target, sink faults), end-to-end latency
// over time, a drain after the last phase, and a total column with the
// latency quantiles and the count of items at each stage (sent, answered
// ok, accepted and exported by the pipeline, delivered). It returns r.
func WithFaults(r *pipebench.Result) *pipebench.Result {
	acc, _ := r.Phases[0].Get("accepted_rate")
	start := r.Manifest.Started
	bad := func(s float64) bool { return s >= 60 && s < 120 }
	gens := []struct {
		name   string
		labels map[string]string
		f      func(sec float64) float64
	}{
		{"failed_rate", map[string]string{"class": "refused"}, func(s float64) float64 {
			if bad(s) {
				return 0.02 * acc
			}
			return 0
		}},
		{"failed_rate", map[string]string{"class": "timeout"}, func(float64) float64 { return 0 }},
		{"faulted_rate", nil, func(s float64) float64 {
			if bad(s) {
				return 0.7 * acc
			}
			return 0
		}},
		{"e2e_p50_ms", nil, func(s float64) float64 { return 210 + 40*math.Max(0, math.Min(s, 150)-60) }},
		{"e2e_p90_ms", nil, func(s float64) float64 { return 400 + 70*math.Max(0, math.Min(s, 150)-60) }},
		{"e2e_p99_ms", nil, func(s float64) float64 { return 980 + 110*math.Max(0, math.Min(s, 150)-60) }},
	}
	for _, g := range gens {
		s := pipebench.Series{Name: g.name, Labels: g.labels, Unit: pipebench.UnitPerSecond}
		if strings.HasSuffix(g.name, "_ms") {
			s.Unit = pipebench.UnitMillis
		}
		for sec := 5.0; sec <= 180; sec += 5 {
			s.Points = append(s.Points, pipebench.TimeValue{T: start.Add(time.Duration(sec) * time.Second), V: math.Round(g.f(sec)*100) / 100})
		}
		r.Series = append(r.Series, s)
	}
	last := r.Phases[len(r.Phases)-1].Ended
	r.Drain = &pipebench.PhaseResult{Name: "drain", Started: last, Ended: last.Add(20 * time.Second),
		KPIs: []pipebench.KPI{k("delivered", 1200, pipebench.UnitCount)}}
	sent := acc * 180
	r.Total = &pipebench.PhaseResult{Name: "total", Started: start, Ended: last.Add(20 * time.Second), KPIs: []pipebench.KPI{
		k("sent", sent, pipebench.UnitCount), k("accepted", sent-1281, pipebench.UnitCount),
		k("errors", 1281, pipebench.UnitCount, "class", "refused"),
		k("receiver_accepted.total", sent-1281, pipebench.UnitCount, "instance", "collector-0"),
		k("exporter_sent.total", sent-1281-120, pipebench.UnitCount, "instance", "collector-0"),
		k("delivered", sent-1281-120, pipebench.UnitCount), k("lost", 120, pipebench.UnitCount), k("faulted", 0.7*acc*60, pipebench.UnitCount),
		k("latency.p50", 0.09, pipebench.UnitMillis), k("latency.p75", 0.2, pipebench.UnitMillis), k("latency.p90", 1.1, pipebench.UnitMillis),
		k("latency.p95", 3.5, pipebench.UnitMillis), k("latency.p99", 51.9, pipebench.UnitMillis), k("latency.p999", 140, pipebench.UnitMillis), k("latency.max", 320, pipebench.UnitMillis),
		k("e2e_latency.p50", 1200, pipebench.UnitMillis), k("e2e_latency.p90", 6100, pipebench.UnitMillis), k("e2e_latency.p99", 10300, pipebench.UnitMillis), k("e2e_latency.max", 11800, pipebench.UnitMillis),
	}}
	return r
}
