package runner_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// backlogObserver plays a system that works off what it received at one
// item per observation and reports what is left as work_backlog. Its
// first observation during the load (its second: the first is made before
// the load) answers only once the whole blast was received: slower than
// the blast, as an observer on a loaded machine can be.
type backlogObserver struct {
	received *atomic.Int64
	want     int64
	done     atomic.Int64
	asked    atomic.Int32
}

func (o *backlogObserver) Observe(_ context.Context, at time.Time) ([]pipebench.Point, error) {
	if o.asked.Add(1) == 2 {
		// Past the observation's own timeout if need be (a loaded
		// machine may take longer than an interval to send the blast),
		// up to 10 s.
		testutil.Poll(10*time.Second, func() bool { return o.received.Load() >= o.want })
	}
	left := o.received.Load() - o.done.Load()
	if left > 0 {
		o.done.Add(1)
	}
	return []pipebench.Point{{Name: "work_backlog", Kind: pipebench.KindGauge, Value: float64(left)}}, nil
}

// A blast that ends before the first observation: the drain still waits
// for the observed backlog to empty, since whether there is one is known
// only once the observers answered.
func TestDrainWaitsForABacklogNotYetObserved(t *testing.T) {
	url, received := countingTarget(t)
	obs := &backlogObserver{received: received, want: 5}
	reg := registry(t, observerFactory("backlog", obs))
	plan := observedBlast(t, reg, url, "backlog", 5, "drain: 20s")
	res := runPlan(t, reg, plan)
	var last float64 = -1
	for _, s := range res.Series {
		if s.Name == "work_backlog" && len(s.Points) > 0 {
			last = s.Points[len(s.Points)-1].V
		}
	}
	if last != 0 {
		t.Errorf("the run ended with work_backlog %v after %d observations; want it drained to 0", last, obs.asked.Load())
	}
}

// firstObserver records when its first observation returned and what the
// target had received by then.
type firstObserver struct {
	received *atomic.Int64
	asked    atomic.Int32
	sawSent  atomic.Int64
}

func (o *firstObserver) Observe(_ context.Context, at time.Time) ([]pipebench.Point, error) {
	if o.asked.Add(1) == 1 {
		// A slow first answer, as on a loaded machine: it waits up to
		// half a second for the load to reach the target.
		testutil.Poll(500*time.Millisecond, func() bool { return o.received.Load() > 0 })
		o.sawSent.Store(o.received.Load())
	}
	n := o.received.Load()
	return []pipebench.Point{{Name: "received", Kind: pipebench.KindCounter, Value: float64(n)}}, nil
}

// Every observer's first reading is made before the first send: a point
// is stamped with the time it was asked for, so a first reading answered
// after the load began would count some of the load as before it (a
// blast's first effects in its baseline, and the blast would never seem
// to complete).
func TestFirstObservationBeforeTheLoad(t *testing.T) {
	url, received := countingTarget(t)
	obs := &firstObserver{received: received}
	obs.sawSent.Store(-1)
	reg := registry(t, observerFactory("first", obs))
	plan := observedBlast(t, reg, url, "first", 20, "")
	res := runPlan(t, reg, plan)
	if got := obs.sawSent.Load(); got != 0 {
		t.Errorf("the first observation saw %d requests at the target, want 0: it was not made before the load", got)
	}
	if res.Phases[0].Started.IsZero() {
		t.Fatal("the blast has no start")
	}
	for _, s := range res.Series {
		if s.Name == "received" && (len(s.Points) == 0 || !s.Points[0].T.Before(res.Phases[0].Started) || s.Points[0].V != 0) {
			t.Errorf("the first point of the observer's series %v is not a reading of 0 before the blast started at %v", s.Points, res.Phases[0].Started)
		}
	}
}

// observedBlast is the plan of a blast of n items from n workers at url,
// observed every 100 ms by the observer registered as observer, with the
// scenario's other keys (a drain) in extra.
func observedBlast(t *testing.T, reg *pipebench.Registry, url, observer string, n int, extra string) pipebench.Plan {
	t.Helper()
	return compile(t, reg, fmt.Sprintf(`
name: observed-blast
target: {driver: http, url: %q, connections: 2}
interval: 100ms
observers:
  - {type: %s}
phases:
  - name: blast
    blast: {count: %d, workers: %d}
    duration: 10s
%s
`, url, observer, n, n, extra))
}

// countingTarget is an HTTP target on loopback that accepts every request
// and counts them; it stops when the test ends.
func countingTarget(t *testing.T) (url string, received *atomic.Int64) {
	received = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, received
}

// observerFactory registers obs under name: every run's observer of that
// type is obs itself, for the test to inspect.
func observerFactory(name string, obs pipebench.Observer) pipebench.Factory[pipebench.Observer] {
	return pipebench.NewSimpleFactory(name, "test observer", func(pipebench.Env) (pipebench.Observer, error) {
		return obs, nil
	})
}
