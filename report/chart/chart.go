// Package chart turns one or several Results into the charts a reader looks
// at to see what happened and what went wrong: over time (the items
// through the chain, what failed by class, the exporter queue and the
// backlog each on its own axis, memory and CPU per instance, send and
// end-to-end latency) with every phase and the drain marked; the latency
// distribution of the whole run (a percentile plot); and where items were
// lost, stage by stage. It draws them as SVG (for the HTML report, the
// dashboard and docs) or PNG.
//
// Time is measured from each run's start, so runs of different days overlay.
package chart

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pipebench/pipebench"
)

// XKind says what a chart's x axis is.
type XKind int

const (
	// XElapsed is seconds since the run's start.
	XElapsed XKind = iota
	// XPercentile is a percentile, as -log10(1-p): 1 is p90, 2 p99, 3
	// p99.9; MaxX stands for the maximum.
	XPercentile
	// XBars has one group of bars per category (Chart.Categories); a
	// line holds one value per category.
	XBars
)

// MaxX is where a percentile plot puts the maximum.
const MaxX = 4

// Chart is one plot.
type Chart struct {
	ID    string // stable, for file names and element ids: "rates"
	Title string
	Unit  string // of the y axis: "spans/s", "MB"
	X     XKind
	// Categories name the bar groups of an XBars chart.
	Categories []string
	Lines      []Line
	Marks      []Mark
}

// Line is one series of one run: for XBars, one value per category (X
// unused).
type Line struct {
	Name string
	Run  int       // index of the run it comes from, for overlays
	X, Y []float64 // seconds since the run's start (or a percentile); values
	// Notes, for XBars, say what each value is made of (shown on hover).
	Notes []string
}

// Mark is the start of a phase, or of the drain.
type Mark struct {
	X     float64
	Label string // the phase that starts here, or "drain"
}

// Points is the number of data points over every line.
func (c *Chart) Points() int {
	n := 0
	for _, l := range c.Lines {
		n += len(l.Y)
	}
	return n
}

// spec says which series one chart over time draws.
type spec struct {
	id, title, unit string
	series          []string // series names, in legend order
	// dropZero leaves out lines that are 0 all along (nothing of that
	// kind failed): the chart shows only what went wrong.
	dropZero bool
}

func specs(item string) []spec {
	items := item + "s"
	if item == "" {
		items = "items"
	}
	return []spec{
		{id: "rates", title: "Items through the chain", unit: items + "/s", series: []string{"target_rate", "sent_rate", "accepted_rate", "receiver_accepted_rate", "exporter_sent_rate", "delivered_rate", "effects_rate"}},
		{id: "failures", title: "What failed, by class, and what the system held back", unit: items + "/s", dropZero: true,
			series: []string{"failed_rate", "held_back_rate", "faulted_rate", "receiver_refused_rate", "exporter_failed_rate", "exporter_enqueue_failed_rate"}},
		{id: "backlog", title: "Backlog: accepted, not yet delivered", unit: items, series: []string{"backlog", "effect_backlog"}},
		{id: "queue", title: "Exporter queue per instance", unit: "batches", series: []string{"exporter_queue_size", "exporter_queue_capacity"}},
		{id: "storage", title: "Storage against its limit per node", unit: "share of the limit", series: []string{"node_storage_used_ratio", "storage_used_ratio"}},
		{id: "e2e", title: "End-to-end latency (send to sink)", unit: "ms", series: []string{"e2e_p50_ms", "e2e_p90_ms", "e2e_p99_ms"}},
		{id: "latency", title: "Send latency (from the schedule)", unit: "ms", series: []string{"latency_p50_ms", "latency_p90_ms", "latency_p99_ms"}},
		{id: "memory", title: "Memory per instance", unit: "MB", series: []string{"memory_mb"}},
		{id: "cpu", title: "CPU per instance", unit: "cores", series: []string{"cpu_cores"}},
		{id: "generator", title: "Generator: schedule lag", unit: "ms", series: []string{"schedule_lag_ms"}},
	}
}

// Build returns the charts that have data in any of results: over time,
// then the latency distribution and where items were lost. With more than
// one result, each line's name starts with its run's label (the version,
// or the run id) and the phase marks are the first run's.
func Build(results ...*pipebench.Result) []Chart {
	if len(results) == 0 {
		return nil
	}
	item := results[0].Manifest.Item
	labels := RunLabels(results)
	prefix := func(ri int, name string) string {
		if len(results) > 1 {
			return labels[ri] + " · " + name
		}
		return name
	}
	var out []Chart
	for _, sp := range specs(item) {
		c := Chart{ID: sp.id, Title: sp.title, Unit: sp.unit}
		for ri, r := range results {
			start := r.Manifest.Started
			for _, name := range sp.series {
				for _, s := range seriesNamed(r.Series, name) {
					if len(s.Points) == 0 {
						continue
					}
					l := Line{Name: prefix(ri, lineName(s)), Run: ri}
					zero := true
					for _, p := range s.Points {
						l.X = append(l.X, p.T.Sub(start).Seconds())
						l.Y = append(l.Y, p.V)
						zero = zero && p.V == 0
					}
					if sp.dropZero && zero {
						continue
					}
					c.Lines = append(c.Lines, l)
				}
			}
		}
		if len(c.Lines) == 0 {
			continue
		}
		c.Marks = marks(results[0])
		fitUnit(&c)
		out = append(out, c)
	}
	for _, d := range []struct{ id, title, kpi string }{
		{"distribution", "Send latency distribution, whole run", "latency"},
		{"e2e-distribution", "End-to-end latency distribution, whole run", "e2e_latency"},
	} {
		if c, ok := distribution(d.id, d.title, d.kpi, results, labels); ok {
			out = append(out, c)
		}
	}
	if c, ok := lostWhere(results, labels); ok {
		out = append(out, c)
	}
	return out
}

// percentiles are the points of the distribution chart: the table's
// quantiles, by KPI suffix.
var percentiles = []struct {
	suffix string
	x      float64
	label  string
}{
	{"p50", -math.Log10(0.5), "50%"}, {"p75", -math.Log10(0.25), "75%"}, {"p90", 1, "90%"}, {"p95", -math.Log10(0.05), "95%"},
	{"p99", 2, "99%"}, {"p999", 3, "99.9%"}, {"max", MaxX, "max"},
}

// distribution is the percentile plot of the whole run's latency of one
// kind (the table's total column: kpi "latency" or "e2e_latency"), one
// line per run.
func distribution(id, title, kpi string, results []*pipebench.Result, labels []string) (Chart, bool) {
	c := Chart{ID: id, Title: title, Unit: "ms", X: XPercentile}
	for ri, r := range results {
		if r.Total == nil {
			continue
		}
		l := Line{Name: labels[ri], Run: ri}
		if len(results) == 1 {
			l.Name = "whole run"
		}
		for _, p := range percentiles {
			if v, ok := r.Total.Get(kpi + "." + p.suffix); ok {
				l.X, l.Y = append(l.X, p.x), append(l.Y, v)
			}
		}
		if len(l.Y) > 1 {
			c.Lines = append(c.Lines, l)
		}
	}
	fitUnit(&c)
	return c, len(c.Lines) > 0
}

// PercentileTicks are the x positions and labels of a percentile plot.
func PercentileTicks() (xs []float64, labels []string) {
	for _, p := range percentiles {
		xs, labels = append(xs, p.x), append(labels, p.label)
	}
	return xs, labels
}

// stages are the steps items pass, in order, with the KPI of the table's
// total that counts them there (summed over instances).
var stages = []struct{ label, kpi string }{
	{"sent", "sent"},
	{"answered ok", "accepted"},
	{"pipeline accepted", "receiver_accepted.total"},
	{"pipeline exported", "exporter_sent.total"},
	{"delivered", "delivered"},
}

// lossNames name where items went missing between two stages.
var lossNames = map[[2]string]string{
	{"sent", "answered ok"}:                    "sends failed",
	{"answered ok", "pipeline accepted"}:       "at the receiver",
	{"answered ok", "pipeline exported"}:       "before export",
	{"answered ok", "delivered"}:               "not delivered",
	{"pipeline accepted", "pipeline exported"}: "in the pipeline",
	{"pipeline accepted", "delivered"}:         "not delivered",
	{"pipeline exported", "delivered"}:         "after export",
}

// lostWhere shows, for each pair of consecutive stages a run has counts
// for, how many items passed the first and not the second: where they
// were lost (or are still held), and a bar of 0 where nothing was. Items
// never sent (max_in_flight) come first when there were any.
func lostWhere(results []*pipebench.Result, labels []string) (Chart, bool) {
	c := Chart{ID: "lost", Title: "Lost where: items missing between stages", Unit: "items", X: XBars}
	if it := results[0].Manifest.Item; it != "" {
		c.Unit = it + "s"
	}
	have := make([]bool, len(stages))
	counts := make([][]float64, len(results))
	dropped := make([]float64, len(results))
	for ri, r := range results {
		counts[ri] = make([]float64, len(stages))
		if r.Total == nil {
			continue
		}
		for si, st := range stages {
			kp := r.Total.All(st.kpi)
			for _, k := range kp {
				counts[ri][si] += k.Value
			}
			have[si] = have[si] || len(kp) > 0
		}
		dropped[ri], _ = r.Total.Get("dropped")
	}
	var steps [][2]int // stage indexes
	prev := -1
	for si := range stages {
		if !have[si] {
			continue
		}
		if prev >= 0 {
			steps = append(steps, [2]int{prev, si})
		}
		prev = si
	}
	if len(steps) == 0 {
		return c, false
	}
	anyDropped := slices.ContainsFunc(dropped, func(v float64) bool { return v > 0 })
	if anyDropped {
		c.Categories = append(c.Categories, "never sent")
	}
	for _, st := range steps {
		from, to := stages[st[0]].label, stages[st[1]].label
		name, ok := lossNames[[2]string{from, to}]
		if !ok {
			name = from + " → " + to
		}
		c.Categories = append(c.Categories, name)
	}
	for ri := range results {
		l := Line{Name: labels[ri], Run: ri}
		if len(results) == 1 {
			l.Name = c.Unit + " lost"
		}
		if anyDropped {
			l.Y = append(l.Y, dropped[ri])
			held, missed := 0.0, 0.0
			if t := results[ri].Total; t != nil {
				held, _ = t.Get("held_back")
				missed, _ = t.Get("missed")
			}
			l.Notes = append(l.Notes, fmt.Sprintf("held back by the system %s, missed by pipebench %s", pipebench.FormatCount(held), pipebench.FormatCount(missed)))
		}
		for _, st := range steps {
			a, b := counts[ri][st[0]], counts[ri][st[1]]
			l.Y = append(l.Y, math.Max(0, a-b))
			l.Notes = append(l.Notes, fmt.Sprintf("%s %s → %s %s", stages[st[0]].label, pipebench.FormatCount(a), stages[st[1]].label, pipebench.FormatCount(b)))
		}
		c.Lines = append(c.Lines, l)
	}
	return c, true
}

// fitUnit shows a chart in milliseconds in the unit that fits its values:
// seconds from 2 s up, µs below 1 ms.
func fitUnit(c *Chart) {
	if c.Unit != "ms" {
		return
	}
	top := 0.0
	for _, l := range c.Lines {
		for _, v := range l.Y {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = math.Max(top, v)
			}
		}
	}
	f := 1.0
	switch {
	case top >= 2000:
		c.Unit, f = "s", 1e-3
	case top > 0 && top < 1:
		c.Unit, f = "µs", 1e3
	default:
		return
	}
	for i := range c.Lines {
		y := make([]float64, len(c.Lines[i].Y))
		for j, v := range c.Lines[i].Y {
			y[j] = v * f
		}
		c.Lines[i].Y = y
	}
}

// RunLabels names each run for legends by what tells them apart: the
// version when the versions differ, the case when the cases differ (the
// queue-depth reference overlays blasts of 10%, 25% and 50% of a fleet),
// both when both do, and a short run id only when runs share both.
func RunLabels(results []*pipebench.Result) []string {
	out := make([]string, len(results))
	versions, cases, pairs := map[string]bool{}, map[string]bool{}, map[string]int{}
	for _, r := range results {
		versions[r.Manifest.Version] = true
		cases[r.Manifest.Case] = true
		pairs[r.Manifest.Version+"\x00"+r.Manifest.Case]++
	}
	for i, r := range results {
		var parts []string
		if len(versions) > 1 || len(cases) == 1 {
			v := r.Manifest.Version
			if v == "" {
				v = "run"
			}
			parts = append(parts, v)
		}
		if len(cases) > 1 && r.Manifest.Case != "" {
			parts = append(parts, r.Manifest.Case)
		}
		if pairs[r.Manifest.Version+"\x00"+r.Manifest.Case] > 1 || r.Manifest.Version == "" && len(cases) == 1 {
			id := r.Manifest.RunID
			if len(id) > 8 {
				id = id[len(id)-8:]
			}
			parts = append(parts, id)
		}
		out[i] = strings.Join(parts, " · ")
	}
	return out
}

func seriesNamed(ss []pipebench.Series, name string) []pipebench.Series {
	var out []pipebench.Series
	for _, s := range ss {
		if s.Name == name {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// names are the legend names of the runner's own series where the
// series' name does not read well.
var names = map[string]string{
	"accepted_rate": "answered ok",
	"faulted_rate":  "sink faults",
}

// lineName makes a series key readable: receiver_accepted_rate{instance=
// "collector-0"} becomes "receiver accepted · collector-0", failed_rate
// {class="refused"} "sends refused".
func lineName(s pipebench.Series) string {
	if n, ok := names[s.Name]; ok {
		return n
	}
	if s.Name == "failed_rate" {
		return "sends " + s.Labels["class"]
	}
	n := strings.TrimSuffix(s.Name, "_rate")
	n = strings.TrimSuffix(n, "_ms")
	n = strings.TrimSuffix(n, "_mb")
	n = strings.ReplaceAll(n, "_", " ")
	n = strings.TrimPrefix(n, "latency ")
	n = strings.TrimPrefix(n, "e2e ")
	if len(s.Labels) == 0 {
		return n
	}
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var vals []string
	for _, k := range keys {
		if k == "instance" {
			vals = append(vals, s.Labels[k])
		} else {
			vals = append(vals, fmt.Sprintf("%s=%s", k, s.Labels[k]))
		}
	}
	return n + " · " + strings.Join(vals, " ")
}

// marks are the starts of r's phases and of its drain.
func marks(r *pipebench.Result) []Mark {
	var out []Mark
	for _, p := range r.Phases {
		out = append(out, Mark{X: p.Started.Sub(r.Manifest.Started).Seconds(), Label: p.Name})
	}
	if r.Drain != nil && !r.Drain.Started.IsZero() {
		out = append(out, Mark{X: r.Drain.Started.Sub(r.Manifest.Started).Seconds(), Label: "drain"})
	}
	return out
}
