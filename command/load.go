package command

import (
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/scenario"
)

// defaultScenario is what `pipebench run` runs with no argument.
const defaultScenario = builtins.DefaultScenario

// loadScenario reads a scenario from a file, "-" (stdin), or "builtin:NAME".
func (a *app) loadScenario(ref string) (*scenario.Scenario, error) {
	return builtins.ScenarioWith(ref, a.params())
}

// params are the decoder's: the registry, ${VAR} looked up in a.env
// (the process's environment when nil), and the context a signal ends
// the reading of the scenario file with.
func (a *app) params() scenario.Params {
	return scenario.Params{Context: a.ctx, Registry: a.reg, Env: a.env}
}
