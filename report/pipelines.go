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
		for _, sp := range []struct {
			label string
			cell  func(p *pipebench.PhaseResult) (string, bool)
		}{
			{"delivered/s", pipelineKPI("pipeline_delivered_rate", name)},
			{"delivered", pipelineKPI("pipeline_delivered", name)},
			{"lost", pipelineKPI("pipeline_lost", name)},
			{"duplicates", pipelineKPI("pipeline_duplicates", name)},
			{"faulted by sink", pipelineKPI("pipeline_faulted", name)},
			{"e2e p50", pipelineKPI("pipeline_e2e_latency.p50", name)},
			{"e2e p99", pipelineKPI("pipeline_e2e_latency.p99", name)},
			{"exporter sent/s", exporterKPI("per_exporter_sent_rate", name)},
			{"exporter failed/s", exporterKPI("per_exporter_failed_rate", name)},
			{"exporter queue max", exporterKPI("per_exporter_queue_size.max", name)},
		} {
			cells := make([]string, len(phases))
			any := false
			for i, p := range phases {
				if v, ok := sp.cell(p); ok {
					cells[i], any = v, true
				} else {
					cells[i] = "-"
				}
			}
			if any {
				out = append(out, Row{Group: "pipeline " + name, Label: sp.label, Cells: cells})
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
		sort.Slice(ks, func(i, j int) bool { return ks[i].Labels["instance"] < ks[j].Labels["instance"] })
		parts := make([]string, len(ks))
		for i, k := range ks {
			parts[i] = Number(k.Value)
		}
		return strings.Join(parts, ", "), true
	}
}
