package natse2e

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/sut/plumbing/natscluster"
)

// jszPending reads a consumer's messages not yet delivered and not yet
// acknowledged from the server's /jsz, as an operator would.
func jszPending(base, stream, consumer string) (float64, bool) {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get(base + "/jsz?streams=true&consumers=true")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var j struct {
		Accounts []struct {
			Streams []struct {
				Name      string `json:"name"`
				Consumers []struct {
					Name       string  `json:"name"`
					Pending    float64 `json:"num_pending"`
					AckPending float64 `json:"num_ack_pending"`
				} `json:"consumer_detail"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if json.NewDecoder(resp.Body).Decode(&j) != nil {
		return 0, false
	}
	for _, a := range j.Accounts {
		for _, s := range a.Streams {
			for _, c := range s.Consumers {
				if s.Name == stream && c.Name == consumer {
					return c.Pending + c.AckPending, true
				}
			}
		}
	}
	return 0, false
}

// A consumer slower than the publishers leaves events in the stream when
// the drain ends: they are pending at the end, not lost. Read against the
// server's own /jsz (polled by the test every 100 ms), pending_at_end is
// the consumer's num_pending + num_ack_pending at the run's last
// observation, within one sample of the consumer's rate; nothing is lost,
// and lost + pending_at_end + delivered is what was accepted.
func TestPendingIsNotLost(t *testing.T) {
	ns := natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), HTTPHost: "127.0.0.1", HTTPPort: -1})
	url, mon := ns.ClientURL(), "http://"+ns.MonitorAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := natscluster.CreateStream(ctx, url, js.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}}, time.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	const consumerRate = 300.0
	plan := scenariotest.Plan(t, registry(t), "pending.yaml", `
name: pending
target: {driver: nats, url: `+url+`, mode: jetstream-async, connections: 4}
workload: {generator: event, size: 64}
sink: {type: nats, url: `+url+`, stream: EVENTS, durable: pipebench}
observers: [{type: nats, url: `+mon+`}]
interval: 500ms
drain: 1s
phases:
  - {name: fast, duration: 1s, rate: 1500/s, faults: {rate_limit: 300/s}}
  - {name: faster, duration: 1s, rate: 2000/s, faults: {rate_limit: 300/s}}
`)
	type reading struct {
		at time.Time
		v  float64
	}
	var mu sync.Mutex
	var readings []reading
	stop := testutil.Every(100*time.Millisecond, func(time.Time) {
		if v, ok := jszPending(mon, "EVENTS", "pipebench"); ok {
			mu.Lock()
			readings = append(readings, reading{time.Now(), v})
			mu.Unlock()
		}
	})
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: registry(t)})
	stop()
	if err != nil {
		t.Fatal(err)
	}
	suitetest.SkipIfOverloaded(t, res)
	get := func(name string) float64 { v, _ := res.Total.Get(name); return v }
	accepted, delivered, lost, pending, held := get("accepted"), get("delivered"), get("lost"), get("pending_at_end"), get("held_at_end")
	// The last observation's time, and the test's own reading nearest it.
	var lastObs time.Time
	for _, s := range res.Series {
		if s.Name == "consumer_pending" && len(s.Points) > 0 {
			lastObs = s.Points[len(s.Points)-1].T
		}
	}
	best, dist := math.NaN(), time.Hour
	for _, r := range readings {
		if d := r.at.Sub(lastObs).Abs(); d < dist {
			best, dist = r.v, d
		}
	}
	t.Logf("accepted %v, delivered %v, lost %v, pending at end %v (held %v); /jsz %v pending %s from the last observation",
		accepted, delivered, lost, pending, held, best, dist)
	if accepted < 0.8*float64(plan.Items()) || pending < 200 {
		t.Fatalf("accepted %v of %d, pending %v: want most accepted and a backlog left", accepted, plan.Items(), pending)
	}
	// What the pipeline held is what /jsz said, within one sample of the
	// consumer's rate; what pipebench had accepted and the pipeline still
	// holds is pending (a publish that timed out at pipebench and was
	// stored anyway is held, not pending), and nothing is lost.
	if slack := consumerRate * (dist.Seconds() + 0.1); math.IsNaN(best) || math.Abs(held-best) > slack {
		t.Errorf("held at end %v, /jsz said %v (%s away): want them within %.0f", held, best, dist, slack)
	}
	if lost != 0 || pending > held {
		t.Errorf("lost %v, pending %v of %v held: what the stream holds is not lost", lost, pending, held)
	}
	if accepted == float64(plan.Items()) && lost+pending+delivered != accepted {
		t.Errorf("every publish acknowledged, yet lost %v + pending %v + delivered %v != accepted %v", lost, pending, delivered, accepted)
	}
	var phasePending float64
	for i := range res.Phases {
		v, _ := res.Phases[i].Get("pending_at_end")
		phasePending += v
	}
	if phasePending != pending {
		t.Errorf("the phases' pending add up to %v, the total's is %v", phasePending, pending)
	}
}
