// Package scenariotest runs a scenario written in a test through the real
// parser, compiler and runner, with a registry of just the plug-ins the
// test names.
package scenariotest

import (
	"context"
	"fmt"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/scenario"
)

// Registry returns a new Registry holding factories, each the Factory of a
// Generator, Driver, Sink, Observer, SUT or Reporter. A factory of another
// kind, or a name registered twice, fails the test.
func Registry(tb testing.TB, factories ...any) *pipebench.Registry {
	tb.Helper()
	reg := pipebench.NewRegistry()
	for _, f := range factories {
		var err error
		switch f := f.(type) {
		case pipebench.Factory[pipebench.Generator]:
			err = reg.Generators.Register(f)
		case pipebench.Factory[pipebench.Driver]:
			err = reg.Drivers.Register(f)
		case pipebench.Factory[pipebench.Sink]:
			err = reg.Sinks.Register(f)
		case pipebench.Factory[pipebench.Observer]:
			err = reg.Observers.Register(f)
		case pipebench.Factory[pipebench.SUT]:
			err = reg.SUTs.Register(f)
		case pipebench.Factory[pipebench.Reporter]:
			err = reg.Reporters.Register(f)
		default:
			err = fmt.Errorf("%T is not the factory of a plug-in", f)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	return reg
}

// Plan parses the scenario text (file names it in errors) with reg's
// plug-ins and compiles it; an error fails the test.
func Plan(tb testing.TB, reg *pipebench.Registry, file, text string) pipebench.Plan {
	tb.Helper()
	sc, err := scenario.Parse(file, []byte(text), scenario.Params{Registry: reg})
	if err != nil {
		tb.Fatal(err)
	}
	plan, err := scenario.Compile(sc)
	if err != nil {
		tb.Fatal(err)
	}
	return plan
}

// Run runs the scenario text as Plan makes it, with reg, and returns its
// Result; the runner's error fails the test.
func Run(tb testing.TB, reg *pipebench.Registry, file, text string) *pipebench.Result {
	tb.Helper()
	res, err := runner.Run(context.Background(), runner.Params{Plan: Plan(tb, reg, file, text), Registry: reg})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// TwoPhases is the text of a scenario, name, that sends 64-byte events
// over connections HTTP connections to url in two one-second phases, a
// and b, at rateA and rateB items a second, allowing no errors: the run
// the tests of shards split, in one process or in many.
func TwoPhases(name, url string, connections, rateA, rateB int) string {
	return fmt.Sprintf(`
name: %s
target: {driver: http, url: %q, connections: %d}
workload: {generator: event, size: 64}
phases:
  - {name: a, duration: 1s, rate: %d/s}
  - {name: b, duration: 1s, rate: %d/s}
thresholds: ["errors == 0"]
`, name, url, connections, rateA, rateB)
}

// Refused is the text of a scenario aimed at addr (host:port), where
// nothing listens: one second at 20 items a second over two HTTP
// connections, judged by threshold. Its run is invalid: nothing reached
// the system under test.
func Refused(addr, threshold string) string {
	return fmt.Sprintf(`
name: refused
target: {driver: http, url: "http://%s/", connections: 2}
phases:
  - {name: load, duration: 1s, rate: 20/s}
thresholds:
  - %q
`, addr, threshold)
}
