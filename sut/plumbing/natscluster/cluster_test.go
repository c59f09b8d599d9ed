package natscluster

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

func TestMain(m *testing.M) {
	MaybeRunChild() // the test binary is also the nats-server child
	os.Exit(m.Run())
}

func start(t *testing.T, p Params) *Cluster {
	t.Helper()
	p.Dir = t.TempDir()
	c, err := Start(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	return c
}

// varz reads a node's /varz through the front, with a short timeout.
func varz(t *testing.T, c *Cluster, node string) (v struct {
	Start      time.Time `json:"start"`
	ServerName string    `json:"server_name"`
	Tags       []string  `json:"tags"`
	JetStream  struct {
		Config struct {
			MaxStorage int64 `json:"max_storage"`
		} `json:"config"`
	} `json:"jetstream"`
}, ok bool) {
	cl := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := cl.Get(c.front.URL(node) + "/varz")
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return v, false
	}
	return v, json.NewDecoder(resp.Body).Decode(&v) == nil
}

// Three nodes, each its own process with its own storage limit and tags;
// one is killed (the replicated stream still takes publishes), started
// again on the same storage (a new start time, the stream caught up), and
// frozen (its monitoring stops answering until it is thawed).
func TestKillRestartFreeze(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-server processes")
	}
	c := start(t, Params{Nodes: 3, MaxStore: []int64{8 << 20, 16 << 20, 32 << 20}, Tags: [][]string{{"node:nats-0"}, {"node:nats-1"}, {"node:nats-2"}}})
	in := c.Instances()
	if len(in) != 3 {
		t.Fatalf("instances %+v", in)
	}
	pids := map[int]bool{os.Getpid(): true}
	for i, node := range []string{"nats-0", "nats-1", "nats-2"} {
		v, ok := varz(t, c, node)
		if !ok || v.ServerName != node || v.JetStream.Config.MaxStorage != int64(8<<20)<<i || len(v.Tags) != 1 || v.Tags[0] != "node:"+node {
			t.Errorf("%s /varz %+v (ok %v)", node, v, ok)
		}
		if pids[in[i].PID] {
			t.Errorf("%s shares pid %d", node, in[i].PID)
		}
		pids[in[i].PID] = true
	}
	// The front's bare node URL is an empty Prometheus page.
	resp, err := http.Get(in[0].MetricsURL)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %v %v", in[0].MetricsURL, err, resp)
	}
	resp.Body.Close()

	_, j := natstest.JetStream(t, c.ClientURL(), nats.Timeout(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := CreateStream(ctx, c.ClientURL(), js.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Replicas: 3}, time.Now().Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	sent := 0
	publish := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			sent++
			id := js.WithMsgID(strconv.Itoa(sent)) // a retried publish is stored once
			var err error
			testutil.Poll(15*time.Second, func() bool { // a leader may be moving
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				_, err = j.Publish(pctx, "events.x", []byte("x"), id)
				return err == nil
			})
			if err != nil {
				t.Fatalf("publish %d: %v", i, err)
			}
		}
	}
	publish(50)

	nd := c.Node("nats-1")
	before, _ := varz(t, c, "nats-1")
	oldPID := nd.PID()
	if err := nd.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, ok := varz(t, c, "nats-1"); ok {
		t.Fatal("a killed node answers")
	}
	publish(50) // two of three replicas are a quorum
	if err := nd.Restart(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	after, ok := varz(t, c, "nats-1")
	if !ok || !after.Start.After(before.Start) || nd.PID() == oldPID {
		t.Errorf("restarted node: start %v -> %v, pid %d -> %d", before.Start, after.Start, oldPID, nd.PID())
	}
	// The restarted node has its storage back and catches up.
	testutil.Eventually(t, 20*time.Second, func() bool { return streamMsgs(c, "nats-1") == 100 }, "nats-1 holds %d of 100 messages after its restart", streamMsgs(c, "nats-1"))

	if err := c.Node("nats-2").Freeze(); err != nil {
		t.Fatal(err)
	}
	if _, ok := varz(t, c, "nats-2"); ok {
		t.Error("a frozen node answers")
	}
	if err := c.Node("nats-2").Thaw(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { _, ok := varz(t, c, "nats-2"); return ok }, "nats-2 does not answer after the thaw")
}

// streamMsgs is the message count of stream EVENTS on one node (-1 when
// the node does not answer).
func streamMsgs(c *Cluster, node string) int {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get(c.front.URL(node) + "/jsz?streams=true")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var j struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Msgs int `json:"messages"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if json.NewDecoder(resp.Body).Decode(&j) != nil {
		return -1
	}
	for _, a := range j.Accounts {
		for _, s := range a.Streams {
			if s.Name == "EVENTS" {
				return s.State.Msgs
			}
		}
	}
	return 0
}

// A chaos schedule freezes a node at its time and thaws it after For; a
// restart event kills and starts it again; targets are found when the
// event fires.
func TestChaosSchedule(t *testing.T) {
	c := start(t, Params{Nodes: 1})
	nd := c.Node("nats-0")
	first, _ := varz(t, c, "nats-0")
	var logged []string
	log := func(msg string, args ...any) { logged = append(logged, msg); t.Log(msg, args) }
	s := RunChaos([]Chaos{
		{At: pipebench.Duration(100 * time.Millisecond), Action: ActionFreeze, Target: "nats-0", For: pipebench.Duration(700 * time.Millisecond)},
		{At: pipebench.Duration(1500 * time.Millisecond), Action: ActionRestart, Target: "nats-0", For: pipebench.Duration(200 * time.Millisecond)},
	}, c.Resolver("EVENTS", nil), 30*time.Second, log)
	defer s.Stop()
	testutil.Eventually(t, 5*time.Second, func() bool { _, ok := varz(t, c, "nats-0"); return !ok }, "the node was never frozen")
	testutil.Eventually(t, 5*time.Second, func() bool { _, ok := varz(t, c, "nats-0"); return ok }, "the node was not thawed")
	testutil.Eventually(t, 20*time.Second, func() bool {
		v, ok := varz(t, c, "nats-0")
		return ok && v.Start.After(first.Start)
	}, "the node was not restarted")
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the schedule did not end")
	}
	if nd.Down() {
		t.Error("the node is down after its restart")
	}
	if len(logged) != 2 {
		t.Errorf("logged %q", logged)
	}
	if errs := ValidateChaos([]Chaos{{Action: "explode", Target: "nats-9"}, {Action: ActionFreeze, Target: TargetConsumerLeader}}, []string{"nats-0"}); len(errs) != 3 {
		t.Errorf("validation: %v", errs)
	}
}
