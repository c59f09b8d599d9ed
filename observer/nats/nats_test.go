package natsobs

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/sut/plumbing/natscluster"
)

func TestMain(m *testing.M) {
	natscluster.MaybeRunChild() // the test binary is also the nats-server child
	os.Exit(m.Run())
}

func startServer(t *testing.T) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, HTTPHost: "127.0.0.1", HTTPPort: -1, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true, JetStreamMaxStore: 64 << 20}
	return natstest.Start(t, opts)
}

func value(t *testing.T, pts []pipebench.Point, name string, labels ...string) float64 {
	t.Helper()
	for _, p := range pts {
		if p.Name != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if p.Labels[labels[i]] != labels[i+1] {
				ok = false
			}
		}
		if ok {
			return p.Value
		}
	}
	t.Fatalf("no point %s %v", name, labels)
	return 0
}

// The observer reads a stream's messages and bytes against its limit, a
// consumer's backlog and ack pending, and the server's connections.
func TestObserve(t *testing.T) {
	s := startServer(t)
	_, j := natstest.JetStream(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := j.CreateStream(ctx, js.StreamConfig{Name: "S", Subjects: []string{"e.>"}, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := j.Publish(ctx, "e.x", make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := j.CreateConsumer(ctx, "S", js.ConsumerConfig{Durable: "D", AckPolicy: js.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	// Fetch 10 and leave them unacked: 90 pending, 10 awaiting ack.
	batch, err := c.Fetch(10, js.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range batch.Messages() {
		n++
	}
	if n != 10 {
		t.Fatalf("fetched %d", n)
	}
	o, err := New(Config{URL: "http://" + s.MonitorAddr().String(), Timeout: pipebench.Duration(2 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := o.Observe(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if v := value(t, pts, "stream_messages", "stream", "S"); v != 100 {
		t.Errorf("stream_messages %v", v)
	}
	bytes := value(t, pts, "stream_bytes", "stream", "S")
	if bytes < 100*100 {
		t.Errorf("stream_bytes %v", bytes)
	}
	if v := value(t, pts, "storage_used_ratio", "stream", "S"); v != bytes/(1<<20) {
		t.Errorf("storage_used_ratio %v, want %v", v, bytes/(1<<20))
	}
	if v := value(t, pts, "storage_limit_bytes", "stream", "S"); v != 1<<20 {
		t.Errorf("storage_limit_bytes %v", v)
	}
	if v := value(t, pts, "storage_used_bytes", "stream", "S"); v != bytes {
		t.Errorf("storage_used_bytes %v", v)
	}
	if v := value(t, pts, "node_storage_used_ratio"); v <= 0 || v > 1 {
		t.Errorf("node_storage_used_ratio %v", v)
	}
	if v := value(t, pts, "consumer_pending", "consumer", "D"); v != 90 {
		t.Errorf("consumer_pending %v", v)
	}
	if v := value(t, pts, "ack_pending", "consumer", "D"); v != 10 {
		t.Errorf("ack_pending %v", v)
	}
	if v := value(t, pts, "connections"); v != 1 {
		t.Errorf("connections %v", v)
	}
	if v := value(t, pts, "memory_mb"); v <= 0 {
		t.Errorf("memory_mb %v", v)
	}
	value(t, pts, "cpu_cores")
	if p := pts[0]; p.Labels["instance"] != s.MonitorAddr().String() {
		t.Errorf("instance label %q", p.Labels["instance"])
	}
}

func TestUnreachableAndBadConfig(t *testing.T) {
	o, err := New(Config{URL: "http://127.0.0.1:1", Timeout: pipebench.Duration(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Observe(context.Background(), time.Now()); err == nil {
		t.Error("observing a closed port gave no error")
	}
	if _, err := New(Config{Timeout: pipebench.Duration(time.Second)}, nil); err == nil {
		t.Error("an observer with nothing to observe was built")
	}
	c := Config{URL: "nats://x"}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "url:") || !strings.Contains(err.Error(), "timeout:") {
		t.Errorf("validate: %v", err)
	}
}

// count returns how many points are called name with the given labels.
func count(pts []pipebench.Point, name string, labels ...string) int {
	n := 0
	for _, p := range pts {
		ok := p.Name == name
		for i := 0; ok && i+1 < len(labels); i += 2 {
			ok = p.Labels[labels[i]] == labels[i+1]
		}
		if ok {
			n++
		}
	}
	return n
}

// A three-node cluster, each node its own process with its own limit:
// node points per node (storage against that node's limit, the version,
// the start time), the replicated stream and its consumer once, from
// their leaders, without an instance label; an instance that is no
// nats-server is dropped without an error; a frozen node fails its
// observation at once while the others answer.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-server processes")
	}
	c, err := natscluster.Start(context.Background(), natscluster.Params{Nodes: 3, Dir: t.TempDir(), MaxStore: []int64{8 << 20, 16 << 20, 32 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := natscluster.CreateStream(ctx, c.ClientURL(), js.StreamConfig{Name: "S", Subjects: []string{"e.>"}, Replicas: 3, MaxMsgs: 1000}, time.Now().Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, j := natstest.JetStream(t, c.ClientURL())
	// A new cluster may still be moving its leaders: each request gets
	// a few seconds and is tried again, within the test's bound (a
	// publish with its message ID, so that one stored before its answer
	// was lost is not stored twice).
	var last error
	try := func(f func(context.Context) error) func() bool {
		return func() bool {
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			defer acancel()
			last = f(actx)
			return last == nil
		}
	}
	for i := 0; i < 20; i++ {
		testutil.Eventually(t, 25*time.Second, try(func(c context.Context) error {
			_, err := j.Publish(c, "e.x", []byte("hello"), js.WithMsgID(fmt.Sprint(i)))
			return err
		}), // a retry of a stored publish is deduplicated
			"publish %d: %v", i, testutil.Lazy(func() string { return fmt.Sprint(last) }))
	}
	testutil.Eventually(t, 25*time.Second, try(func(c context.Context) error {
		_, err := j.CreateOrUpdateConsumer(c, "S", js.ConsumerConfig{Durable: "D", AckPolicy: js.AckExplicitPolicy})
		return err
	}), "create the consumer: %v", testutil.Lazy(func() string { return fmt.Sprint(last) }))
	notNATS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }))
	defer notNATS.Close()
	instances := append(c.Instances(), pipebench.Instance{Name: "eventproxy-0", MetricsURL: notNATS.URL})
	// A timeout that a loaded machine's answering nodes keep within, and
	// that the frozen node's poll ends at.
	o, err := New(Config{Timeout: pipebench.Duration(3 * time.Second)}, instances)
	if err != nil {
		t.Fatal(err)
	}
	var pts []pipebench.Point
	testutil.Eventually(t, 10*time.Second, func() bool {
		pts, err = o.Observe(ctx, time.Now())
		return err == nil && count(pts, "consumer_pending") == 1 && count(pts, "stream_messages") == 1
	}, "observe: %v; %d stream and %d consumer points", err, count(pts, "stream_messages"), count(pts, "consumer_pending"))
	for i, node := range []string{"nats-0", "nats-1", "nats-2"} {
		if v := value(t, pts, "node_storage_limit_bytes", "instance", node); v != float64(int64(8<<20)<<i) {
			t.Errorf("%s limit %v", node, v)
		}
		value(t, pts, "server_start_time", "instance", node)
		if count(pts, "nats_server_info", "instance", node, "version", natscluster.ServerVersion) != 1 {
			t.Errorf("%s: no version %s", node, natscluster.ServerVersion)
		}
	}
	if v := value(t, pts, "stream_messages", "stream", "S"); v != 20 {
		t.Errorf("stream_messages %v", v)
	}
	if v := value(t, pts, "stream_max_msgs", "stream", "S"); v != 1000 {
		t.Errorf("stream_max_msgs %v", v)
	}
	if v := value(t, pts, "consumer_pending", "consumer", "D"); v != 20 {
		t.Errorf("consumer_pending %v", v)
	}
	// The ledger: what the consumer holds, read from its leader.
	if v := value(t, pts, pipebench.LedgerHeld, "where", "stream S"); v != 20 {
		t.Errorf("ledger_held %v, want the consumer's 20", v)
	}
	for _, p := range pts {
		if strings.HasPrefix(p.Name, "ledger_") {
			continue
		}
		if _, ok := p.Labels["instance"]; ok == (p.Labels["stream"] != "") {
			t.Errorf("point %s %v: node points carry the instance, stream points do not", p.Name, p.Labels)
		}
		if p.Labels["instance"] == "eventproxy-0" {
			t.Errorf("a point of the instance that is no nats-server: %v", p)
		}
	}
	if count(pts, "storage_used_ratio") != 0 {
		t.Error("a stream without max_bytes has no storage ratio of its own")
	}
	if err := c.Node("nats-2").Freeze(); err != nil {
		t.Fatal(err)
	}
	defer c.Node("nats-2").Thaw()
	t0 := time.Now()
	pts, err = o.Observe(ctx, time.Now())
	if err == nil || !strings.Contains(err.Error(), "nats-2") || time.Since(t0) > 6*time.Second {
		t.Errorf("observing a frozen node: %v after %s", err, time.Since(t0))
	}
	if count(pts, "memory_mb", "instance", "nats-0") != 1 || count(pts, "memory_mb", "instance", "nats-2") != 0 {
		t.Errorf("the other nodes' points are kept, the frozen one's not: memory_mb of nats-0 %d, of nats-2 %d, %d points (error %v)",
			count(pts, "memory_mb", "instance", "nats-0"), count(pts, "memory_mb", "instance", "nats-2"), len(pts), err)
	}
	// Two nodes of three frozen: the consumer has no leader that answers
	// (the one left cannot lead alone); what it holds is unknown, never
	// read from a follower's copy, and the ledger says what each node
	// said and which did not answer.
	if err := c.Node("nats-1").Freeze(); err != nil {
		t.Fatal(err)
	}
	defer c.Node("nats-1").Thaw()
	var why string
	testutil.Eventually(t, 30*time.Second, func() bool {
		pts, _ = o.Observe(ctx, time.Now())
		why = ""
		for _, p := range pts {
			if p.Name == pipebench.LedgerUnknown {
				why = p.Labels["because"]
			}
		}
		return why != "" && count(pts, pipebench.LedgerHeld) == 0
	}, "no ledger_unknown with two nodes of three frozen: %v", testutil.Lazy(func() string { return fmt.Sprint(pts) }))
	for _, want := range []string{"no node leads consumer S/D (nats-0 says ", "nats-1 did not answer", "nats-2 did not answer"} {
		if !strings.Contains(why, want) {
			t.Errorf("ledger unknown because %q, want %q in it", why, want)
		}
	}
}
