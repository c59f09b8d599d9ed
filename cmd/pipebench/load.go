package main

import (
	"fmt"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/scenario"
)

// defaultScenario is what `pipebench run` runs with no argument.
const defaultScenario = builtins.DefaultScenario

// loadScenario reads a scenario from a file, "-" (stdin), or "builtin:NAME".
func (a *app) loadScenario(ref string) (*scenario.Scenario, error) {
	return builtins.ScenarioWith(ref, a.params())
}

// params are the decoder's: the registry, and ${VAR} looked up in a.env
// (the process's environment when nil).
func (a *app) params() scenario.Params { return scenario.Params{Registry: a.reg, Env: a.env} }

// loadScenarioBytes parses a scenario held in memory; file names it in
// messages.
func (a *app) loadScenarioBytes(file string, data []byte) (*scenario.Scenario, error) {
	return scenario.Parse(file, data, a.params())
}

// compile turns a scenario into its Plan, then applies --sut-version and
// --duration (which scales every phase so the load lasts total, keeping
// its shape: how the reference's 20-minute tests run in 2 minutes).
func compile(sc *scenario.Scenario, total time.Duration, totalSet bool, sutVersion string) (pipebench.Plan, error) {
	plan, err := scenario.Compile(sc)
	if err != nil {
		return plan, err
	}
	if sutVersion != "" {
		plan.Version = sutVersion
	}
	if totalSet {
		scaled, err := plan.Scale(total)
		if err != nil {
			return plan, pipebench.UsageError(fmt.Sprintf("--duration %s cannot be used", total), "give a positive duration long enough for every phase to send", err)
		}
		plan = scaled
	}
	return plan, nil
}

// overrideRate applies --rate (a rate like 2000/s: the plan's peak rate,
// every other rate scaled by the same factor, the shape kept); "" leaves
// the plan as it is.
func overrideRate(plan pipebench.Plan, rate string) (pipebench.Plan, error) {
	if rate == "" {
		return plan, nil
	}
	r, err := parseRateFlag("rate", rate)
	if err != nil {
		return plan, err
	}
	scaled, err := plan.ScaleRate(r)
	if err != nil {
		return plan, pipebench.UsageError(fmt.Sprintf("--rate %s cannot be used", rate), "", err)
	}
	return scaled, nil
}
