package natse2e

import (
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	natsdriver "github.com/pipebench/pipebench/driver/nats"
	"github.com/pipebench/pipebench/internal/scenariotest"
	natsobs "github.com/pipebench/pipebench/observer/nats"
	"github.com/pipebench/pipebench/payload"
	natssink "github.com/pipebench/pipebench/sink/nats"
	"github.com/pipebench/pipebench/sut/jetstream"
)

// registry is every plug-in pipebench ships, as the CLI wires them.
func registry(t *testing.T) *pipebench.Registry {
	t.Helper()
	reg, err := builtins.Registry()
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

// skipIfOverloaded skips a test whose run pipebench itself found invalid
// because the generator fell behind its schedule or its reading: the
// machine was too loaded for the numbers to say anything of the system,
// and the test cannot judge them.
func skipIfOverloaded(t *testing.T, res *pipebench.Result) {
	t.Helper()
	for _, r := range res.Manifest.Reasons {
		if strings.Contains(r, "fell behind its schedule") || strings.Contains(r, "for the generator to read them") {
			t.Skipf("the machine was too loaded to judge this run: %s", r)
		}
	}
}
