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
	return append(out, drainMeasured(res)...)
}

// drainMeasured measures, in each phase whose plan pauses the consumer
// (outage windows), the backlog pattern of the OpenMessaging Benchmark: a
// backlog built while the consumer was paused, then cleared after it
// resumed while the producers kept publishing. From the run's backlog
// series: the peak up to one interval after the resume, and the first
// point after the peak at or below 5% of it (the producers' own
// in-flight events keep the backlog above zero). It sets on the phase
// drain_measured (seconds from the resume to that point) and drain_rate
// (the peak over that time: the net rate at which the backlog cleared),
// on the total row the ones of the biggest backlog, and says it; a
// backlog that never cleared before the run ended is said too.
func drainMeasured(res *pipebench.Result) []string {
	var backlog *pipebench.Series
	for i := range res.Series {
		if res.Series[i].Name == "backlog" && len(res.Series[i].Labels) == 0 {
			backlog = &res.Series[i]
		}
	}
	if backlog == nil || len(backlog.Points) == 0 {
		return nil
	}
	interval := res.Plan.Interval.D()
	if interval <= 0 {
		interval = time.Second
	}
	var out []string
	bestPeak := 0.0
	for i := range res.Phases {
		p := &res.Phases[i]
		var plan *pipebench.PlanPhase
		for j := range res.Plan.Phases {
			if res.Plan.Phases[j].Name == p.Name {
				plan = &res.Plan.Phases[j]
			}
		}
		if plan == nil || len(plan.Faults.Outages) == 0 {
			continue
		}
		var resumeAfter time.Duration
		for _, w := range plan.Faults.Outages {
			resumeAfter = max(resumeAfter, w.Start.D()+w.Duration.D())
		}
		resume := p.Started.Add(resumeAfter)
		if resume.After(p.Ended) {
			continue // paused to the end of the phase: no drain while publishing
		}
		peak, peakAt := 0.0, time.Time{}
		for _, pt := range backlog.Points {
			if !pt.T.Before(p.Started) && !pt.T.After(resume.Add(interval)) && pt.V > peak {
				peak, peakAt = pt.V, pt.T
			}
		}
		if peak < 100 {
			continue // too small a backlog to time
		}
		var cleared time.Time
		for _, pt := range backlog.Points {
			if pt.T.After(peakAt) && !pt.T.Before(resume) && pt.V <= 0.05*peak {
				cleared = pt.T
				break
			}
		}
		if cleared.IsZero() {
			out = append(out, fmt.Sprintf("in phase %s, the backlog of %s built while the consumer was paused had not cleared when the run ended",
				p.Name, pipebench.FormatCount(peak)))
			continue
		}
		secs := max(cleared.Sub(resume).Seconds(), interval.Seconds())
		rate := peak / secs
		p.Set(pipebench.KPI{Name: "drain_measured", Value: secs, Unit: pipebench.UnitSeconds})
		p.Set(pipebench.KPI{Name: "drain_rate", Value: rate, Unit: pipebench.UnitPerSecond})
		if peak > bestPeak && res.Total != nil {
			bestPeak = peak
			res.Total.Set(pipebench.KPI{Name: "drain_measured", Value: secs, Unit: pipebench.UnitSeconds})
			res.Total.Set(pipebench.KPI{Name: "drain_rate", Value: rate, Unit: pipebench.UnitPerSecond})
		}
		out = append(out, fmt.Sprintf("in phase %s, a backlog of %s built while the consumer was paused cleared %s after it resumed (%s/s net) while the producers kept publishing",
			p.Name, pipebench.FormatCount(peak), pipebench.FormatDuration(time.Duration(secs*float64(time.Second)).Round(time.Second)), pipebench.FormatCount(rate)))
	}
	return out
}

// minDriftSpan is the shortest run Drift judges: over less, the first and
// last fifths are too short to compare.
const minDriftSpan = time.Minute

// Drift compares the throughput of the first fifth of a run's load with
// the last fifth, each as a share of the target rate (so planned ramps are
// not taken for drift): the throughput_drift KPI on the total row is the
// last share over the first (1 = no drift). Throughput is delivered_rate
// with a sink, else accepted_rate. Below 0.9 it is also a throughput_drop
// detection, as the eventing reference saw throughput fall after hours.
func Drift(res *pipebench.Result) []pipebench.Detection {
	if res.Total == nil || len(res.Phases) == 0 {
		return nil
	}
	from, to := res.Phases[0].Started, res.Phases[len(res.Phases)-1].Ended
	span := to.Sub(from)
	if span < minDriftSpan {
		return nil
	}
	rate := "accepted_rate"
	if _, ok := res.Total.Get("delivered"); ok {
		rate = "delivered_rate"
	}
	share := func(a, b time.Time) (float64, bool) {
		got, target := meanIn(res.Series, rate, a, b), meanIn(res.Series, "target_rate", a, b)
		if target <= 0 || got < 0 {
			return 0, false
		}
		return got / target, true
	}
	fifth := span / 5
	first, ok1 := share(from, from.Add(fifth))
	last, ok2 := share(to.Add(-fifth), to)
	if !ok1 || !ok2 || first <= 0 {
		return nil
	}
	drift := last / first
	res.Total.Set(pipebench.KPI{Name: "throughput_drift", Value: drift, Unit: pipebench.UnitRatio})
	if drift >= 0.9 {
		return nil
	}
	return []pipebench.Detection{{
		Detector: "throughput_drop", Series: rate, Began: to.Add(-fifth), Value: drift,
		Message: fmt.Sprintf("throughput fell from %.0f%% of the target in the first %s to %.0f%% in the last %s",
			100*first, pipebench.FormatDuration(fifth.Round(time.Second)), 100*last, pipebench.FormatDuration(fifth.Round(time.Second))),
	}}
}

// meanIn is the mean of the series called name over [a, b], -1 when it
// has no point there.
func meanIn(series []pipebench.Series, name string, a, b time.Time) float64 {
	sum, n := 0.0, 0
	for _, s := range series {
		if s.Name != name || len(s.Labels) != 0 {
			continue
		}
		for _, p := range s.Points {
			if !p.T.Before(a) && !p.T.After(b) {
				sum += p.V
				n++
			}
		}
	}
	if n == 0 {
		return -1
	}
	return sum / float64(n)
}
