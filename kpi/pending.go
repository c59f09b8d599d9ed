package kpi

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// HolderSeries are the gauges through which a pipeline says how many items
// it still holds: a JetStream consumer's messages not yet delivered
// (consumer_pending) and delivered but not yet acknowledged (ack_pending),
// a collector's or gateway's exporter queue (exporter_queue_size; a queue
// the pipeline counts in batches rather than items makes the figure a
// lower bound).
var HolderSeries = []string{"consumer_pending", "ack_pending", "exporter_queue_size"}

// HeldAtEnd returns how many items the pipeline's own metrics said it held
// at the last observation at or before until: the sum of the holder series
// that have a point at that moment (a series that stopped being observed
// earlier, such as a consumer deleted, is not counted). ok is false when
// no holder series was observed.
func HeldAtEnd(series []pipebench.Series, until time.Time) (held float64, ok bool) {
	var last time.Time
	lastOf := func(s pipebench.Series) (pipebench.TimeValue, bool) {
		for i := len(s.Points) - 1; i >= 0; i-- {
			if !s.Points[i].T.After(until) {
				return s.Points[i], true
			}
		}
		return pipebench.TimeValue{}, false
	}
	for _, s := range series {
		if slices.Contains(HolderSeries, s.Name) {
			if p, found := lastOf(s); found && p.T.After(last) {
				last = p.T
			}
		}
	}
	if last.IsZero() {
		return 0, false
	}
	for _, s := range series {
		if slices.Contains(HolderSeries, s.Name) {
			if p, found := lastOf(s); found && p.T.Equal(last) && p.V > 0 {
				held += p.V
			}
		}
	}
	return held, true
}

// applyPending applies the rule "lost is only what the pipeline no longer
// holds" to a run's total and phases once their lost counts are known:
// what the pipeline's metrics said it still held when the drain ended
// (HeldAtEnd at until, kept as held_at_end) is pending_at_end, taken off
// lost (at most all of it). The pending items are the latest the pipeline
// accepted (a stream delivers in order), so each phase, from the last one
// back, gets its share of pending_at_end out of its own lost, and the
// phases still add up to the total. Without a sink (no lost) or any holder
// series it does nothing.
func applyPending(total *pipebench.PhaseResult, phases []pipebench.PhaseResult, series []pipebench.Series, until time.Time) {
	if _, ok := total.Get("lost"); !ok {
		return
	}
	held, ok := HeldAtEnd(series, until)
	if !ok {
		return
	}
	total.Set(pipebench.KPI{Name: "held_at_end", Value: held, Unit: pipebench.UnitCount})
	attributePending(total, phases, held)
	pipelinePending(total, phases, series, until)
}

// pipelinePending applies the rule to each pipeline the sink told apart
// (pipeline_lost{pipeline=P}): what the exporter of that pipeline still
// queued when the drain ended (per_exporter_queue_size{exporter=".../P"},
// summed over instances) is pipeline_pending_at_end{pipeline=P}, taken off
// its pipeline_lost in the total and in the phases from the last back.
func pipelinePending(total *pipebench.PhaseResult, phases []pipebench.PhaseResult, series []pipebench.Series, until time.Time) {
	for _, k := range total.All("pipeline_lost") {
		p := k.Labels["pipeline"]
		if p == "" || k.Value <= 0 {
			continue
		}
		var mine []pipebench.Series
		for _, s := range series {
			if s.Name == "per_exporter_queue_size" && strings.HasSuffix(s.Labels["exporter"], "/"+p) {
				s.Name = "exporter_queue_size" // read as a holder series of its own
				mine = append(mine, s)
			}
		}
		held, ok := HeldAtEnd(mine, until)
		if !ok || held <= 0 {
			continue
		}
		lbl := map[string]string{"pipeline": p}
		total.Set(pipebench.KPI{Name: "pipeline_held_at_end", Labels: lbl, Value: held, Unit: pipebench.UnitCount})
		movePending(total, phases, "pipeline_lost", "pipeline_pending_at_end", lbl, held)
	}
}

// attributePending moves min(lost, held) of the total's lost, and of the
// phases' from the last back, to pending_at_end.
func attributePending(total *pipebench.PhaseResult, phases []pipebench.PhaseResult, held float64) {
	movePending(total, phases, "lost", "pending_at_end", nil, held)
}

// movePending moves min(lost, held) of the total's KPI lost (with labels
// lbl), and of the phases' from the last back, to their KPI pending.
func movePending(total *pipebench.PhaseResult, phases []pipebench.PhaseResult, lost, pending string, lbl map[string]string, held float64) {
	get := func(p *pipebench.PhaseResult) (float64, bool) {
		for _, k := range p.All(lost) {
			if maps.Equal(k.Labels, lbl) {
				return k.Value, true
			}
		}
		return 0, false
	}
	l, _ := get(total)
	moved := min(l, held)
	total.Set(pipebench.KPI{Name: lost, Labels: lbl, Value: l - moved, Unit: pipebench.UnitCount})
	total.Set(pipebench.KPI{Name: pending, Labels: lbl, Value: moved, Unit: pipebench.UnitCount})
	left := moved
	for i := len(phases) - 1; i >= 0 && left > 0; i-- {
		pl, ok := get(&phases[i])
		if !ok || pl <= 0 {
			continue
		}
		n := min(pl, left)
		left -= n
		phases[i].Set(pipebench.KPI{Name: lost, Labels: lbl, Value: pl - n, Unit: pipebench.UnitCount})
		phases[i].Set(pipebench.KPI{Name: pending, Labels: lbl, Value: n, Unit: pipebench.UnitCount})
	}
}

// mergePending applies the rule to a merged Result (and each pipeline's
// to its pipeline_lost): each shard took what the pipeline held off its
// own lost, but the pipeline is one, so the merged lost is every shard's
// lost and pending added back, less what the
// pipeline held (shard 1's reading) once.
func mergePending(shards []*pipebench.Result, merged *pipebench.Result) {
	if merged.Total == nil || len(shards) == 0 || shards[0].Total == nil {
		return
	}
	held, ok := shards[0].Total.Get("held_at_end")
	if !ok {
		return
	}
	// unpend gives p back the lost its shards had taken off as pending.
	unpend := func(p *pipebench.PhaseResult, parts []*pipebench.PhaseResult) {
		var raw float64
		for _, s := range parts {
			l, _ := s.Get("lost")
			pe, _ := s.Get("pending_at_end")
			raw += l + pe
		}
		if _, has := p.Get("lost"); has {
			p.Set(pipebench.KPI{Name: "lost", Value: raw, Unit: pipebench.UnitCount})
		}
		p.KPIs = slices.DeleteFunc(p.KPIs, func(k pipebench.KPI) bool { return k.Name == "pending_at_end" })
	}
	for i := range merged.Phases {
		parts := make([]*pipebench.PhaseResult, 0, len(shards))
		for _, s := range shards {
			if i < len(s.Phases) {
				parts = append(parts, &s.Phases[i])
			}
		}
		unpend(&merged.Phases[i], parts)
	}
	totals := make([]*pipebench.PhaseResult, 0, len(shards))
	for _, s := range shards {
		if s.Total != nil {
			totals = append(totals, s.Total)
		}
	}
	unpend(merged.Total, totals)
	merged.Total.Set(pipebench.KPI{Name: "held_at_end", Value: held, Unit: pipebench.UnitCount})
	attributePending(merged.Total, merged.Phases, held)
	// The same for each pipeline the sink told apart: its exporter held
	// its queue once.
	for _, k := range shards[0].Total.All("pipeline_held_at_end") {
		lbl := k.Labels
		raw := func(parts []*pipebench.PhaseResult) float64 {
			var n float64
			for _, s := range parts {
				for _, name := range []string{"pipeline_lost", "pipeline_pending_at_end"} {
					for _, v := range s.All(name) {
						if maps.Equal(v.Labels, lbl) {
							n += v.Value
						}
					}
				}
			}
			return n
		}
		regain := func(p *pipebench.PhaseResult, parts []*pipebench.PhaseResult) {
			p.KPIs = slices.DeleteFunc(p.KPIs, func(v pipebench.KPI) bool {
				return v.Name == "pipeline_pending_at_end" && maps.Equal(v.Labels, lbl)
			})
			if n := raw(parts); n > 0 {
				p.Set(pipebench.KPI{Name: "pipeline_lost", Labels: lbl, Value: n, Unit: pipebench.UnitCount})
			}
		}
		for i := range merged.Phases {
			var parts []*pipebench.PhaseResult
			for _, s := range shards {
				if i < len(s.Phases) {
					parts = append(parts, &s.Phases[i])
				}
			}
			regain(&merged.Phases[i], parts)
		}
		regain(merged.Total, totals)
		merged.Total.Set(k)
		movePending(merged.Total, merged.Phases, "pipeline_lost", "pipeline_pending_at_end", lbl, k.Value)
	}
}
