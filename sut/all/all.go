// Package all registers the embedded systems under test by one call, beside
// the plug-ins every program of pipebench has (builtins.Registry): the
// pipebench command has them, the lean load generator (pipebench-load)
// does not.
package all

import (
	"errors"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/sut/eventproxy"
	"github.com/pipebench/pipebench/sut/healthevents"
	"github.com/pipebench/pipebench/sut/jetstream"
	"github.com/pipebench/pipebench/sut/kafka"
	"github.com/pipebench/pipebench/sut/otelcol"
	"github.com/pipebench/pipebench/sut/otelcol/collector"
	"github.com/pipebench/pipebench/sut/promagent"
	"github.com/pipebench/pipebench/sut/relay"
)

// Register adds every embedded system under test to reg.
func Register(reg *pipebench.Registry) error {
	return errors.Join(
		reg.SUTs.Register(relay.Factory()),
		reg.SUTs.Register(otelcol.Factory()),
		reg.SUTs.Register(jetstream.Factory()),
		reg.SUTs.Register(eventproxy.Factory()),
		reg.SUTs.Register(healthevents.Factory()),
		reg.SUTs.Register(promagent.Factory()),
		reg.SUTs.Register(kafka.Factory()),
	)
}

// Registry returns every built-in plug-in: builtins.Registry's and the
// embedded systems under test.
func Registry() (*pipebench.Registry, error) {
	reg, err := builtins.Registry()
	if err != nil {
		return nil, err
	}
	if err := Register(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// MaybeRunChild runs, and then exits, the light embedded system this
// process was started to be (a nats-server node, the event publisher
// proxy), if any; otherwise it returns at once. The pipebench command's
// main calls it first thing; pipebench-sut runs the heavy ones (package
// heavy), and a test binary that starts systems calls
// internal/testkit/children's MaybeRun, which runs both.
func MaybeRunChild() {
	jetstream.MaybeRunChild()
	eventproxy.MaybeRunChild()
	collector.MaybeRunChild()
}
