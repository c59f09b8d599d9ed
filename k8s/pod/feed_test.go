package pod

import (
	"context"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/kpi"
)

// arrivals records what a FeedSink hands on.
type arrivals struct {
	mu        sync.Mutex
	seqs      []uint64
	sent, at  []time.Time
	faulted   int
	unmatched int
}

func (a *arrivals) Arrive(seq uint64, sent, at time.Time) {
	a.mu.Lock()
	a.seqs, a.sent, a.at = append(a.seqs, seq), append(a.sent, sent), append(a.at, at)
	a.mu.Unlock()
}
func (a *arrivals) Faulted(n int)   { a.mu.Lock(); a.faulted += n; a.mu.Unlock() }
func (a *arrivals) Unmatched(n int) { a.mu.Lock(); a.unmatched += n; a.mu.Unlock() }
func (a *arrivals) count() int      { a.mu.Lock(); defer a.mu.Unlock(); return len(a.seqs) }

// Over a real HTTP server: each shard gets the arrivals of its own range
// (those that came before it subscribed too), with their send and
// arrival times to the nanosecond; the faulted and unmatched counts go to
// the lowest range; a shard that comes again gets what arrived while it
// was away.
func TestFeedRoutesByRange(t *testing.T) {
	feed := &Feed{}
	srv := httptest.NewServer(feed)
	t.Cleanup(srv.Close)
	t0 := time.Unix(1700000000, 123456789)
	// Before anyone subscribed: held.
	feed.Arrive(1005, t0, t0.Add(time.Millisecond))
	feed.Faulted(3)

	shards := []*arrivals{{}, {}, {}}
	sinks := make([]*FeedSink, 3)
	for i, r := range [][2]uint64{{1, 1000}, {1000, 2000}, {2000, 0}} {
		sinks[i] = &FeedSink{Target: "http://sink/", FeedURL: srv.URL + FeedPath, Lo: r[0], Hi: r[1]}
		if err := sinks[i].Start(context.Background(), shards[i]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sinks[i].Shutdown(context.Background()) })
	}
	for _, seq := range []uint64{1, 2, 999, 1000, 1999, 2000, 5000} {
		feed.Arrive(seq, t0, t0.Add(time.Duration(seq)))
	}
	feed.Unmatched(2)
	testutil.Eventually(t, 5*time.Second, func() bool {
		return shards[0].count() == 3 && shards[1].count() == 3 && shards[2].count() == 2
	}, "not routed by range")
	want := [][]uint64{{1, 2, 999}, {1005, 1000, 1999}, {2000, 5000}}
	for i, s := range shards {
		for j, seq := range want[i] {
			if s.seqs[j] != seq {
				t.Errorf("shard %d got %v, want %v", i+1, s.seqs, want[i])
				break
			}
		}
	}
	if got := shards[1].at[1]; !got.Equal(t0.Add(1000)) || !shards[1].sent[1].Equal(t0) {
		t.Errorf("times %v %v", shards[1].sent[1], got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		shards[0].mu.Lock()
		defer shards[0].mu.Unlock()
		return shards[0].faulted == 3 && shards[0].unmatched == 2
	}, "the faulted and unmatched counts did not reach the lowest range")

	// Shard 3 goes; what arrives meanwhile waits for it.
	sinks[2].Shutdown(context.Background())
	testutil.Eventually(t, 5*time.Second, func() bool {
		feed.mu.Lock()
		defer feed.mu.Unlock()
		return len(feed.subs) == 2
	}, "the subscriber did not go")
	feed.Arrive(3000, t0, t0)
	again := &arrivals{}
	back := &FeedSink{FeedURL: srv.URL + FeedPath, Lo: 2000}
	if err := back.Start(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Shutdown(context.Background()) })
	testutil.Eventually(t, 5*time.Second, func() bool { return again.count() == 1 }, "the held arrival never came")
	if feed.Dropped() != 0 {
		t.Errorf("dropped %d", feed.Dropped())
	}
}

func TestRehost(t *testing.T) {
	for in, want := range map[string]string{
		"http://10.0.0.7:8080/ingest": "http://s.ns.svc:8080/ingest",
		"10.0.0.7:4317":               "s.ns.svc:4317",
		"http://10.0.0.7/":            "http://s.ns.svc/",
	} {
		got, err := Rehost(in, "s.ns.svc")
		if err != nil || got != want {
			t.Errorf("Rehost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Rehost("no-port", "x"); err == nil {
		t.Error("an endpoint without a port was rehosted")
	}
}

// BenchmarkFeed: one arrival through the feed, from the sink's Arrive to
// the shard's arrival matching (kpi.Arrivals), over loopback HTTP; against
// BenchmarkArriveLocal, the same matching with the sink in the shard's
// own process.
func BenchmarkFeed(b *testing.B) {
	feed := &Feed{}
	srv := httptest.NewServer(feed)
	defer srv.Close()
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	got := &counter{next: arr}
	s := &FeedSink{FeedURL: srv.URL + FeedPath, Lo: 1}
	if err := s.Start(context.Background(), got); err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	now := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		feed.Arrive(uint64(i+1), now, now)
	}
	for got.n.Load() < uint64(b.N) {
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkArriveLocal(b *testing.B) {
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	now := time.Now()
	for i := 0; i < b.N; i++ {
		arr.Arrive(uint64(i+1), now, now)
	}
}

type counter struct {
	n    atomic.Uint64
	next *kpi.Arrivals
}

func (c *counter) Arrive(seq uint64, sent, at time.Time) { c.next.Arrive(seq, sent, at); c.n.Add(1) }
func (c *counter) Faulted(int)                           {}
func (c *counter) Unmatched(int)                         {}
