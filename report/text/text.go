// Package text renders a Result as the terminal KPI table: one column per
// phase (and the total), rows grouped into load, latency, pipeline and sink,
// then the verdict, thresholds and detections.
package text

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
)

// Options tunes the rendering.
type Options struct {
	// ASCII uses [ok]/[FAIL] instead of ✓/✗.
	ASCII bool
}

// New returns the terminal table reporter.
func New(o Options) pipebench.Reporter {
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error { return render(w, r, o) })
}

// row is one line of the table: how to get its cell from a phase.
type row struct {
	group, label string
	cell         func(p *pipebench.PhaseResult) (string, bool)
}

func kpi(name string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) {
		for _, k := range p.KPIs {
			if k.Name == name && len(k.Labels) == 0 {
				return report.Value(k), true
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
		return report.Number(v), true
	}
}

func perInstance(name string) func(p *pipebench.PhaseResult) (string, bool) {
	return func(p *pipebench.PhaseResult) (string, bool) { return report.PerInstance(p, name) }
}

func rows(item string) []row {
	items := item + "s"
	return []row{
		{"load", "target " + items + "/s", kpi("target_rate")},
		{"load", "sent/s", kpi("sent_rate")},
		{"load", "accepted/s", kpi("accepted_rate")},
		{"load", "sent", kpi("sent")},
		{"load", "dropped", kpi("dropped")},
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
	}
}

func render(w io.Writer, r *pipebench.Result, o Options) error {
	m := r.Manifest
	title := m.Scenario
	if m.Version != "" {
		title += " (version " + m.Version + ")"
	}
	fmt.Fprintf(w, "\n%s: %s, %s\n\n", title, report.Status(r), m.Ended.Sub(m.Started).Round(time.Second))
	phases := report.Phases(r)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	header := []string{"", ""}
	for _, p := range phases {
		header = append(header, p.Name)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	last := ""
	for _, rw := range rows(m.Item) {
		cells := make([]string, len(phases))
		any := false
		for i, p := range phases {
			if v, ok := rw.cell(p); ok {
				cells[i], any = v, true
			} else {
				cells[i] = "-"
			}
		}
		if !any {
			continue
		}
		g := ""
		if rw.group != last {
			g, last = rw.group, rw.group
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", g, rw.label, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ok, bad := "✓", "✗"
	if o.ASCII {
		ok, bad = "[ok]", "[FAIL]"
	}
	if len(r.Thresholds) > 0 {
		fmt.Fprintln(w, "\nthresholds:")
		for _, t := range r.Thresholds {
			mark := ok
			if !t.Passed {
				mark = bad
			}
			line := fmt.Sprintf("  %s %s  (phase %s)", mark, t.Expr, t.Phase)
			if t.Message != "" {
				line += ": " + t.Message
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(r.Detections) > 0 {
		fmt.Fprintln(w, "\ndetected:")
		for _, d := range r.Detections {
			at := d.Began.Sub(m.Started).Round(time.Second)
			fmt.Fprintf(w, "  %s at +%s: %s\n", d.Detector, at, d.Message)
		}
	}
	if len(m.Reasons) > 0 {
		fmt.Fprintln(w)
		for _, reason := range m.Reasons {
			fmt.Fprintf(w, "note: %s\n", reason)
		}
	}
	return nil
}
