package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/sut/plumbing/natscluster"
)

func TestMain(m *testing.M) {
	MaybeRunChild() // the test binary is also the nats-server child
	os.Exit(m.Run())
}

func start(t *testing.T, cfg *Config) *Server {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := New(*cfg, pipebench.Env{Dir: t.TempDir()})
	testutil.Start(t, s.Start, s.Shutdown)
	return s
}

// One node as a child process: its stream is the scenario's, its PID and
// monitoring endpoint are listed, Shutdown ends the process.
func TestOneNode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Stream.MaxBytes, cfg.Stream.MaxMsgs, cfg.Stream.Discard = 1<<20, 5000, "new"
	s := start(t, cfg)
	if !strings.HasPrefix(s.Endpoint(), "nats://127.0.0.1:") {
		t.Errorf("endpoint %q", s.Endpoint())
	}
	in := s.Instances()
	if len(in) != 1 || in[0].PID <= 0 || in[0].PID == os.Getpid() || !strings.HasPrefix(in[0].MetricsURL, "http://127.0.0.1:") {
		t.Fatalf("instances %+v", in)
	}
	resp, err := http.Get(in[0].MetricsURL + "/varz")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		JetStream struct {
			Config struct {
				StoreDir string `json:"store_dir"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if !strings.HasPrefix(v.JetStream.Config.StoreDir, os.TempDir()) {
		t.Errorf("store dir %q is not in the run's directory", v.JetStream.Config.StoreDir)
	}
	info := natstest.StreamInfo(t, s.Endpoint(), "EVENTS")
	c := info.Config
	if c.MaxBytes != 1<<20 || c.MaxMsgs != 5000 || c.Discard != js.DiscardNew || c.Storage != js.FileStorage || c.Subjects[0] != "events.>" {
		t.Errorf("stream config %+v", c)
	}
	pid := in[0].PID
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("node %d still runs after Shutdown", pid)
	}
}

// Three nodes form a cluster on loopback and hold a stream with three
// replicas; a publish to any node is stored.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-server processes")
	}
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Stream.Replicas = 3, 3
	s := start(t, cfg)
	if n := len(s.Instances()); n != 3 {
		t.Fatalf("%d instances", n)
	}
	info := natstest.StreamInfo(t, s.Endpoint(), "EVENTS")
	if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream cluster info %+v", info.Cluster)
	}
	_, j := natstest.JetStream(t, strings.Split(s.Endpoint(), ",")[2])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The third node learns of the stream's subjects from the others a
	// moment after the stream exists: the first publish through it waits
	// for that.
	var lastErr error
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, lastErr = j.Publish(ctx, "events.x", []byte("hello"))
		return lastErr == nil
	}, "no publish through the third node was stored: %v", testutil.Lazy(func() string { return fmt.Sprint(lastErr) }))
	for i := 1; i < 100; i++ {
		if _, err := j.Publish(ctx, "events.x", []byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	if got := natstest.StreamInfo(t, s.Endpoint(), "EVENTS").State.Msgs; got != 100 {
		t.Errorf("stream holds %d, want 100", got)
	}
}

func TestConfigErrors(t *testing.T) {
	c := Config{Nodes: 0, MaxStore: -1, Stream: StreamConfig{Name: "a.b", Discard: "both", Replicas: 3, Storage: "tape"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"nodes:", "max_store:", "stream.name:", "stream.subjects:", "stream.discard:", "stream: replicas 3 is more than the 0 node(s)", "stream.storage:", "start_timeout:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no %s line in:\n%v", key, err)
		}
	}
}

// The SUT tells a waiting nats sink where to consume, and nothing else.
func TestTellsOnlyANATSSink(t *testing.T) {
	natstest.TellsOnlyANATSSink(t, "EVENTS", func(target string) {
		s := New(*DefaultConfig(), pipebench.Env{Dir: t.TempDir(), Target: target})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Shutdown(context.Background())
	})
}

// The stream's retention and placement reach JetStream's configuration;
// with scale_limits a run scaled to a tenth keeps a tenth of the cap, and
// the chaos schedule always scales.
func TestStreamSpecAndScale(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nodes, cfg.ScaleLimits = 3, true
	cfg.Stream.Retention, cfg.Stream.Placement, cfg.Stream.MaxMsgs = "interest", "nats-2", 100000
	cfg.Chaos = []natscluster.Chaos{{At: pipebench.Duration(30 * time.Second), Action: natscluster.ActionRestart, Target: "nats-1", For: pipebench.Duration(5 * time.Second)}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sc := cfg.StreamSpec()
	if sc.Retention != js.InterestPolicy || sc.Placement == nil || sc.Placement.Tags[0] != "node:nats-2" || sc.MaxMsgs != 100000 {
		t.Errorf("stream spec %+v", sc)
	}
	scaled := cfg.ScaleTime(0.1).(*Config)
	if scaled.Stream.MaxMsgs != 10000 || scaled.Chaos[0].At != pipebench.Duration(3*time.Second) || scaled.Chaos[0].For != pipebench.Duration(500*time.Millisecond) {
		t.Errorf("scaled %+v %+v", scaled.Stream, scaled.Chaos)
	}
	if cfg.Stream.MaxMsgs != 100000 || cfg.Chaos[0].At != pipebench.Duration(30*time.Second) {
		t.Error("ScaleTime changed the original")
	}
	cfg.ScaleLimits = false
	if cfg.ScaleTime(0.1).(*Config).Stream.MaxMsgs != 100000 {
		t.Error("limits scaled without scale_limits")
	}
	wq := DefaultConfig()
	wq.Stream.Retention = "workqueue"
	if wq.StreamSpec().Retention != js.WorkQueuePolicy {
		t.Error("workqueue retention")
	}
}

func TestClusterConfigErrors(t *testing.T) {
	c := DefaultConfig()
	c.Nodes, c.MaxStorePerNode = 3, []int64{1, 2}
	c.Stream.Replicas, c.Stream.Placement, c.Stream.Retention = 3, "nats-9", "forever"
	c.Chaos = []natscluster.Chaos{{Action: "explode", Target: "proxy"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"max_store_per_node: gives 2 limits for 3 nodes", "stream.placement:", "stream.retention:", "chaos: [0] action", "chaos: [0] target"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
	c = DefaultConfig()
	c.Nodes, c.Stream.Replicas, c.Stream.Placement = 3, 3, "nats-0"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "needs replicas: 1") {
		t.Errorf("placement of a replicated stream: %v", err)
	}
}
