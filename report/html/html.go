// Package html renders Results as one self-contained HTML file that works
// offline: the summary, the verdict (thresholds, detections, notes), the
// KPI table and the charts of report/chart (over time with every phase and
// the drain marked, what failed by class, end-to-end latency, the latency
// distribution, where items were lost). Several runs render as one page
// with their charts overlaid. A small script embedded in the page shows
// the values under the pointer, zooms every chart over time to a dragged
// range, and exports each chart as SVG or PNG (no network, no CDN, no
// library).
package html

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
	"github.com/pipebench/pipebench/report/chart"
)

//go:embed page.html.tmpl
var pageSrc string

//go:embed page.css
var css string

//go:embed page.js
var js string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"status": report.Status,
	"since": func(t, start time.Time) string {
		return chart.Elapsed(t.Sub(start).Seconds())
	},
	"duration": func(m pipebench.Manifest) string { return m.Ended.Sub(m.Started).Round(time.Second).String() },
	"when":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"number":   report.Number,
}).Parse(pageSrc))

// New returns the HTML reporter: one run, or several overlaid
// (pipebench.MultiReporter).
func New() pipebench.Reporter { return reporter{} }

type reporter struct{}

var _ pipebench.MultiReporter = reporter{}

func (reporter) Report(w io.Writer, r *pipebench.Result) error { return Write(w, r) }

func (reporter) ReportAll(w io.Writer, rs []*pipebench.Result) error { return Write(w, rs...) }

// Write renders one page for the results: one run, or several overlaid (in
// the order given; the first run's phases mark the charts).
func Write(w io.Writer, results ...*pipebench.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("no result to render")
	}
	d, err := build(results)
	if err != nil {
		return err
	}
	return page.Execute(w, d)
}

type data struct {
	Title  string
	Runs   []run
	Charts []figure
	CSS    template.CSS
	JS     template.JS
	// Live pages poll this path for fresh charts (the dashboard); empty
	// for a report.
	Live string
	// Meanings say what the table's own numbers mean.
	Meanings []string
}

type run struct {
	Index  int // its place on the page, for element ids
	Label  string
	R      *pipebench.Result
	Phases []*pipebench.PhaseResult
	Rows   []report.Row
	Class  string // status class for the badge
}

type figure struct {
	ID     string
	Title  string
	Points int
	SVG    template.HTML
}

func build(results []*pipebench.Result) (*data, error) {
	d := &data{CSS: template.CSS(css), JS: template.JS(js), Meanings: []string{pipebench.MeaningLatency, pipebench.MeaningSent}}
	labels := chart.RunLabels(results)
	for i, r := range results {
		phases, rows := report.Table(r)
		d.Runs = append(d.Runs, run{Index: i, Label: labels[i], R: r, Phases: phases, Rows: rows, Class: string(r.Manifest.Status)})
	}
	m := results[0].Manifest
	d.Title = m.Scenario
	if len(results) == 1 && m.Version != "" {
		d.Title += " · " + m.Version
	} else if len(results) > 1 {
		d.Title += fmt.Sprintf(" · %d runs", len(results))
	}
	figs, err := Figures(results...)
	d.Charts = figs
	return d, err
}

// Figures draws the charts of the results as SVG, for pages that embed them.
func Figures(results ...*pipebench.Result) ([]figure, error) {
	var out []figure
	for _, c := range chart.Build(results...) {
		var b bytes.Buffer
		if err := c.SVG(&b); err != nil {
			return nil, err
		}
		// The SVG is ours: every text in it went through html escaping.
		out = append(out, figure{ID: c.ID, Title: c.Title, Points: c.Points(), SVG: template.HTML(b.String())})
	}
	return out, nil
}

// Table renders the KPI table of r alone (an HTML fragment), as the page
// shows it: for the live dashboard, which replaces it every second.
func Table(w io.Writer, r *pipebench.Result) error {
	phases, rows := report.Table(r)
	return page.ExecuteTemplate(w, "kpis", run{R: r, Phases: phases, Rows: rows})
}

// Live renders the dashboard's page: the same layout as a report of the
// partial result, polling path every second for fresh charts and KPIs.
func Live(w io.Writer, snapshot *pipebench.Result, path string) error {
	d, err := build([]*pipebench.Result{snapshot})
	if err != nil {
		return err
	}
	d.Live = path
	d.Title += " · live"
	return page.Execute(w, d)
}
