package metricsout

import (
	"regexp"
	"strings"

	"github.com/pipebench/pipebench"
)

// ObservedPrefix starts the name of every series an observer reported
// about the system under test (the collector's accepted and exported
// items, its queue, memory and CPU per instance, a broker's pending
// messages), exported beside pipebench's own: pipebench_observed_NAME with
// the observer's labels, an instance label renamed sut_instance (and job,
// sut_job) so that it does not clash with the scrape's own.
//
// Counters keep their running totals (NAME_total: PromQL's rate() gives
// the KPI table's rates); gauges their last value, memory in bytes
// (pipebench_observed_memory_bytes) and milliseconds in seconds. Rates the
// observers' counters were turned into (NAME_rate, cpu_cores) are left
// out: they are rate() of the totals.
const ObservedPrefix = "pipebench_observed_"

// own are the series the runner writes about pipebench itself; they are
// exported under their own names (or are the counters' rates).
var own = map[string]bool{
	"target_rate": true, "sent_rate": true, "accepted_rate": true, "delivered_rate": true,
	"backlog": true, "connections_open": true, "in_flight": true, "schedule_lag_ms": true,
	"latency_p50_ms": true, "latency_p90_ms": true, "latency_p99_ms": true,
	"e2e_p50_ms": true, "e2e_p90_ms": true, "e2e_p99_ms": true, "failed_rate": true, "faulted_rate": true,
}

var notName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// addObserved adds the last value of every observed series.
func (fs *families) addObserved(series []pipebench.Series) {
	for _, s := range series {
		if len(s.Points) == 0 || own[s.Name] {
			continue
		}
		name, v := notName.ReplaceAllString(s.Name, "_"), s.Points[len(s.Points)-1].V
		switch {
		case strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count"):
			continue // a histogram's parts: its quantiles are KPIs, not series
		case s.Kind == pipebench.KindCounter:
			unit := "{item}"
			switch {
			case strings.HasSuffix(name, "_seconds"):
				unit = "s"
			case strings.HasSuffix(name, "_bytes"):
				unit = "By"
			}
			fs.addLabeled(ObservedPrefix+name+"_total", "What the system under test counted (its observer's "+s.Name+"), running total.",
				counter, unit, observedLabels(s.Labels), v)
			continue
		}
		unit := "{item}"
		switch s.Unit {
		case pipebench.UnitPerSecond, pipebench.UnitCores:
			continue
		case pipebench.UnitMB:
			name, v, unit = strings.TrimSuffix(name, "_mb")+"_bytes", v*(1<<20), "By"
		case pipebench.UnitMillis:
			name, v, unit = strings.TrimSuffix(name, "_ms")+"_seconds", v/1000, "s"
		case pipebench.UnitSeconds:
			if !strings.HasSuffix(name, "_seconds") {
				name += "_seconds"
			}
			unit = "s"
		case pipebench.UnitRatio:
			if !strings.HasSuffix(name, "_ratio") {
				name += "_ratio"
			}
			unit = "1"
		}
		if strings.HasSuffix(name, "_rate") {
			continue
		}
		fs.addLabeled(ObservedPrefix+name, "What the system under test reports (its observer's "+s.Name+"), last value.",
			gauge, unit, observedLabels(s.Labels), v)
	}
}

// observedLabels are an observed series' labels as exported.
func observedLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		k = notName.ReplaceAllString(k, "_")
		switch k {
		case "instance", "job", "run_id":
			k = "sut_" + k
		}
		if k == "" || k[0] >= '0' && k[0] <= '9' || strings.HasPrefix(k, "__") {
			k = "l_" + k
		}
		out[k] = v
	}
	return out
}
