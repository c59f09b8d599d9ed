package natse2e

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	natsdriver "github.com/pipebench/pipebench/driver/nats"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	natsobs "github.com/pipebench/pipebench/observer/nats"
	"github.com/pipebench/pipebench/payload"
	natssink "github.com/pipebench/pipebench/sink/nats"
	"github.com/pipebench/pipebench/sut/all"
	"github.com/pipebench/pipebench/sut/jetstream"
)

func TestMain(m *testing.M) {
	all.MaybeRunChild() // the test binary is also the nats-server nodes and the event proxy
	os.Exit(m.Run())
}

type recorder struct {
	mu   sync.Mutex
	seen map[uint64]int
}

func (r *recorder) Arrive(seq uint64, _, _ time.Time) { r.mu.Lock(); r.seen[seq]++; r.mu.Unlock() }
func (r *recorder) Faulted(int)                       {}
func (r *recorder) Unmatched(int)                     {}

func (r *recorder) counts() (distinct, dups int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.seen {
		dups += n - 1
	}
	return len(r.seen), dups
}

// pipeline is a sink, the SUT attached to it, a driver and an observer.
type pipeline struct {
	sink *natssink.Sink
	sut  *jetstream.Server
	drv  *natsdriver.Driver
	obs  *natsobs.Observer
	rec  *recorder
	gen  pipebench.Generator
}

func build(t *testing.T, sut *jetstream.Config, drv *natsdriver.Config) *pipeline {
	t.Helper()
	p := &pipeline{rec: &recorder{seen: map[uint64]int{}}}
	dir := t.TempDir()
	ctx := context.Background()
	p.sink = natssink.New(*natssink.DefaultConfig())
	if err := p.sink.Start(ctx, p.rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.sink.Shutdown(context.Background()) })
	p.sut = jetstream.New(*sut, pipebench.Env{Dir: dir, Target: p.sink.Endpoint()})
	if err := p.sut.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.sut.Shutdown(context.Background()) })
	var err error
	if p.drv, err = natsdriver.New(*drv, p.sut.Endpoint()); err != nil {
		t.Fatal(err)
	}
	if err := p.drv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.drv.Shutdown(context.Background()) })
	if p.obs, err = natsobs.New(natsobs.Config{Timeout: pipebench.Duration(2 * time.Second)}, p.sut.Instances()); err != nil {
		t.Fatal(err)
	}
	if p.gen, err = payload.EventFactory().New(&payload.EventConfig{Size: 128, SeqIn: "header", ContentType: "application/json"}, pipebench.Env{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// send sends items 1..n in batches of batch from workers goroutines and
// returns the items accepted and refused.
func (p *pipeline) send(t *testing.T, n, batch, workers int) (accepted, refused int64, last pipebench.Outcome) {
	var next atomic.Uint64
	var acc, ref atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seq := next.Add(uint64(batch)) - uint64(batch) + 1
				if seq > uint64(n) {
					return
				}
				b := p.gen.Next(seq, batch, time.Now())
				o := p.drv.Send(context.Background(), &b)
				switch o.Class {
				case pipebench.ClassOK:
					acc.Add(int64(batch))
				case pipebench.ClassRefused:
					ref.Add(int64(batch))
					mu.Lock()
					last = o
					mu.Unlock()
				default:
					t.Errorf("send %d: %+v", seq, o)
					return
				}
			}
		}()
	}
	wg.Wait()
	return acc.Load(), ref.Load(), last
}

func (p *pipeline) point(t *testing.T, name string) float64 {
	t.Helper()
	pts, err := p.obs.Observe(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range pts {
		if pt.Name == name {
			return pt.Value
		}
	}
	t.Fatalf("no %s point", name)
	return 0
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, timeout, cond, "timed out waiting for %s", what)
}

// 200 connections publish 6,000 events (batches of 3, each event its own
// message): the server's /connz shows the connections, and the counts
// reconcile exactly between the driver, the stream and the sink.
func TestCountsReconcile(t *testing.T) {
	const conns, n = 200, 6000
	d := natsdriver.DefaultConfig()
	d.Connections = conns
	p := build(t, jetstream.DefaultConfig(), d)
	if got := p.point(t, "connections"); got != conns+1 {
		t.Fatalf("the server shows %v connections, want %d (the driver's and the sink's)", got, conns+1)
	}
	accepted, refused, _ := p.send(t, n, 3, 64)
	if accepted != n || refused != 0 {
		t.Fatalf("accepted %d, refused %d of %d", accepted, refused, n)
	}
	if got := p.point(t, "stream_messages"); got != n {
		t.Errorf("the stream holds %v messages, the driver accepted %d", got, n)
	}
	waitFor(t, "the sink", 60*time.Second, func() bool { d, _ := p.rec.counts(); return d == n })
	waitFor(t, "the consumer's backlog to empty", 20*time.Second, func() bool {
		return p.point(t, "consumer_pending") == 0 && p.point(t, "ack_pending") == 0
	})
	if distinct, dups := p.rec.counts(); distinct != n || dups != 0 {
		t.Errorf("the sink saw %d distinct, %d duplicates; want %d and 0", distinct, dups, n)
	}
	if p.sink.Redelivered() != 0 {
		t.Errorf("%d redelivered", p.sink.Redelivered())
	}
}

// A stream with a small max_bytes and discard new fills: publishes are
// refused (stream full, reached), the observer shows the storage used up to
// its limit, and what was accepted is exactly what the stream holds and the
// sink receives.
func TestStreamFills(t *testing.T) {
	s := jetstream.DefaultConfig()
	s.Stream.MaxBytes, s.Stream.Discard = 256<<10, "new"
	d := natsdriver.DefaultConfig()
	d.Connections = 8
	p := build(t, s, d)
	accepted, refused, last := p.send(t, 4000, 1, 16)
	if refused == 0 || accepted == 0 {
		t.Fatalf("accepted %d, refused %d: the 256 KiB stream should fill", accepted, refused)
	}
	if last.Detail != "stream full" || last.Unreached {
		t.Errorf("refusal classified %+v", last)
	}
	if r := p.point(t, "storage_used_ratio"); r < 0.9 || r > 1 {
		t.Errorf("storage_used_ratio %v at the first refusals, want nearly 1", r)
	}
	if got := p.point(t, "stream_messages"); got != float64(accepted) {
		t.Errorf("the stream holds %v, the driver accepted %d", got, accepted)
	}
	waitFor(t, "the sink", 30*time.Second, func() bool { d, _ := p.rec.counts(); return int64(d) == accepted })
	t.Logf("accepted %d, refused %d (%s)", accepted, refused, last.Message)
}

// Core publishes with the sequence number in the JSON body (no headers) are
// captured by the stream and matched by the sink all the same.
func TestCoreFieldMode(t *testing.T) {
	const n = 3000
	d := natsdriver.DefaultConfig()
	d.Mode, d.Connections = natsdriver.ModeCore, 50
	p := build(t, jetstream.DefaultConfig(), d)
	var err error
	if p.gen, err = payload.EventFactory().New(&payload.EventConfig{Size: 128, SeqIn: "field", ContentType: "application/json"}, pipebench.Env{}); err != nil {
		t.Fatal(err)
	}
	accepted, _, _ := p.send(t, n, 5, 8)
	if accepted != n {
		t.Fatalf("accepted %d of %d", accepted, n)
	}
	waitFor(t, "the stream", 20*time.Second, func() bool { return p.point(t, "stream_messages") == n })
	waitFor(t, "the sink", 30*time.Second, func() bool { d, _ := p.rec.counts(); return d == n })
	if distinct, dups := p.rec.counts(); distinct != n || dups != 0 {
		t.Errorf("the sink saw %d distinct, %d duplicates", distinct, dups)
	}
}

// A node whose own storage limit (max_store) is reached refuses publishes
// to a stream with no limit of its own: refused, storage full, reached.
func TestNodeStorageFull(t *testing.T) {
	s := jetstream.DefaultConfig()
	s.MaxStore = 2 << 20
	d := natsdriver.DefaultConfig()
	d.Connections = 4
	p := build(t, s, d)
	accepted, refused, last := p.send(t, 30000, 1, 16)
	if refused == 0 {
		t.Fatalf("accepted %d, none refused: the 2 MiB node should fill", accepted)
	}
	if last.Class != pipebench.ClassRefused || last.Unreached {
		t.Errorf("refusal classified %+v", last)
	}
	if r := p.point(t, "node_storage_used_ratio"); r < 0.9 {
		t.Errorf("node_storage_used_ratio %v after refusals", r)
	}
	if got := p.point(t, "stream_messages"); got != float64(accepted) {
		t.Errorf("the stream holds %v, the driver accepted %d", got, accepted)
	}
	t.Logf("accepted %d, refused %d: %s (%s)", accepted, refused, last.Detail, last.Message)
}
