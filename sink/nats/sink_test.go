package natssink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
)

func startServer(t testing.TB) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	return natstest.Start(t, opts)
}

// exactlyOnce checks that 1..n each arrived once and nothing else did.
func exactlyOnce(t *testing.T, rec *testutil.Arrivals, n int) {
	t.Helper()
	if rec.Distinct() != n || rec.UnmatchedItems() != 0 {
		t.Fatalf("%d distinct arrivals and %d unmatched, want %d and 0", rec.Distinct(), rec.UnmatchedItems(), n)
	}
	rec.ExpectEachOnce(t, 1, uint64(n), "sequence")
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, timeout, cond, "timed out waiting for %s", what)
}

type fixture struct {
	s  *server.Server
	nc *nats.Conn
	js js.JetStream
	g  pipebench.Generator
}

// sink starts a sink of the default configuration consuming from the
// fixture's server, recording in the Arrivals returned.
func (f *fixture) sink(t *testing.T) (*Sink, *testutil.Arrivals) {
	t.Helper()
	cfg := *DefaultConfig()
	cfg.URL = f.s.ClientURL()
	rec := &testutil.Arrivals{}
	return startSink(t, cfg, rec), rec
}

func newFixture(t *testing.T) *fixture {
	s := startServer(t)
	nc, j := natstest.JetStream(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := j.CreateStream(ctx, js.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}}); err != nil {
		t.Fatal(err)
	}
	g, err := payload.EventFactory().New(&payload.EventConfig{Size: 64, SeqIn: "header", ContentType: "application/json"}, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{s: s, nc: nc, js: j, g: g}
}

// publishBatches sends n messages of per events each, from seq from.
func (f *fixture) publishBatches(t *testing.T, from uint64, n, per int) {
	t.Helper()
	for i := 0; i < n; i++ {
		b := f.g.Next(from+uint64(i*per), per, time.Now())
		m := &nats.Msg{Subject: "events.x", Data: b.Body, Header: nats.Header{}}
		for _, h := range b.Headers {
			m.Header.Set(h.Name, h.Value)
		}
		if _, err := f.js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-f.js.PublishAsyncComplete():
	case <-time.After(10 * time.Second):
		t.Fatal("publish acks did not arrive")
	}
}

// publish sends events from..to as JetStream messages carrying the
// generator's sequence headers, one event each.
func (f *fixture) publish(t *testing.T, from, to uint64) {
	t.Helper()
	f.publishBatches(t, from, int(to-from+1), 1)
}

func (f *fixture) consumer(t *testing.T) *js.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := f.js.Consumer(ctx, "EVENTS", "pipebench")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func startSink(t *testing.T, cfg Config, rec pipebench.Arrivals) *Sink {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := New(cfg)
	testutil.Start(t, func(ctx context.Context) error { return s.Start(ctx, rec) }, s.Shutdown)
	return s
}

// Every message published to the stream arrives once, is acked, and the
// consumer's backlog on the server is empty.
func TestConsumerDeliversEverything(t *testing.T) {
	f := newFixture(t)
	s, rec := f.sink(t)
	f.publish(t, 1, 3000)
	waitFor(t, "3000 arrivals", 30*time.Second, func() bool { return rec.Distinct() == 3000 })
	waitFor(t, "every ack", 10*time.Second, func() bool { i := f.consumer(t); return i.NumAckPending == 0 && i.NumPending == 0 })
	exactlyOnce(t, rec, 3000)
	if s.Redelivered() != 0 || s.Delivered() != 3000 {
		t.Errorf("delivered %d, redelivered %d; want 3000 and 0", s.Delivered(), s.Redelivered())
	}
}

// A consumer paused mid-run receives nothing while the backlog grows on the
// server, and delivers everything once resumed.
func TestPauseAndResume(t *testing.T) {
	f := newFixture(t)
	s, rec := f.sink(t)
	f.publish(t, 1, 500)
	waitFor(t, "the first 500", 20*time.Second, func() bool { return rec.Distinct() == 500 })
	if err := s.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.consumer(t).Paused {
		t.Fatal("the server does not show the consumer paused")
	}
	f.publish(t, 501, 1500)
	waitFor(t, "the backlog on the server", 10*time.Second, func() bool {
		i := f.consumer(t)
		return i.NumPending == 1000
	})
	if n := rec.Distinct(); n != 500 {
		t.Fatalf("%d arrived while paused, want 500", n)
	}
	if err := s.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	waitFor(t, "the drain", 30*time.Second, func() bool { return rec.Distinct() == 1500 })
	t.Logf("drained 1000 in %v after resume", time.Since(resumed))
	exactlyOnce(t, rec, 1500)
}

// Outage windows in a phase's fault policy pause the consumer on the server
// and resume it after.
func TestOutageWindowPauses(t *testing.T) {
	f := newFixture(t)
	s, rec := f.sink(t)
	s.SetFaults(pipebench.FaultPolicy{Outages: []pipebench.Window{{Start: 0, Duration: pipebench.Duration(time.Second)}}}, time.Now())
	waitFor(t, "the pause", 5*time.Second, func() bool { return f.consumer(t).Paused })
	f.publish(t, 1, 200)
	waitFor(t, "the resume", 10*time.Second, func() bool { return !f.consumer(t).Paused })
	waitFor(t, "every arrival", 20*time.Second, func() bool { return rec.Distinct() == 200 })
	exactlyOnce(t, rec, 200)
}

// Failed messages are nak'ed, counted faulted, redelivered and then arrive:
// in the end each sequence number arrives once, redeliveries counted apart.
func TestFaultsNakAndRedeliver(t *testing.T) {
	f := newFixture(t)
	cfg := *DefaultConfig()
	cfg.URL, cfg.NakDelay = f.s.ClientURL(), pipebench.Duration(10*time.Millisecond)
	rec := &testutil.Arrivals{}
	s := startSink(t, cfg, rec)
	s.SetFaults(pipebench.FaultPolicy{ErrorRatio: 0.1}, time.Now())
	f.publish(t, 1, 1000)
	waitFor(t, "every arrival", 30*time.Second, func() bool { return rec.Distinct() == 1000 })
	exactlyOnce(t, rec, 1000)
	if s.Faulted() < 100 || s.Redelivered() < 90 {
		t.Errorf("faulted %d, redelivered %d; want about 10%% of 1000 each", s.Faulted(), s.Redelivered())
	}
}

// Without a url the sink waits for the SUT to post where to consume.
func TestAttachByPost(t *testing.T) {
	f := newFixture(t)
	rec := &testutil.Arrivals{}
	s := startSink(t, *DefaultConfig(), rec)
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Fatalf("endpoint %q", s.Endpoint())
	}
	resp, err := http.Post(s.Endpoint(), "application/json", strings.NewReader(`{"url": "nope"`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed attach answered %d", resp.StatusCode)
	}
	body, _ := json.Marshal(map[string]string{"url": f.s.ClientURL(), "stream": "EVENTS"})
	resp, err = http.Post(s.Endpoint(), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("attach answered %d", resp.StatusCode)
	}
	<-s.Attached()
	f.publish(t, 1, 100)
	waitFor(t, "every arrival", 20*time.Second, func() bool { return rec.Distinct() == 100 })
	exactlyOnce(t, rec, 100)
}

// A core subscriber receives core publishes.
func TestCoreSubscriber(t *testing.T) {
	f := newFixture(t)
	cfg := *DefaultConfig()
	cfg.URL, cfg.Mode, cfg.Subject = f.s.ClientURL(), "core", "core.>"
	rec := &testutil.Arrivals{}
	startSink(t, cfg, rec)
	for seq := uint64(1); seq <= 1000; seq++ {
		b := f.g.Next(seq, 1, time.Now())
		m := &nats.Msg{Subject: "core.x", Data: b.Body, Header: nats.Header{}}
		for _, h := range b.Headers {
			m.Header.Set(h.Name, h.Value)
		}
		if err := f.nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	f.nc.Flush()
	waitFor(t, "every arrival", 20*time.Second, func() bool { return rec.Distinct() == 1000 })
	exactlyOnce(t, rec, 1000)
}

func TestConfigErrors(t *testing.T) {
	c := Config{URL: "http://x", Mode: "push", AckWait: 0, Listen: "nowhere"}
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"url:", "mode:", "ack_wait:", "max_ack_pending:", "batch:", "workers:", "listen:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no %s line in:\n%v", key, err)
		}
	}
}

// The slow subscriber's rate_limit counts the events a message carries,
// request_rate_limit the messages, each a token bucket holding a second's
// worth (rate_limit_burst), full at the start: 30 messages of 50 events
// take about 2 s at 500 events/s (the first 500 events at once, the other
// 1,000 paced; not 60 ms, as if each message were one event), and about
// half a second at 20 messages/s (20 at once, 10 paced).
func TestRateLimitsPaceItemsAndMessages(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        pipebench.FaultPolicy
		min, max time.Duration
	}{
		{"items", pipebench.FaultPolicy{RateLimit: 500}, 1800 * time.Millisecond, 10 * time.Second},
		{"messages", pipebench.FaultPolicy{RequestRateLimit: 20}, 420 * time.Millisecond, 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			s, rec := f.sink(t)
			s.SetFaults(c.p, time.Now())
			start := time.Now()
			f.publishBatches(t, 1, 30, 50)
			waitFor(t, "1,500 arrivals", 20*time.Second, func() bool { return rec.Distinct() == 1500 })
			if took := time.Since(start); took < c.min || took > c.max {
				t.Errorf("30 messages of 50 events took %v, want %v..%v", took, c.min, c.max)
			}
		})
	}
}

// The consumer is created even when JetStream answers late: while nothing
// answers its request, Attach asks again (until its wait), and succeeds
// once JetStream is there, its stream recovered from the store.
func TestConsumerCreatedOnceJetStreamAnswers(t *testing.T) {
	store := t.TempDir()
	first := natstest.Start(t, &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: store, NoSigs: true, NoLog: true})
	_, j0 := natstest.JetStream(t, first.ClientURL())
	ctx := context.Background()
	if _, err := j0.CreateStream(ctx, js.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}}); err != nil {
		t.Fatal(err)
	}
	first.Shutdown()
	first.WaitForShutdown()

	s := natstest.Start(t, &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true}) // no JetStream yet
	_, j := natstest.JetStream(t, s.ClientURL())
	cc := js.ConsumerConfig{Durable: "pipebench", AckPolicy: js.AckExplicitPolicy}

	// Nobody answers: it keeps asking until its wait is over, then says so.
	began := time.Now()
	_, err := createConsumer(ctx, j, "EVENTS", cc, 600*time.Millisecond)
	if !errors.Is(err, nats.ErrNoResponders) || !strings.Contains(err.Error(), "did not create it within 600ms") {
		t.Fatalf("without JetStream: %v, want no responders, and the wait named", err)
	}
	if d := time.Since(began); d < 500*time.Millisecond {
		t.Fatalf("without JetStream it gave up after %v, want it to ask again for 600ms", d)
	}

	// JetStream comes while it asks: the consumer is created.
	in := func() int64 { v, _ := s.Varz(nil); return v.InMsgs }
	before := in()
	done := make(chan error, 1)
	go func() {
		_, err := createConsumer(ctx, j, "EVENTS", cc, 20*time.Second)
		done <- err
	}()
	waitFor(t, "a request for the consumer", 10*time.Second, func() bool { return in() > before })
	if err := s.EnableJetStream(&server.JetStreamConfig{StoreDir: store}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("once JetStream answered: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30 s")
	}
	if _, err := j.Consumer(ctx, "EVENTS", "pipebench"); err != nil {
		t.Errorf("the consumer is not there: %v", err)
	}

	// An answer that is an error (a stream that does not exist) is not
	// asked again: it is returned at once.
	began = time.Now()
	if _, err := createConsumer(ctx, j, "NOPE", cc, 20*time.Second); !errors.Is(err, js.ErrStreamNotFound) {
		t.Errorf("a missing stream: %v, want stream not found", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("a missing stream took %v to say so, want at once", d)
	}
}
