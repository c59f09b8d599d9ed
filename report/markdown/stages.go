package markdown

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// StageRow is one stage of a run's stage breakdown, from the series the
// promql observer's stages report (stage_seconds, stage_events,
// stage_queue, stage_phase, labelled by stage).
type StageRow struct {
	Name, Mode string
	// Events is how many events the stage handled in the run; Busy the
	// time it spent on them, added up; Mean the time per event.
	Events, Busy, Mean float64
	// QueuePeak is the largest queue seen before it; -1 when not observed.
	QueuePeak float64
	// Share is Busy over the run's total (a blast's time to complete).
	Share float64
}

// Stages returns r's stage breakdown in the scenario's order, and the
// total the shares are of (seconds); nil without stage series.
func Stages(r *pipebench.Result) ([]StageRow, float64) {
	type acc struct {
		row   StageRow
		order int
		seen  bool
	}
	byName := map[string]*acc{}
	get := func(l map[string]string) *acc {
		a := byName[l["stage"]]
		if a == nil {
			o, _ := strconv.Atoi(l["order"])
			a = &acc{row: StageRow{Name: l["stage"], Mode: l["mode"], QueuePeak: -1}, order: o}
			byName[l["stage"]] = a
		}
		return a
	}
	for _, s := range r.Series {
		if s.Labels["stage"] == "" || len(s.Points) == 0 {
			continue
		}
		switch s.Name {
		case "stage_seconds", "stage_events":
			d := increase(s.Points)
			// A first reading after the load began (a query that failed at
			// first) misses what came before it: a system started for
			// this run counted from 0.
			if len(r.Phases) > 0 && s.Points[0].T.After(r.Phases[0].Started) && !kept(r) {
				d += s.Points[0].V
			}
			a := get(s.Labels)
			if s.Name == "stage_seconds" {
				a.row.Busy = d
			} else {
				a.row.Events = d
			}
			a.seen = true
		case "stage_queue":
			a := get(s.Labels)
			for _, p := range s.Points {
				a.row.QueuePeak = math.Max(a.row.QueuePeak, p.V)
			}
			a.seen = true
		case "stage_phase":
			a := get(s.Labels)
			for _, p := range r.Phases {
				if p.Name == s.Labels["phase"] {
					a.row.Busy = p.Ended.Sub(p.Started).Seconds()
					if v, ok := p.Get("sent"); ok {
						a.row.Events = v
					}
				}
			}
			a.seen = true
		}
	}
	if len(byName) == 0 {
		return nil, 0
	}
	total := runTotal(r)
	var out []*acc
	for _, a := range byName {
		if a.row.Events > 0 {
			a.row.Mean = a.row.Busy / a.row.Events
		}
		if total > 0 {
			a.row.Share = a.row.Busy / total
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	rows := make([]StageRow, len(out))
	for i, a := range out {
		rows[i] = a.row
	}
	return rows, total
}

// kept reports whether r's system under test ran before r (a suite's
// sut: keep), so its counters did not start at 0 with it.
func kept(r *pipebench.Result) bool {
	return strings.HasPrefix(r.Manifest.Labels["sut"], "kept")
}

// increase is a counter's growth over its points, a reset counted from 0.
func increase(pts []pipebench.TimeValue) float64 {
	var d float64
	for i := 1; i < len(pts); i++ {
		if x := pts[i].V - pts[i-1].V; x >= 0 {
			d += x
		} else {
			d += pts[i].V
		}
	}
	return d
}

// runTotal is the end-to-end time the shares are of: the time to complete
// of a blast (until its last event took effect), else the phases' time.
func runTotal(r *pipebench.Result) float64 {
	var ttc float64
	for _, p := range append([]pipebench.PhaseResult{}, r.Phases...) {
		if v, ok := p.Get("time_to_complete"); ok {
			ttc = math.Max(ttc, v)
		}
	}
	if ttc > 0 {
		return ttc
	}
	var d time.Duration
	for _, p := range r.Phases {
		d += p.Ended.Sub(p.Started)
	}
	return d.Seconds()
}

// RenderStages writes r's stage breakdown as a markdown table (nothing
// without one): each stage's time per event, events, busy time, share of
// the total, peak queue and whether it runs in sequence or in parallel.
func RenderStages(w io.Writer, r *pipebench.Result) error {
	rows, total := Stages(r)
	if rows == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Where the time goes (%s: %s end to end)\n\n", caseOf(r), seconds(total))
	b.WriteString("| Stage | Per event (mean) | Events | Busy time | Share of total | Peak queue | Runs |\n")
	b.WriteString("| ---: | :---: | :---: | :---: | :---: | :---: | :---: |\n")
	for _, s := range rows {
		queue := "-"
		if s.QueuePeak >= 0 {
			queue = plain(s.QueuePeak)
		}
		share := strconv.FormatFloat(100*s.Share, 'f', 0, 64) + "%"
		runs := "in sequence: adds up in the total"
		if s.Mode == "parallel" {
			share += " (overlapped)"
			runs = "in parallel: masked by the others"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", s.Name, seconds(s.Mean), plain(s.Events), seconds(s.Busy), share, queue, runs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// seconds prints a time: "370 ms", "2.4 s", "5.1 ms".
func seconds(v float64) string {
	switch {
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64) + " s"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64) + " s"
	case v >= 0.01:
		return strconv.FormatFloat(v*1000, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v*1000, 'f', 1, 64) + " ms"
}

// RenderStagesAfter writes r's stage breakdown after a table, a blank line
// between, when r has one.
func RenderStagesAfter(w io.Writer, r *pipebench.Result) error {
	if rows, _ := Stages(r); rows == nil {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return RenderStages(w, r)
}
