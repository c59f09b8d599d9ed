package runner

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/schedule"
)

// An observation whose tick came before the phase now running began (its
// observers were slow) reads the target of the phase at that time, and
// one past the phase's end before the next began its end's: not 0.
func TestTargetRateOfALateObservation(t *testing.T) {
	phase := func(rate float64) pipebench.PlanPhase {
		return pipebench.PlanPhase{Duration: pipebench.Duration(10 * time.Second), BatchSize: 1,
			Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: pipebench.Rate(rate)}}
	}
	r := &run{plan: pipebench.Plan{Phases: []pipebench.PlanPhase{phase(500), phase(200)}}}
	for _, ph := range r.plan.Phases {
		p, err := schedule.New(ph)
		if err != nil {
			t.Fatal(err)
		}
		r.pacers = append(r.pacers, p)
	}
	t0 := time.Now()
	r.phaseT0 = []time.Time{t0, t0.Add(10 * time.Second)}
	r.phaseIdx.Store(1)
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{9 * time.Second, 500}, {10*time.Second - time.Millisecond, 500}, {11 * time.Second, 200}, {25 * time.Second, 200}} {
		if got := r.targetRate(t0.Add(c.at)); got != c.want {
			t.Errorf("target at +%s: %v, want %v", c.at, got, c.want)
		}
	}
}
