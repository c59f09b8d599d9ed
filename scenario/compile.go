package scenario

import (
	"fmt"

	"github.com/pipebench/pipebench"
)

// Compile resolves a scenario into a Plan, the whole run as data: the
// components with their decoded configurations, every phase with its
// pacer's parameters and its items counted exactly as the pacer will send
// them, the thresholds parsed, the interval and the drain. A steps phase
// becomes one phase per step (each rate is its own test and its own
// column), grouped under the scenario phase's name.
func Compile(s *Scenario) (pipebench.Plan, error) {
	plan := pipebench.Plan{
		Scenario: s.Name, Version: s.Version, Case: s.Case, Description: s.Description,
		File: s.File, Labels: s.Labels,
		Target: s.Target, Workload: s.Generator, SUT: s.SUT, Sink: s.Sink, Observers: s.Observers,
		Thresholds: s.Thresholds, Interval: s.Interval, Drain: s.Drain,
	}
	if plan.Case == "" {
		plan.Case = plan.Scenario
	}
	if plan.Interval <= 0 {
		plan.Interval = DefaultInterval
	}
	batch := s.Batch
	if batch < 1 {
		batch = DefaultBatch
	}
	for _, ph := range s.Phases {
		pp := pipebench.PlanPhase{
			Name: ph.Name, Profile: ph.Profile, Duration: ph.Duration, Stagger: ph.Stagger,
			MaxInFlight: ph.MaxInFlight, BatchSize: batch, Faults: ph.Faults,
			MaxInFlightBytes: ph.MaxInFlightBytes, Tick: ph.Tick,
		}
		if pp.MaxInFlight < 1 {
			pp.MaxInFlight = DefaultMaxInFlight
		}
		if pp.MaxInFlightBytes < 1 {
			pp.MaxInFlightBytes = DefaultMaxInFlightBytes
		}
		if err := pp.Validate(); err != nil {
			return plan, pipebench.UsageError(fmt.Sprintf("phase %q cannot be paced", ph.Name), "check its rates and durations", err)
		}
		plan.Phases = append(plan.Phases, expandSteps(pp)...)
	}
	if err := plan.CountItems(); err != nil {
		return plan, pipebench.UsageError("the plan cannot be paced", "check the phases' rates and durations", err)
	}
	return plan, nil
}

// expandSteps turns a steps phase into one constant phase per step, named
// "NAME 1,000/s" (with the step number when two steps share a rate). The
// stagger applies to the first step; the fault policy to every step (its
// outage windows stay measured from the start of the first).
func expandSteps(ph pipebench.PlanPhase) []pipebench.PlanPhase {
	if ph.Profile.Kind != pipebench.ProfileSteps || len(ph.Profile.Steps) < 2 {
		return []pipebench.PlanPhase{ph}
	}
	seen := map[pipebench.Rate]int{}
	for _, st := range ph.Profile.Steps {
		seen[st.Rate]++
	}
	var out []pipebench.PlanPhase
	var offset pipebench.Duration
	for i, st := range ph.Profile.Steps {
		name := fmt.Sprintf("%s %s/s", ph.Name, pipebench.FormatCount(float64(st.Rate)))
		if seen[st.Rate] > 1 || float64(st.Rate) != float64(int64(st.Rate)) {
			name = fmt.Sprintf("%s #%d (%s)", ph.Name, i+1, st.Rate)
		}
		step := ph
		step.Name, step.Group = name, ph.Name
		step.Profile = pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: st.Rate}
		step.Duration = st.Duration
		if i > 0 {
			step.Stagger = 0
		}
		step.Faults = shiftOutages(ph.Faults, offset, st.Duration)
		offset += st.Duration
		out = append(out, step)
	}
	return out
}

// shiftOutages returns the policy with its outage windows measured from a
// step that starts at offset into the phase and lasts d: the parts of each
// window that fall inside the step.
func shiftOutages(f pipebench.FaultPolicy, offset, d pipebench.Duration) pipebench.FaultPolicy {
	if len(f.Outages) == 0 {
		return f
	}
	out := f
	out.Outages = nil
	for _, w := range f.Outages {
		start, end := w.Start-offset, w.Start+w.Duration-offset
		start, end = max(start, 0), min(end, d)
		if end > start {
			out.Outages = append(out.Outages, pipebench.Window{Start: start, Duration: end - start})
		}
	}
	if len(out.Outages) == 0 && out.ErrorRatio == 0 {
		out.ErrorStatus = 0
	}
	return out
}
