package report

import "github.com/pipebench/pipebench"

// Row is one line of the KPI table: a group (load, latency, pipeline,
// sink), a label and one cell per phase ("-" where the phase lacks it).
type Row struct {
	Group, Label string
	Cells        []string
}

// spec says how to get one row's cell from a phase.
type spec struct {
	group, label string
	cell         func(p *pipebench.PhaseResult) (string, bool)
}

// Table returns the columns (the phases, then the total) and the rows of
// the KPI table every human-facing report shows, leaving out rows no phase
// has.
func Table(r *pipebench.Result) ([]*pipebench.PhaseResult, []Row) {
	phases := Phases(r)
	var out []Row
	for _, sp := range specs(r.Manifest.Item) {
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
			out = append(out, Row{Group: sp.group, Label: sp.label, Cells: cells})
		}
	}
	return phases, out
}

func kpi(name string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		for _, k := range p.KPIs {
			if k.Name == name && len(k.Labels) == 0 {
				return Value(k), true
			}
		}
		return "", false
	}
}

func labelled(name, label, value string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		v, ok := p.Get(name, label, value)
		if !ok || v == 0 {
			return "0", ok
		}
		return Number(v), true
	}
}

func yesNo(name string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		v, ok := p.Get(name)
		if !ok {
			return "", false
		}
		if v != 0 {
			return "yes", true
		}
		return "no", true
	}
}

func perInstance(name string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) { return PerInstance(p, name) }
}

func specs(item string) []spec {
	items := item + "s"
	return []spec{
		{"load", "target " + items + "/s", kpi("target_rate")},
		{"load", "sent/s", kpi("sent_rate")},
		{"load", "accepted/s", kpi("accepted_rate")},
		{"load", "sent", kpi("sent")},
		{"load", "dropped", kpi("dropped")},
		{"load", "connections open", kpi("connections_open.max")},
		{"load", "errors refused", labelled("errors", "class", "refused")},
		{"load", "errors timeout", labelled("errors", "class", "timeout")},
		{"load", "errors other", labelled("errors", "class", "error")},
		{"latency", "p50", kpi("latency.p50")},
		{"latency", "p75", kpi("latency.p75")},
		{"latency", "p90", kpi("latency.p90")},
		{"latency", "p95", kpi("latency.p95")},
		{"latency", "p99", kpi("latency.p99")},
		{"latency", "p99.9", kpi("latency.p999")},
		{"latency", "max", kpi("latency.max")},
		{"latency", "wait p50 (for a connection)", kpi("wait.p50")},
		{"latency", "wait p99 (for a connection)", kpi("wait.p99")},
		{"latency", "service p50 (write to answer)", kpi("service_time.p50")},
		{"latency", "service p99 (write to answer)", kpi("service_time.p99")},
		{"latency", "schedule lag p99 (generator)", kpi("schedule_lag.p99")},
		{"pipeline", "receiver accepted/s", perInstance("receiver_accepted_rate")},
		{"pipeline", "receiver refused/s", perInstance("receiver_refused_rate")},
		{"pipeline", "exporter sent/s", perInstance("exporter_sent_rate")},
		{"pipeline", "exporter failed/s", perInstance("exporter_failed_rate")},
		{"pipeline", "exporter queue max", perInstance("exporter_queue_size.max")},
		{"pipeline", "memory MB", perInstance("memory_mb")},
		{"pipeline", "CPU cores", perInstance("cpu_cores")},
		{"sink", "delivered/s", kpi("delivered_rate")},
		{"sink", "delivered", kpi("delivered")},
		{"sink", "e2e p50", kpi("e2e_latency.p50")},
		{"sink", "e2e p99", kpi("e2e_latency.p99")},
		{"sink", "lost", kpi("lost")},
		{"sink", "duplicates", kpi("duplicates")},
		{"sink", "reordered", kpi("reordered")},
		{"sink", "faulted by sink", kpi("faulted")},
		{"sink", "drain time", kpi("drain_time")},
		{"sink", "backlog max", kpi("backlog.max")},
		{"limit", "stable", yesNo("stable")},
		{"limit", "sustainable rate", kpi("sustainable_rate")},
		{"limit", "± uncertainty", kpi("sustainable_rate.uncertainty")},
		{"limit", "first unstable rate", kpi("first_unstable_rate")},
		{"limit", "burst absorbed", kpi("burst_tolerance")},
		{"limit", "± uncertainty (burst)", kpi("burst_tolerance.uncertainty")},
		{"limit", "first burst not absorbed", kpi("first_unabsorbed_burst")},
		{"blast", "time to complete", kpi("time_to_complete")},
		{"blast", "peak backlog", kpi("peak_backlog")},
		{"blast", "completion rate", kpi("completion_rate")},
	}
}
