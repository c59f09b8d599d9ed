package main

import (
	"fmt"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/examples"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/scenario"
)

// defaultScenario is what `pipebench run` runs with no argument.
const defaultScenario = "builtin:quickstart"

// loadScenario reads a scenario from a file, "-" (stdin), or "builtin:NAME".
func (a *app) loadScenario(ref string) (*scenario.Scenario, error) {
	if name, ok := strings.CutPrefix(ref, "builtin:"); ok {
		data, err := fs.ReadFile(examples.FS, name+".yaml")
		if err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("there is no built-in scenario %q", name),
				"list them with: pipebench run --list", nil)
		}
		return a.loadScenarioBytes(ref, data)
	}
	return scenario.Load(ref, a.scenarioParams())
}

// loadScenarioBytes parses a scenario held in memory; file names it in
// messages.
func (a *app) loadScenarioBytes(file string, data []byte) (*scenario.Scenario, error) {
	return scenario.Parse(file, data, a.scenarioParams())
}

func (a *app) scenarioParams() scenario.Params {
	return scenario.Params{
		Registry:       a.reg,
		CheckThreshold: func(expr string) error { _, err := kpi.ParseThreshold(expr); return err },
	}
}

// compile turns a scenario into a plan and applies --duration and
// --sut-version.
func compile(sc *scenario.Scenario, total time.Duration, sutVersion string) (pipebench.Plan, error) {
	if sutVersion != "" {
		sc.Version = sutVersion
	}
	if total > 0 {
		if err := scaleDurations(sc, total); err != nil {
			return pipebench.Plan{}, err
		}
	}
	return scenario.Compile(sc)
}

// scaleDurations stretches or shrinks every phase (and its steps, bursts
// and outage windows) by one factor so the phases add up to total. It is how
// the reference's 20-minute tests run in 2 minutes with the same shape.
func scaleDurations(sc *scenario.Scenario, total time.Duration) error {
	var sum time.Duration
	for _, ph := range sc.Phases {
		sum += ph.Duration.D()
	}
	if sum <= 0 {
		return pipebench.UsageError("--duration cannot scale a scenario whose phases have no duration", "", nil)
	}
	f := float64(total) / float64(sum)
	scale := func(d pipebench.Duration) pipebench.Duration {
		return pipebench.Duration(time.Duration(math.Round(float64(d) * f)))
	}
	for i := range sc.Phases {
		ph := &sc.Phases[i]
		ph.Duration = scale(ph.Duration)
		ph.Stagger = scale(ph.Stagger)
		for j := range ph.Profile.Steps {
			ph.Profile.Steps[j].Duration = scale(ph.Profile.Steps[j].Duration)
		}
		if b := ph.Profile.Burst; b != nil {
			nb := *b
			nb.For, nb.Every = scale(b.For), scale(b.Every)
			ph.Profile.Burst = &nb
		}
		for j := range ph.Faults.Outages {
			ph.Faults.Outages[j].Start = scale(ph.Faults.Outages[j].Start)
			ph.Faults.Outages[j].Duration = scale(ph.Faults.Outages[j].Duration)
		}
	}
	return nil
}
