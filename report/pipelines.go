package report

import (
	"sort"
	"strings"

	"github.com/pipebench/pipebench"
)

// perPipeline reports whether a KPI is one of the per-pipeline KPIs that
// pipelineRows shows: the sink's account of each pipeline (pipeline_*) and
// the collector's exporter metrics split by exporter (per_exporter_*).
func perPipeline(name string) bool {
	return strings.HasPrefix(name, "pipeline_") || strings.HasPrefix(name, "per_exporter_")
}

// pipelineRows shows, when the sink told several pipelines apart, a group
// of rows per pipeline ("pipeline p2"): what the sink got from it
// (delivered, lost, duplicates, faulted, e2e latency) and what the
// collector's exporter of that pipeline (the exporter whose name ends in
// /p2) sent, failed and queued, per instance.
func pipelineRows(phases []*pipebench.PhaseResult) []Row {
	seen := map[string]bool{}
	for _, p := range phases {
		for _, k := range p.KPIs {
			if strings.HasPrefix(k.Name, "pipeline_") && k.Labels["pipeline"] != "" {
				seen[k.Labels["pipeline"]] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return pipelineLess(names[i], names[j]) })
	var out []Row
	for _, name := range names {
		for _, sp := range []spec{
			{label: "delivered/s", cell: pipelineKPI("pipeline_delivered_rate", name)},
			{label: "delivered", cell: pipelineKPI("pipeline_delivered", name)},
			{label: "missing (accepted, not arrived)", cell: pipelineKPI("pipeline_missing", name)},
			{label: "unread at the source", cell: pipelineKPI("pipeline_unread_at_source", name)},
			{label: "pending at end", cell: pipelineKPI("pipeline_pending_at_end", name)},
			{label: "lost", cell: pipelineKPI("pipeline_lost", name)},
			{label: "unaccounted for", cell: pipelineKPI("pipeline_unaccounted", name)},
			{label: "duplicates", cell: pipelineKPI("pipeline_duplicates", name)},
			{label: "faulted by sink", cell: pipelineKPI("pipeline_faulted", name)},
			{label: "e2e p50", cell: pipelineKPI("pipeline_e2e_latency.p50", name)},
			{label: "e2e p99", cell: pipelineKPI("pipeline_e2e_latency.p99", name)},
			{label: "exporter sent/s", cell: exporterKPI("per_exporter_sent_rate", name)},
			{label: "exporter failed/s", cell: exporterKPI("per_exporter_failed_rate", name)},
			{label: "exporter queue max", cell: exporterKPI("per_exporter_queue_size.max", name)},
		} {
			if row, ok := sp.row("pipeline "+name, phases); ok {
				out = append(out, row)
			}
		}
	}
	return out
}

// pipelineLess orders p2 before p10.
func pipelineLess(a, b string) bool {
	if len(a) != len(b) && strings.TrimRight(a, "0123456789") == strings.TrimRight(b, "0123456789") {
		return len(a) < len(b)
	}
	return a < b
}

func pipelineKPI(name, pipeline string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		for _, k := range p.KPIs {
			if k.Name == name && len(k.Labels) == 1 && k.Labels["pipeline"] == pipeline {
				return Value(k), true
			}
		}
		return "", false
	}
}

// exporterKPI shows, per instance, the KPI of the exporter that belongs to
// the pipeline: its name is TYPE/PIPELINE (otlp/p2).
func exporterKPI(name, pipeline string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		var ks []pipebench.KPI
		for _, k := range p.KPIs {
			if e := k.Labels["exporter"]; k.Name == name && strings.HasSuffix(e, "/"+pipeline) {
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 {
			return "", false
		}
		// The row's label says the unit: no "/s" on the values.
		return byInstance(ks, false), true
	}
}
