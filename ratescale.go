package pipebench

import (
	"errors"
	"fmt"
	"math"
)

// PeakRate is the highest rate the plan's open-model phases ask for (a
// blast has none): what `--rate` sets.
func (p Plan) PeakRate() Rate {
	var peak Rate
	for _, ph := range p.Phases {
		pr := ph.Profile
		for _, r := range []Rate{pr.Rate, pr.From, pr.To} {
			peak = max(peak, r)
		}
		for _, st := range pr.Steps {
			peak = max(peak, st.Rate)
		}
		if pr.Burst != nil {
			peak = max(peak, pr.Burst.Rate)
		}
	}
	return peak
}

// ScaleRate returns the plan with every rate multiplied by one factor, so
// that its peak rate is peak and its shape (the phases' rates relative to
// each other, ramps, steps, bursts) is kept: `run --rate`, as Scale is
// `--duration`. Item counts follow; a blast's count is its own. The sink's
// fault rules (a rate limit) are the system's, not the load's, and stay.
func (p Plan) ScaleRate(peak Rate) (Plan, error) {
	if math.IsNaN(float64(peak)) || math.IsInf(float64(peak), 0) || peak <= 0 {
		return p, fmt.Errorf("the rate must be above 0, not %v", float64(peak))
	}
	old := p.PeakRate()
	if old <= 0 {
		return p, fmt.Errorf("the plan has no rate to scale (its phases are blasts: they send a count, as fast as they can)")
	}
	f := float64(peak) / float64(old)
	scale := func(r Rate) Rate { return Rate(float64(r) * f) }
	out := p
	out.Phases = make([]PlanPhase, len(p.Phases))
	for i, ph := range p.Phases {
		pr := ph.Profile
		pr.Rate, pr.From, pr.To = scale(pr.Rate), scale(pr.From), scale(pr.To)
		if pr.Steps != nil {
			steps := make([]Step, len(pr.Steps))
			for j, st := range pr.Steps {
				steps[j] = Step{Rate: scale(st.Rate), Duration: st.Duration}
			}
			pr.Steps = steps
		}
		if pr.Burst != nil {
			b := *pr.Burst
			b.Rate = scale(b.Rate)
			pr.Burst = &b
		}
		ph.Profile = pr
		// A rate the scale made too high to pace, or infinite (1e308
		// times a factor), is refused as the scenario's own would be.
		if err := errors.Join(append([]error{ph.Profile.Validate()}, ph.checkGenerable()...)...); err != nil {
			return p, fmt.Errorf("phase %s: %w", ph.Name, err)
		}
		out.Phases[i] = ph
	}
	if err := out.CountItems(); err != nil {
		return p, err
	}
	return out, nil
}
