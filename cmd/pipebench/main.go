// Command pipebench runs reproducible load, burst, backpressure, soak and
// limit tests against event and telemetry pipelines and ends each run with a
// KPI table. `pipebench run` with no argument runs the built-in quickstart.
//
// This is the only package of the pipebench command that calls os.Exit.
package main

import (
	"os"

	"github.com/pipebench/pipebench/command"
	"github.com/pipebench/pipebench/internal/proc/residency"
	"github.com/pipebench/pipebench/internal/proc/tlsroots"
	"github.com/pipebench/pipebench/sut/all"
)

func main() {
	// The image holds no CA certificates: there, TLS verifies with
	// Mozilla's roots, bundled; a machine's own roots are used where it
	// has them.
	tlsroots.FallbackWhereNone()

	// The light embedded systems (nats-server nodes, the event proxy) run
	// as child processes of this same binary; the heavy ones (the
	// OpenTelemetry Collector, the health-event service) as children of
	// pipebench-sut. Their memory is a measurement of the system under
	// test, left as it is.
	all.MaybeRunChild()

	// What the initialisation of the binary's packages read stays out of
	// pipebench's own memory.
	residency.Trim()
	// A large heap grows by half of what is live between two cycles, not
	// by all of it (GOGC, when set, wins).
	residency.Collector()

	command.NewRegistry = all.Registry
	os.Exit(command.Main(os.Args[1:], os.Stdout, os.Stderr))
}
