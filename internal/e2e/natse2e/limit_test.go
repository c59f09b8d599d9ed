package natse2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/limit"
	"github.com/pipebench/pipebench/runner"
)

// The limit search against the embedded JetStream with a slow consumer
// (it processes 400 events/s, with a bucket of 50 ms: a sharp capacity): above that the backlog on the server grows,
// so the sustainable rate found is the consumer's, within the asked 10%.
func TestLimitWithASlowConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("a limit search of several probes through nats-server")
	}
	reg := natsRegistry(t)
	plan := scenariotest.Plan(t, reg, "slow-consumer.yaml", `
name: slow-consumer
sut: {type: jetstream}
target: {driver: nats, mode: jetstream-async, connections: 4}
workload: {generator: event, size: 64}
sink: {type: nats, stream: EVENTS, durable: pipebench}
observers: [{type: nats}]
drain: 3s
phases:
  - {name: load, duration: 3s, rate: 200/s, faults: {rate_limit: 400/s, rate_limit_burst: 50ms}}
`)
	var lines []string
	ans, err := limit.Search(context.Background(), limit.Params{
		Plan: plan, Start: 250, Probe: 3 * time.Second, Precision: 0.1, Tolerance: 0.01, Budget: 3 * time.Minute,
		Run: func(ctx context.Context, p pipebench.Plan) (*pipebench.Result, error) {
			return runner.Run(ctx, runner.Params{Plan: p, Registry: reg})
		},
		Progress: func(pr limit.Probe, _ limit.Bracket) {
			lines = append(lines, pipebench.FormatCount(float64(pr.Rate))+": "+map[bool]string{true: "stable", false: pr.Why}[pr.Stable])
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probes:\n%s", strings.Join(lines, "\n"))
	if ans.Stopped == "ceiling" {
		t.Skipf("the machine was too loaded: pipebench's own ceiling was reached (%s)", strings.Join(lines, "; "))
	}
	if ans.Sustainable < 340 || ans.Sustainable > 440 {
		t.Errorf("sustainable %v/s (stopped: %s), want the consumer's 400/s within 10%%", ans.Sustainable, ans.Stopped)
	}
	if !strings.Contains(ans.FailedBecause, "backlog growing") && !strings.Contains(ans.FailedBecause, "delivery fell behind") {
		t.Errorf("first unstable %v failed because %q, want delivery or backlog", ans.FirstUnstable, ans.FailedBecause)
	}
}
