package natse2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/runner"
)

// nodeView is what one node's own /jsz says of a consumer: the node it
// says leads it, and its num_pending and num_ack_pending.
type nodeView struct {
	Answered            bool
	Leader              string
	Pending, AckPending float64
}

// readJSZ asks every instance's /jsz (the nodes; the proxy answers no
// /jsz) what it says of the consumer, as an operator would.
func readJSZ(stream, consumer string) func(ctx context.Context, env pipebench.Env) (map[string]nodeView, error) {
	return func(ctx context.Context, env pipebench.Env) (map[string]nodeView, error) {
		out := map[string]nodeView{}
		for _, in := range env.Instances {
			if !strings.HasPrefix(in.Name, "nats-") {
				continue
			}
			var j struct {
				Accounts []struct {
					Streams []struct {
						Name      string `json:"name"`
						Consumers []struct {
							Name    string `json:"name"`
							Cluster struct {
								Leader string `json:"leader"`
							} `json:"cluster"`
							Pending    float64 `json:"num_pending"`
							AckPending float64 `json:"num_ack_pending"`
						} `json:"consumer_detail"`
					} `json:"stream_detail"`
				} `json:"account_details"`
			}
			cl := http.Client{Timeout: time.Second}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(in.MetricsURL, "/")+"/jsz?streams=true&consumers=true", nil)
			resp, err := cl.Do(req)
			if err != nil {
				out[in.Name] = nodeView{}
				continue
			}
			err = json.NewDecoder(resp.Body).Decode(&j)
			resp.Body.Close()
			if err != nil {
				out[in.Name] = nodeView{}
				continue
			}
			v := nodeView{Answered: true}
			for _, a := range j.Accounts {
				for _, s := range a.Streams {
					for _, c := range s.Consumers {
						if s.Name == stream && c.Name == consumer {
							v.Leader, v.Pending, v.AckPending = c.Cluster.Leader, c.Pending, c.AckPending
						}
					}
				}
			}
			out[in.Name] = v
		}
		return out, nil
	}
}

// eventing is the eventing reference's run (kyma-eventing-500) scaled: a
// publisher proxy in front of a 3-node JetStream cluster, a stream of 3
// replicas, the sink's consumer at 300/s against 500/s published, a drain
// too short to catch up, so events are pending when the run ends; chaos
// is the proxy's chaos schedule, if any.
func eventing(chaos string) string {
	return `
name: ledger-eventing
sut:
  type: eventproxy
  nats: {nodes: 3, max_store: 67108864}
  stream: {name: EVENTS, retention: interest, discard: new, replicas: 3}
` + chaos + `
target: {driver: http, connections: 8}
workload: {generator: cloudevents, mode: binary, type: com.example.order.created, source: /checkout, size: 256}
sink: {type: nats, durable: pipebench}
observers: [{type: prometheus, preset: eventproxy}, {type: reading}, {type: nats}]
interval: 500ms
drain: 1s
defaults:
  faults: {rate_limit: 300/s}
phases:
  - {name: soak, duration: 4s, rate: 500/s}
`
}

// The eventing reference stopped mid-drain: what is pending at the end is
// what the node that leads the sink's consumer says it has not delivered
// or not had acknowledged, read by the test from every node's own /jsz
// at the run's last observation; lost is what was accepted and neither
// delivered nor held.
func TestLedgerEventingMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster")
	}
	rd := testutil.NewReading(readJSZ("EVENTS", "pipebench"))
	reg := registry(t)
	if err := reg.Observers.Register(rd.Factory("reading")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: scenariotest.Plan(t, reg, "ledger-eventing.yaml", eventing("")), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	views, at, err := rd.Last()
	if err != nil || at.IsZero() {
		t.Fatalf("the test's reading: %v at %v", err, at)
	}
	var leader nodeView
	for name, v := range views {
		if v.Answered && v.Leader == name {
			leader = v
		}
	}
	if !leader.Answered {
		t.Fatalf("no node says it leads the consumer: %+v", views)
	}
	tot := res.Total
	get := func(name string) float64 {
		v, ok := tot.Get(name)
		if !ok {
			t.Fatalf("the total has no %s: %s", name, strings.Join(res.Summary, "\n"))
		}
		return v
	}
	accepted, delivered, missing := get("accepted"), get("delivered"), get("missing")
	pending, lost, held := get("pending_at_end"), get("lost"), get("held_at_end")
	t.Logf("every node's /jsz at the last observation: %+v\n%s", views, strings.Join(res.Summary, "\n"))
	// The two readings are a few milliseconds apart, in which the
	// consumer may deliver and have acknowledged a few events at 300/s.
	if d := held - (leader.Pending + leader.AckPending); d > 30 || d < -30 {
		t.Errorf("held at end %v, the consumer's leader said %v pending + %v ack pending", held, leader.Pending, leader.AckPending)
	}
	if pending == 0 || pending != min(held, missing) {
		t.Errorf("pending %v of %v missing, %v held: want what is held, at most what is missing, and not 0", pending, missing, held)
	}
	if delivered+pending+lost != accepted || missing != pending+lost {
		t.Errorf("delivered %v + pending %v + lost %v != accepted %v (missing %v)", delivered, pending, lost, accepted, missing)
	}
}

// The stream's consumer loses its leader in the drain (two of its three
// nodes killed): what it holds cannot be read, so the ledger says so,
// naming what each node said, and counts the missing events unaccounted
// for, not lost; the test's own reading of every node's /jsz agrees that
// no node answering leads it.
func TestLedgerEventingWithoutLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster")
	}
	rd := testutil.NewReading(readJSZ("EVENTS", "pipebench"))
	reg := registry(t)
	if err := reg.Observers.Register(rd.Factory("reading")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plan := scenariotest.Plan(t, reg, "ledger-eventing.yaml", eventing(`  chaos:
    - {at: 3500ms, action: kill, target: nats-1}
    - {at: 3500ms, action: kill, target: nats-2}`))
	plan.Drain = pipebench.Duration(4 * time.Second) // time for nats-0 to see its peers gone
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	views, at, _ := rd.Last()
	t.Logf("every node's /jsz at the last observation (%v): %+v\n%s", at, views, strings.Join(res.Summary, "\n"))
	for name, v := range views {
		if v.Answered && v.Leader == name {
			t.Skipf("%s still says it leads the consumer at the end: the cluster did not lose its leader in time", name)
		}
	}
	tot := res.Total
	missing, _ := tot.Get("missing")
	if _, ok := tot.Get("lost"); ok {
		t.Errorf("lost given although what the stream holds could not be read: %v", tot.KPIs)
	}
	if _, ok := tot.Get("pending_at_end"); ok {
		t.Errorf("pending given although no node leads the consumer")
	}
	if u, _ := tot.Get("unaccounted"); missing == 0 || u != missing {
		t.Errorf("unaccounted %v, missing %v: want every missing event unaccounted for", u, missing)
	}
	var why string
	for _, k := range tot.All("ledger_unknown") {
		why += k.Labels["because"]
	}
	for _, want := range []string{"no node leads consumer EVENTS/pipebench", "nats-0 says", "nats-1 did not answer", "nats-2 did not answer"} {
		if !strings.Contains(why, want) {
			t.Errorf("unknown because %q: want %q in it", why, want)
		}
	}
	if s := strings.Join(res.Summary, "\n"); !strings.Contains(s, fmt.Sprintf("%s unaccounted for (pending at end unknown, because no node leads consumer EVENTS/pipebench", pipebench.FormatCount(missing))) {
		t.Errorf("the summary does not say which events are unaccounted for, and why:\n%s", s)
	}
}

// The chef reference (chef-capacity at a tenth of its length, its steady
// and buffered phases: 3,000 connections, services every 30 s, the
// consumer at 650/s under 800/s buffered) stopped mid-drain: what is pending at the end is what the
// server's own /jsz says the consumer has not delivered or not had
// acknowledged, at the run's last observation.
func TestLedgerChefMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("a run with 3,000 connections through nats-server")
	}
	rd := testutil.NewReading(readJSZ("EVENTS", "eas"))
	plan, reg := suitetest.BuiltinPlan(t, "chef-capacity", 18*time.Second)
	// Steady, then buffered with the consumer slowed to 300/s: the run
	// ends with a backlog the drain does not clear.
	plan.Phases = plan.Phases[:2]
	plan.Phases[1].Faults.RateLimit = 300
	if err := reg.Observers.Register(rd.Factory("reading")); err != nil {
		t.Fatal(err)
	}
	plan.Observers = append(plan.Observers, pipebench.Component{Type: "reading"})
	plan.Interval, plan.Drain = pipebench.Duration(500*time.Millisecond), pipebench.Duration(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	suitetest.SkipIfOverloaded(t, res)
	views, _, err := rd.Last()
	if err != nil || len(views) != 1 {
		t.Fatalf("the test's reading: %v, %+v", err, views)
	}
	var node nodeView
	for _, v := range views {
		node = v // one server, not clustered: it holds the consumer
	}
	tot := res.Total
	accepted, _ := tot.Get("accepted")
	delivered, _ := tot.Get("delivered")
	pending, okP := tot.Get("pending_at_end")
	lost, okL := tot.Get("lost")
	held, _ := tot.Get("held_at_end")
	t.Logf("/jsz at the last observation: %+v\n%s", node, strings.Join(res.Summary, "\n"))
	// The readings are milliseconds apart, the consumer at 300/s.
	if d := held - (node.Pending + node.AckPending); d > 30 || d < -30 {
		t.Errorf("held at end %v, the server said %v pending + %v ack pending", held, node.Pending, node.AckPending)
	}
	if !okP || !okL || pending == 0 || lost != 0 || delivered+pending != accepted {
		t.Errorf("delivered %v + pending %v (%v) + lost %v (%v) != accepted %v: want every event delivered or pending", delivered, pending, okP, lost, okL, accepted)
	}
}
