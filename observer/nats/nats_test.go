package natsobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/natstest"
)

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
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	j, _ := js.New(nc)
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
