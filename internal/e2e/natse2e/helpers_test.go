package natse2e

import (
	"testing"

	"github.com/pipebench/pipebench"
	natsdriver "github.com/pipebench/pipebench/driver/nats"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	natsobs "github.com/pipebench/pipebench/observer/nats"
	"github.com/pipebench/pipebench/payload"
	natssink "github.com/pipebench/pipebench/sink/nats"
	"github.com/pipebench/pipebench/sut/all"
	"github.com/pipebench/pipebench/sut/jetstream"
)

// registry is every plug-in pipebench ships, as the CLI wires them.
func registry(t *testing.T) *pipebench.Registry {
	t.Helper()
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// natsRegistry holds the plug-ins of a NATS run: the event generator, the
// nats driver, sink and observer, and the jetstream system under test.
func natsRegistry(t *testing.T) *pipebench.Registry {
	t.Helper()
	return scenariotest.Registry(t, payload.EventFactory(), natsdriver.Factory(), natssink.Factory(), jetstream.Factory(), natsobs.Factory())
}
