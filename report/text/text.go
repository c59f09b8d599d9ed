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
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error {
		return render(report.PrintableWriter(w), r, o)
	})
}

func render(w io.Writer, r *pipebench.Result, o Options) error {
	m := r.Manifest
	title := m.Scenario
	if m.Version != "" {
		title += " (version " + m.Version + ")"
	}
	fmt.Fprintf(w, "\n%s: %s, %s\n\n", title, report.Status(r), m.Ended.Sub(m.Started).Round(time.Second))
	phases, rows := report.Table(r)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	header := []string{"", ""}
	for _, p := range phases {
		header = append(header, p.Name)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	last := ""
	for _, rw := range rows {
		g := ""
		if rw.Group != last {
			g, last = rw.Group, rw.Group
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", g, rw.Label, strings.Join(rw.Cells, "\t"))
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
	if len(m.Reasons) > 0 || len(r.Summary) > 0 {
		fmt.Fprintln(w)
		for _, reason := range m.Reasons {
			fmt.Fprintf(w, "note: %s\n", reason)
		}
		for _, s := range r.Summary {
			fmt.Fprintf(w, "note: %s\n", s)
		}
	}
	for _, class := range report.ErrorClasses(r) {
		for _, msg := range r.Errors[class] {
			fmt.Fprintf(w, "error %s: %s\n", class, msg)
		}
	}
	return nil
}
