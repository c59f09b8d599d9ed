package kpi

import (
	"fmt"
	"time"

	"github.com/pipebench/pipebench"
)

// Capacity derives, from a Result with a sink, the figures the event-bus
// reference reads off its runs:
//   - headroom on a phase that drained a backlog (at least a second's worth
//     of acceptance): how much faster delivery went than acceptance
//     (delivered_rate − accepted_rate, per second);
//   - capacity on the total row: the highest target rate of a phase
//     during which delivery kept up (at least 98% of what was accepted
//     arrived during the phase, and nothing was dropped), when the run has
//     paced phases at several rates, such as a steps profile;
//   - drain_estimate on the total row: how long the run's peak backlog
//     takes to clear at the best headroom measured.
//
// It returns sentences for the Result's summary: "steady-state capacity
// about 650/s" and "a backlog of 100,000 clears in 4m40s at 357/s of
// headroom".
func Capacity(res *pipebench.Result) []string {
	if res.Total == nil {
		return nil
	}
	if _, ok := res.Total.Get("delivered"); !ok {
		return nil
	}
	var out []string
	bestHeadroom, bestPhase := 0.0, ""
	capacity, rates := 0.0, map[float64]bool{}
	for i := range res.Phases {
		p := &res.Phases[i]
		target, paced := p.Get("target_rate")
		acc, _ := p.Get("accepted_rate")
		del, _ := p.Get("delivered_rate")
		dropped, _ := p.Get("dropped")
		backlog, _ := p.Get("backlog.max")
		if paced {
			rates[target] = true
		}
		// A backlog of at least a second's acceptance (and 100 items),
		// shrinking by more than the noise.
		if h := del - acc; backlog >= max(acc, 100) && h > 0.02*max(acc, 1) {
			p.Set(pipebench.KPI{Name: "headroom", Value: h, Unit: pipebench.UnitPerSecond})
			if h > bestHeadroom {
				bestHeadroom, bestPhase = h, p.Name
			}
		}
		if paced && acc > 0 && dropped == 0 && del >= 0.98*acc && target > capacity {
			capacity = target
		}
	}
	if len(rates) > 1 && capacity > 0 {
		res.Total.Set(pipebench.KPI{Name: "capacity", Value: capacity, Unit: pipebench.UnitPerSecond})
		out = append(out, fmt.Sprintf("steady-state capacity about %s/s: the highest rate at which delivery kept up", pipebench.FormatCount(capacity)))
	}
	if peak, ok := res.Total.Get("backlog.max"); ok && peak > 0 && bestHeadroom > 0 {
		secs := peak / bestHeadroom
		res.Total.Set(pipebench.KPI{Name: "drain_estimate", Value: secs, Unit: pipebench.UnitSeconds})
		out = append(out, fmt.Sprintf("a backlog of %s clears in %s at %s/s of headroom (measured in phase %s)",
			pipebench.FormatCount(peak), pipebench.FormatDuration(time.Duration(secs*float64(time.Second)).Round(time.Second)),
			pipebench.FormatCount(bestHeadroom), bestPhase))
	}
	return out
}
