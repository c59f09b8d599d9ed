package scenario

import (
	"fmt"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/schedule"
)

// Compile resolves a scenario into a Plan: every default applied, the items
// of every phase counted exactly as the pacer will send them.
func Compile(s *Scenario) (pipebench.Plan, error) {
	plan := pipebench.Plan{Scenario: s.Name, Version: s.Version, Drain: s.Drain}
	batch := s.Batch
	if batch < 1 {
		batch = DefaultBatch
	}
	for _, ph := range s.Phases {
		pp := pipebench.PlanPhase{
			Name: ph.Name, Profile: ph.Profile, Duration: ph.Duration, Stagger: ph.Stagger,
			MaxInFlight: ph.MaxInFlight, BatchSize: batch, Faults: ph.Faults,
		}
		if pp.MaxInFlight < 1 {
			pp.MaxInFlight = DefaultMaxInFlight
		}
		p, err := schedule.New(pp)
		if err != nil {
			return plan, pipebench.UsageError(fmt.Sprintf("phase %q cannot be paced", ph.Name), "check its rates and durations", err)
		}
		pp.Items = p.Sends() * uint64(batch)
		if pp.Profile.Kind == pipebench.ProfileBlast {
			pp.Items = pp.Profile.Count
		}
		plan.Phases = append(plan.Phases, pp)
	}
	return plan, nil
}
