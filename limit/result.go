package limit

import (
	"fmt"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// Result records a search as a Result like any run's, so the history
// keeps it and `compare` lines up the limits of two versions: one phase
// per probe (named by its rate, or burst length), and a total row holding
// sustainable_rate (or burst_tolerance, in seconds) with its uncertainty,
// first_unstable_rate and the number of probes. started is when the
// search began and searchErr what stopped it early, if anything. Its
// status comes from kpi.Verdict: aborted after a signal; invalid when a
// probe was invalid for a reason other than pipebench's ceiling, or when
// the ceiling came before any stable rate (no answer); completed
// otherwise (a search has no thresholds of its own: its answer is a
// measurement). The answer is never an invalid probe's rate.
func (a *Answer) Result(plan pipebench.Plan, burst pipebench.Rate, started time.Time, searchErr error) *pipebench.Result {
	m := pipebench.Manifest{
		RunID: pipebench.NewRunID(started, "limit"), Tool: "pipebench",
		Scenario: plan.Scenario, File: plan.File, Version: plan.Version, Case: plan.Case + " (limit)",
		Labels: plan.Labels, Target: plan.Target.Type, Started: started.UTC(), Ended: time.Now().UTC(), Item: "item",
	}
	for _, p := range a.Probes {
		if r := p.Result; r != nil {
			m.ToolVersion, m.Args, m.Item = r.Manifest.ToolVersion, r.Manifest.Args, r.Manifest.Item
			m.Host, m.GoVersion = r.Manifest.Host, r.Manifest.GoVersion
			break
		}
	}
	res := &pipebench.Result{Schema: pipebench.ResultSchema, Plan: plan.Redacted()}
	var first, ended time.Time
	for i, p := range a.Probes {
		if p.Result == nil || len(p.Result.Phases) == 0 {
			continue
		}
		ph := p.Result.Phases[0]
		ph.Name = fmt.Sprintf("probe %d: %s/s", i+1, pipebench.FormatCount(float64(p.Rate)))
		if burst > 0 {
			ph.Name = fmt.Sprintf("probe %d: %s", i+1, pipebench.FormatDuration(p.Duration))
		}
		verdict := 1.0
		if !p.Stable {
			verdict = 0
		}
		ph.Set(pipebench.KPI{Name: "stable", Value: verdict, Unit: pipebench.UnitCount})
		res.Phases = append(res.Phases, ph)
		if first.IsZero() {
			first = ph.Started
		}
		ended = ph.Ended
	}
	res.Series = probeSeries(a.Probes)
	total := pipebench.PhaseResult{Name: "total", Started: first, Ended: ended}
	name, unit := "sustainable_rate", pipebench.UnitPerSecond
	if burst > 0 {
		name, unit = "burst_tolerance", pipebench.UnitSeconds
	}
	total.Set(pipebench.KPI{Name: name, Value: a.Sustainable, Unit: unit})
	total.Set(pipebench.KPI{Name: name + ".uncertainty", Value: a.Uncertainty, Unit: unit})
	if a.FirstUnstable > 0 {
		first := "first_unstable_rate"
		if burst > 0 {
			first = "first_unabsorbed_burst"
		}
		total.Set(pipebench.KPI{Name: first, Value: a.FirstUnstable, Unit: unit})
	}
	if burst > 0 && a.DrainTime > 0 {
		total.Set(pipebench.KPI{Name: "drain_time", Value: a.DrainTime, Unit: pipebench.UnitSeconds})
	}
	total.Set(pipebench.KPI{Name: "probes", Value: float64(len(a.Probes)), Unit: pipebench.UnitCount})
	if a.Stopped == "ceiling" && a.Ceiling > 0 {
		total.Set(pipebench.KPI{Name: "generator_ceiling", Value: a.Ceiling, Unit: pipebench.UnitPerSecond})
	}
	res.Total = &total
	j := kpi.Judgement{Ran: len(a.Probes), Planned: len(a.Probes)}
	switch {
	case searchErr != nil && pipebench.ExitCode(searchErr) == pipebench.ExitInvalid:
		j.Invalid = []string{searchErr.Error()}
	case searchErr != nil && a.Stopped == "interrupted":
		j.Aborted = true
	case searchErr != nil:
		j.Error = searchErr.Error()
	case a.Stopped == "ceiling" && a.Sustainable == 0:
		j.Invalid = []string{"pipebench could not produce even the first probe's rate on this machine: the search found nothing of the system under test (start lower with --start, or scale out with shards)"}
	}
	status, reasons := kpi.Verdict(j)
	m.Status = status
	if status == pipebench.StatusCompleted {
		// A search's answer stands without thresholds: say it, not that
		// thresholds are missing.
		reasons = nil
	}
	m.Reasons = append(reasons, a.Words(burst)...)
	res.Manifest = m
	return res
}

// Words says the answer in a few sentences.
func (a *Answer) Words(burst pipebench.Rate) []string {
	value := func(v float64) string {
		if burst > 0 {
			return pipebench.FormatDuration(time.Duration(v * float64(time.Second)).Round(10 * time.Millisecond))
		}
		return pipebench.FormatCount(v) + "/s"
	}
	what := "sustainable rate"
	if burst > 0 {
		what = fmt.Sprintf("longest burst at %s/s absorbed with nothing lost", pipebench.FormatCount(float64(burst)))
	}
	var out []string
	switch a.Stopped {
	case "unstable at the start":
		out = append(out, fmt.Sprintf("unstable already at the first probe (%s): start lower (--start)", a.FailedBecause))
		return out
	case "ceiling":
		s := fmt.Sprintf("%s: at least %s: the system's limit is above what this generator reaches", what, value(a.Sustainable))
		if a.Ceiling > 0 {
			s += fmt.Sprintf("; pipebench's own ceiling here is %s/s (it sent that much of the %s/s probe)", pipebench.FormatCount(a.Ceiling), pipebench.FormatCount(a.CeilingAt))
		}
		out = append(out, s+": spread the load over shards (run --shard I/N on several machines, or k8s run --shards N) to go higher")
		if a.CeilingWhy != "" {
			out = append(out, a.CeilingWhy)
		}
		return out
	}
	s := fmt.Sprintf("%s: %s", what, value(a.Sustainable))
	if a.Uncertainty > 0 {
		s += " ± " + value(a.Uncertainty)
	}
	out = append(out, s)
	if a.FirstUnstable > 0 {
		out = append(out, fmt.Sprintf("first unstable: %s (%s)", value(a.FirstUnstable), a.FailedBecause))
	}
	if burst > 0 && a.DrainTime > 0 {
		out = append(out, fmt.Sprintf("the longest absorbed burst took %s to drain", value(a.DrainTime)))
	}
	if w, ok := stoppedWords[a.Stopped]; ok {
		out = append(out, w)
	}
	return out
}

// stoppedWords says why a search that found its answer stopped where it
// did.
var stoppedWords = map[string]string{
	"budget":    "stopped by the time budget before the asked precision",
	"max":       "stable up to --max: the limit is higher",
	"precision": "stopped at the asked precision",
}

// probeSeries joins the probes' series end to end, so the charts of the
// search show each probe in turn: the target rate climbing and bisecting,
// what was sent, accepted and delivered, the backlog and queues.
func probeSeries(probes []Probe) []pipebench.Series {
	byKey := map[string]*pipebench.Series{}
	var keys []string
	for _, p := range probes {
		if p.Result == nil {
			continue
		}
		for _, s := range p.Result.Series {
			k := s.Key()
			have, ok := byKey[k]
			if !ok {
				cp := s
				cp.Points = nil
				have = &cp
				byKey[k] = have
				keys = append(keys, k)
			}
			have.Points = append(have.Points, s.Points...)
		}
	}
	out := make([]pipebench.Series, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}
