// Command pipebench runs reproducible load, burst, backpressure, soak and
// limit tests against event and telemetry pipelines and ends each run with a
// KPI table. `pipebench run` with no argument runs the built-in quickstart.
//
// This is the only package that calls os.Exit.
package main

import (
	"os"

	"github.com/pipebench/pipebench/sut/jetstream"
	"github.com/pipebench/pipebench/sut/otelcol"
)

func main() {
	// The embedded OpenTelemetry Collector runs as a child process of this
	// same binary.
	otelcol.MaybeRunChild()
	// So do the embedded nats-server nodes.
	jetstream.MaybeRunChild()

	ctx, cut, release := signals(os.Stderr)
	code := executeWith(ctx, cut, os.Args[1:], os.Stdout, os.Stderr)
	release()
	os.Exit(code)
}
