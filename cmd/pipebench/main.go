// Command pipebench runs reproducible load, burst, backpressure, soak and
// limit tests against event and telemetry pipelines and ends each run with a
// KPI table. `pipebench run` with no argument runs the built-in quickstart.
//
// This is the only package that calls os.Exit.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pipebench/pipebench/sut/jetstream"
	"github.com/pipebench/pipebench/sut/otelcol"
)

func main() {
	// The embedded OpenTelemetry Collector runs as a child process of this
	// same binary.
	otelcol.MaybeRunChild()
	// So do the embedded nats-server nodes.
	jetstream.MaybeRunChild()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// A second signal while the run drains and writes its result ends
		// the process at once.
		<-ctx.Done()
		stop()
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		<-again
		os.Exit(130)
	}()
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
