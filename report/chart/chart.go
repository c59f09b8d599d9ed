// Package chart turns the series of one or several Results into charts over
// time (rates, exporter queue and backlog, memory and CPU per instance,
// latency percentiles) with the phase boundaries marked, and draws them as
// SVG (for the HTML report, the dashboard and docs) or PNG.
//
// Time is measured from each run's start, so runs of different days overlay.
package chart

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pipebench/pipebench"
)

// Chart is one plot: lines over seconds since the start of the run.
type Chart struct {
	ID    string // stable, for file names and element ids: "rates"
	Title string
	Unit  string // of the y axis: "spans/s", "MB"
	Lines []Line
	Marks []Mark
}

// Line is one series of one run.
type Line struct {
	Name string
	Run  int       // index of the run it comes from, for overlays
	X, Y []float64 // seconds since the run's start; values
}

// Mark is a phase boundary.
type Mark struct {
	X     float64
	Label string // the phase that starts here
}

// Points is the number of data points over every line.
func (c *Chart) Points() int {
	n := 0
	for _, l := range c.Lines {
		n += len(l.X)
	}
	return n
}

// spec says which series one chart draws.
type spec struct {
	id, title, unit string
	series          []string // series names, in legend order
}

func specs(item string) []spec {
	items := item + "s"
	if item == "" {
		items = "items"
	}
	return []spec{
		{"rates", "Rates", items + "/s", []string{"target_rate", "sent_rate", "accepted_rate", "receiver_accepted_rate", "exporter_sent_rate", "delivered_rate", "effects_rate"}},
		{"failures", "Refused and failed", items + "/s", []string{"receiver_refused_rate", "exporter_failed_rate", "exporter_enqueue_failed_rate"}},
		{"queue", "Exporter queue and backlog", items, []string{"exporter_queue_size", "exporter_queue_capacity", "backlog", "effect_backlog"}},
		{"storage", "Storage against its limit per node", "share of the limit", []string{"node_storage_used_ratio", "storage_used_ratio"}},
		{"memory", "Memory per instance", "MB", []string{"memory_mb"}},
		{"cpu", "CPU per instance", "cores", []string{"cpu_cores"}},
		{"latency", "Send latency (from the schedule)", "ms", []string{"latency_p50_ms", "latency_p90_ms", "latency_p99_ms"}},
		{"generator", "Generator: schedule lag", "ms", []string{"schedule_lag_ms"}},
	}
}

// Build returns the charts that have data in any of results. With more than
// one result, each line's name starts with its run's label (the version, or
// the run id) and the phase marks are the first run's.
func Build(results ...*pipebench.Result) []Chart {
	if len(results) == 0 {
		return nil
	}
	item := results[0].Manifest.Item
	labels := RunLabels(results)
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
					l := Line{Name: lineName(s), Run: ri}
					if len(results) > 1 {
						l.Name = labels[ri] + " · " + l.Name
					}
					for _, p := range s.Points {
						l.X = append(l.X, p.T.Sub(start).Seconds())
						l.Y = append(l.Y, p.V)
					}
					c.Lines = append(c.Lines, l)
				}
			}
		}
		if len(c.Lines) == 0 {
			continue
		}
		c.Marks = marks(results[0])
		out = append(out, c)
	}
	return out
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

// lineName makes a series key readable: receiver_accepted_rate{instance=
// "collector-0"} becomes "receiver accepted · collector-0".
func lineName(s pipebench.Series) string {
	n := strings.TrimSuffix(s.Name, "_rate")
	n = strings.TrimSuffix(n, "_ms")
	n = strings.TrimSuffix(n, "_mb")
	n = strings.ReplaceAll(n, "_", " ")
	n = strings.TrimPrefix(n, "latency ")
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

func marks(r *pipebench.Result) []Mark {
	var out []Mark
	for _, p := range r.Phases {
		out = append(out, Mark{X: p.Started.Sub(r.Manifest.Started).Seconds(), Label: p.Name})
	}
	return out
}
