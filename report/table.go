package report

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

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
	name         string // the KPI the row shows
}

// Table returns the columns (the phases, then the total) and the rows of
// the KPI table every human-facing report shows, leaving out rows no phase
// has.
func Table(r *pipebench.Result) ([]*pipebench.PhaseResult, []Row) {
	phases := Phases(r)
	var out []Row
	for _, sp := range specs(r.Manifest.Item) {
		if row, ok := sp.row(sp.group, phases); ok {
			out = append(out, row)
		}
	}
	// The held-back reasons right under the held-back row.
	at := len(out)
	for i, row := range out {
		if row.Label == heldBackLabel {
			at = i + 1
		}
	}
	out = append(out[:at], append(heldRows(phases), out[at:]...)...)
	out = append(out, pipelineRows(phases)...)
	return phases, append(out, observedRows(r, phases)...)
}

// heldRows are the held-back items by reason, one row each ("held back:
// no free connection"), after the load rows.
func heldRows(phases []*pipebench.PhaseResult) []Row {
	var reasons []string
	for _, p := range phases {
		for _, k := range p.All("held_back") {
			if r := k.Labels["reason"]; r != "" && !slices.Contains(reasons, r) {
				reasons = append(reasons, r)
			}
		}
	}
	sort.Strings(reasons)
	var out []Row
	for _, r := range reasons {
		cells := make([]string, len(phases))
		for i, p := range phases {
			cells[i] = "-"
			if v, ok := p.Get("held_back", "reason", r); ok {
				cells[i] = Number(v)
			}
		}
		out = append(out, Row{Group: "load", Label: "  for " + r, Cells: cells})
	}
	return out
}

// heldBackLabel is the label of the held-back row.
const heldBackLabel = "held back by the system"

// heldBack is the held_back cell; a Result written before held_back
// existed shows its dropped items there (max_in_flight's, the system's).
func heldBack(p *pipebench.PhaseResult) (string, bool) {
	if v, ok := kpi("held_back")(p); ok {
		return v, true
	}
	return kpi("dropped")(p)
}

// nonZero is kpi(name) for a KPI shown only where it is not 0 in some
// phase (a row of zeros otherwise says nothing).
func nonZero(name string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		v, ok := p.Get(name)
		if !ok || v == 0 {
			return "", false
		}
		return Number(v), true
	}
}

// shown lists the KPIs the table's rows show or leave out on purpose (the
// finer quantiles of generator timings), so observedRows adds the others.
func shown(item string) map[string]bool {
	m := map[string]bool{"service_time": true, "schedule_lag": true, "read_lag": true, "wait": true, "latency.mean": true, "e2e_latency": true,
		"accepted": true, "accepted_bytes": true, "errors": true, "target_rate": true, "exporter_queue_size.last": true,
		"dropped": true, "held_back": true, "held_back_rate": true, "held_back.after": true, "generator_cpus": true}
	for _, sp := range specs(item) {
		m[sp.name] = true
	}
	return m
}

// maxObservedRows bounds the rows observedRows adds.
const maxObservedRows = 40

// observedRows shows the KPIs no row names: a scenario's own metrics (a
// PromQL query, a custom Prometheus mapping, an effect observer's
// latency), one row per name and labels, in the group "observed".
func observedRows(r *pipebench.Result, phases []*pipebench.PhaseResult) []Row {
	skip := shown(r.Manifest.Item)
	var keys []string
	byKey := map[string]pipebench.KPI{}
	for _, p := range phases {
		for _, k := range p.KPIs {
			base := k.Name
			if i := strings.IndexByte(base, '.'); i > 0 && (base[:i] == "service_time" || base[:i] == "schedule_lag" || base[:i] == "read_lag" || base[:i] == "wait" || base[:i] == "e2e_latency") {
				base = base[:i]
			}
			if skip[base] || skip[k.Name] || perPipeline(k.Name) || strings.HasPrefix(k.Name, "ledger_") || strings.HasPrefix(k.Name, "held_at_end") || strings.HasPrefix(k.Name, "unread_at_end") || strings.HasSuffix(k.Name, ".total") || strings.HasSuffix(k.Name, ".last") || strings.HasSuffix(k.Name, ".count") || strings.HasSuffix(k.Name, ".sum") {
				continue
			}
			if _, seen := byKey[k.Key()]; !seen {
				byKey[k.Key()] = k
				keys = append(keys, k.Key())
			}
		}
	}
	sort.Strings(keys)
	var out []Row
	for _, key := range keys {
		if len(out) == maxObservedRows {
			break
		}
		cells := make([]string, len(phases))
		for i, p := range phases {
			cells[i] = "-"
			for _, x := range p.KPIs {
				if x.Key() == key {
					cells[i] = Value(x)
				}
			}
		}
		out = append(out, Row{Group: "observed", Label: strings.ReplaceAll(key, "_", " "), Cells: cells})
	}
	return out
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

// ledgerTerm is a term of the ledger, or "unknown" when the pipeline's
// state could not be read (the summary says why).
func ledgerTerm(name string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		if s, ok := kpi(name)(p); ok {
			return s, true
		}
		for _, k := range p.All("ledger_unknown") {
			if k.Labels["term"] == name {
				return "unknown (see the ledger)", true
			}
		}
		if _, ok := p.Get("unaccounted"); ok {
			return "unknown", true
		}
		return "", false
	}
}

// lostCell is lost, or "unknown" when some missing items are
// unaccounted for.
func lostCell(p *pipebench.PhaseResult) (string, bool) {
	if s, ok := kpi("lost")(p); ok {
		return s, true
	}
	if _, ok := p.Get("unaccounted"); ok {
		return "unknown", true
	}
	return "", false
}

// drainTime is the time the backlog took to drain, or, when it never
// did, how long the drain waited for it.
func drainTime(p *pipebench.PhaseResult) (string, bool) {
	if s, ok := kpi("drain_time")(p); ok {
		return s, true
	}
	if w, ok := p.Get("drain_waited"); ok {
		return "not drained after " + pipebench.FormatDuration(time.Duration(w*float64(time.Second)).Round(100*time.Millisecond)), true
	}
	return "", false
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
		{"load", "target " + items + "/s", kpi("target_rate"), "target_rate"},
		{"load", "sent/s", kpi("sent_rate"), "sent_rate"},
		{"load", "accepted/s", kpi("accepted_rate"), "accepted_rate"},
		{"load", "accepted MB/s", kpi("accepted_mb_rate"), "accepted_mb_rate"},
		{"load", "sent", kpi("sent"), "sent"},
		{"load", heldBackLabel, heldBack, "held_back"},
		{"load", "missed by pipebench", nonZero("missed"), "missed"},
		{"load", "connections open", kpi("connections_open.max"), "connections_open.max"},
		{"load", "errors refused", labelled("errors", "class", "refused"), "errors"},
		{"load", "errors timeout", labelled("errors", "class", "timeout"), "errors"},
		{"load", "errors other", labelled("errors", "class", "error"), "errors"},
		{"latency", "p50", kpi("latency.p50"), "latency.p50"},
		{"latency", "p75", kpi("latency.p75"), "latency.p75"},
		{"latency", "p90", kpi("latency.p90"), "latency.p90"},
		{"latency", "p95", kpi("latency.p95"), "latency.p95"},
		{"latency", "p99", kpi("latency.p99"), "latency.p99"},
		{"latency", "p99.9", kpi("latency.p999"), "latency.p999"},
		{"latency", "p99.99", kpi("latency.p9999"), "latency.p9999"},
		{"latency", "max", kpi("latency.max"), "latency.max"},
		{"latency", "wait p50 (for a connection)", kpi("wait.p50"), "wait.p50"},
		{"latency", "wait p99 (for a connection)", kpi("wait.p99"), "wait.p99"},
		{"latency", "service p50 (write to answer)", kpi("service_time.p50"), "service_time.p50"},
		{"latency", "service p99 (write to answer)", kpi("service_time.p99"), "service_time.p99"},
		{"latency", "schedule lag p50 (pipebench)", kpi("schedule_lag.p50"), "schedule_lag.p50"},
		{"latency", "schedule lag p99 (pipebench)", kpi("schedule_lag.p99"), "schedule_lag.p99"},
		{"latency", "read lag p99 (pipebench)", kpi("read_lag.p99"), "read_lag.p99"},
		{"generator", "pipebench CPU cores", kpi("generator_cpu_cores"), "generator_cpu_cores"},
		{"generator", "waited for a CPU", kpi("generator_cpu_wait"), "generator_cpu_wait"},
		{"pipeline", "receiver accepted/s", perInstance("receiver_accepted_rate"), "receiver_accepted_rate"},
		{"pipeline", "receiver refused/s", perInstance("receiver_refused_rate"), "receiver_refused_rate"},
		{"pipeline", "exporter sent/s", perInstance("exporter_sent_rate"), "exporter_sent_rate"},
		{"pipeline", "exporter failed/s", perInstance("exporter_failed_rate"), "exporter_failed_rate"},
		{"pipeline", "exporter queue max", perInstance("exporter_queue_size.max"), "exporter_queue_size.max"},
		{"pipeline", "memory MB", perInstance("memory_mb"), "memory_mb"},
		{"pipeline", "CPU cores", perInstance("cpu_cores"), "cpu_cores"},
		{"sink", "delivered/s", kpi("delivered_rate"), "delivered_rate"},
		{"sink", "delivered", kpi("delivered"), "delivered"},
		{"sink", "e2e p50", kpi("e2e_latency.p50"), "e2e_latency.p50"},
		{"sink", "e2e p99", kpi("e2e_latency.p99"), "e2e_latency.p99"},
		{"sink", "e2e p99.9", kpi("e2e_latency.p999"), "e2e_latency.p999"},
		{"sink", "missing (accepted, not arrived)", kpi("missing"), "missing"},
		{"sink", "unread at the source", ledgerTerm("unread_at_source"), "unread_at_source"},
		{"sink", "pending at end", ledgerTerm("pending_at_end"), "pending_at_end"},
		{"sink", "lost", lostCell, "lost"},
		{"sink", "lost, as the pipeline counted", kpi("lost_confirmed"), "lost_confirmed"},
		{"sink", "unaccounted for", kpi("unaccounted"), "unaccounted"},
		{"sink", "abandoned (run stopped)", kpi("abandoned_queued"), "abandoned_queued"},
		{"sink", "duplicates", kpi("duplicates"), "duplicates"},
		{"sink", "reordered", kpi("reordered"), "reordered"},
		{"sink", "faulted by sink", kpi("faulted"), "faulted"},
		{"sink", "drain time", drainTime, "drain_time"},
		{"sink", "backlog max", kpi("backlog.max"), "backlog.max"},
		{"capacity", "headroom", kpi("headroom"), "headroom"},
		{"capacity", "capacity", kpi("capacity"), "capacity"},
		{"capacity", "backlog drains in", kpi("drain_estimate"), "drain_estimate"},
		{"capacity", "backlog drained in (measured)", kpi("drain_measured"), "drain_measured"},
		{"capacity", "drain rate", kpi("drain_rate"), "drain_rate"},
		{"capacity", "throughput last/first fifth", kpi("throughput_drift"), "throughput_drift"},
		{"limit", "stable", yesNo("stable"), "stable"},
		{"limit", "sustainable rate", kpi("sustainable_rate"), "sustainable_rate"},
		{"limit", "± uncertainty", kpi("sustainable_rate.uncertainty"), "sustainable_rate.uncertainty"},
		{"limit", "first unstable rate", kpi("first_unstable_rate"), "first_unstable_rate"},
		{"limit", "burst absorbed", kpi("burst_tolerance"), "burst_tolerance"},
		{"limit", "± uncertainty (burst)", kpi("burst_tolerance.uncertainty"), "burst_tolerance.uncertainty"},
		{"limit", "first burst not absorbed", kpi("first_unabsorbed_burst"), "first_unabsorbed_burst"},
		{"limit", "probes", kpi("probes"), "probes"},
		{"blast", "time to complete", kpi("time_to_complete"), "time_to_complete"},
		{"blast", "peak backlog", kpi("peak_backlog"), "peak_backlog"},
		{"blast", "completion rate", kpi("completion_rate"), "completion_rate"},
	}
}

// row is the spec's row over phases, in group, each cell "-" where a
// phase has no value; false when no phase has one.
func (sp spec) row(group string, phases []*pipebench.PhaseResult) (Row, bool) {
	cells := make([]string, len(phases))
	any := false
	for i, p := range phases {
		if v, ok := sp.cell(p); ok {
			cells[i], any = v, true
		} else {
			cells[i] = "-"
		}
	}
	return Row{Group: group, Label: sp.label, Cells: cells}, any
}
