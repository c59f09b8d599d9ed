// Package heavy gathers the child processes of the embedded systems under
// test that are too heavy for the pipebench command to carry: the
// OpenTelemetry Collector (three quarters of what a build of everything
// compiled) and the health-event service (a Kubernetes client and its
// document store, FerretDB). pipebench-sut links them, and so do the test binaries that
// start them as children of their own; the pipebench command starts
// pipebench-sut instead (childproc.Program).
package heavy

import (
	"github.com/pipebench/pipebench/sut/healthevents/service"
	"github.com/pipebench/pipebench/sut/otelcol/collector/full"
)

// MaybeRunChild runs, and then exits, the heavy child this process was
// started to be, if any; otherwise it returns at once.
func MaybeRunChild() {
	full.MaybeRunChild()
	service.MaybeRunChild()
}
