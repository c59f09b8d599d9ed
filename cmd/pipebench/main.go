// Command pipebench runs reproducible load, burst, backpressure, soak and
// limit tests against event and telemetry pipelines and ends each run with a
// KPI table. `pipebench run` with no argument runs the built-in quickstart.
//
// This is the only package that calls os.Exit.
package main

import (
	"os"

	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/residency"
)

func main() {
	// What the initialisation of the binary's packages read stays out
	// of this process's memory, and out of its children's.
	residency.Trim()

	// The embedded OpenTelemetry Collector and nats-server nodes run as
	// child processes of this same binary.
	builtins.MaybeRunChild()

	ctx, cut, release := execute.Signals(os.Stderr)
	code := executeWith(ctx, cut, nil, os.Args[1:], os.Stdout, os.Stderr)
	release()
	os.Exit(code)
}
