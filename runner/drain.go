package runner

import (
	"context"
	"strings"
	"time"
)

// drain waits until everything accepted has arrived at the sink, delivery
// stopped moving for ten intervals, the drain time is up, a signal comes
// (ctx is done), or the run is cut. After a signal during the load the
// drain lasts at most AbortGrace.
func (r *run) drain(ctx context.Context, aborted bool) {
	if r.c.sink == nil {
		r.drainObserved(ctx, aborted)
		return
	}
	limit := r.plan.Drain.D()
	if limit <= 0 {
		limit = 30 * time.Second
	}
	if aborted && limit > r.p.AbortGrace {
		limit = r.p.AbortGrace
	}
	r.draining.Store(true)
	r.phaseIdx.Store(int32(len(r.plan.Phases)))
	r.arr.SetRunning(len(r.plan.Phases))
	deadline := time.Now().Add(limit)
	stallAfter := min(10*r.interval(), limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// Movement is what is still outstanding changing: with several
	// pipelines told apart, a slow pipeline's copies arriving count even
	// when every item already arrived once through another.
	outstanding := func() (uint64, bool) {
		out := r.arr.Outstanding()
		return out, out == 0
	}
	switch settle(deadline, stallAfter, tick.C, r.cut(), stopped(ctx, aborted), r.arr.Outstanding(), outstanding) {
	case settleStalled:
		r.log.Info("drain stopped: nothing arrived", "for", stallAfter)
	case settleCut:
		r.log.Info("drain cut short")
	case settleStopped:
		r.log.Info("drain stopped by a signal")
	}
}

// drainObserved is the drain of a run without a sink whose observers
// report a backlog of their own (an effect observer's effect_backlog, a
// consumer's pending messages): observation goes on until every such
// backlog is empty, it stopped moving for ten intervals, the drain time is
// up, or the run is cut.
func (r *run) drainObserved(ctx context.Context, aborted bool) {
	if len(r.c.observers) == 0 || aborted {
		return
	}
	began := time.Now()
	limit := r.plan.Drain.D()
	if limit <= 0 {
		limit = 30 * time.Second
	}
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(r.interval() / 2)
	defer tick.Stop()
	// Whether an observer reports a backlog is known once every observer
	// answered once: a blast can end before the first observation does.
	for r.obsRounds.Load() == 0 && time.Now().Before(deadline) {
		select {
		case <-r.cut():
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	if _, _, ok := r.observedBacklog(); !ok {
		return
	}
	r.draining.Store(true)
	r.phaseIdx.Store(int32(len(r.plan.Phases)))
	stallAfter := min(10*r.interval(), limit)
	// Only a backlog observed after the load ended tells it is empty: one
	// seen before (a blast shorter than the interval) is from before the
	// last events were sent.
	backlog := func() (float64, bool) {
		b, at, _ := r.observedBacklog()
		return b, b <= 0 && !at.Before(began)
	}
	if settle(deadline, stallAfter, tick.C, r.cut(), ctx.Done(), -1, backlog) == settleStalled {
		r.log.Info("drain stopped: the observed backlog did not move", "for", stallAfter)
	}
}

// How settle ended.
const (
	settleTimeout = iota // the deadline passed
	settleDone           // progress said done
	settleStalled        // the value did not move for stallAfter
	settleCut            // cut closed
	settleStopped        // stop closed
)

// settle reads progress at once and on every tick until the deadline,
// until it says done, its value (last before the first reading) stays the
// same for more than stallAfter, or cut or stop closes; it says which.
func settle[T comparable](deadline time.Time, stallAfter time.Duration, tick <-chan time.Time, cut, stop <-chan struct{}, last T, progress func() (T, bool)) int {
	lastMove := time.Now()
	for time.Now().Before(deadline) {
		v, done := progress()
		if done {
			return settleDone
		}
		if v != last {
			last, lastMove = v, time.Now()
		} else if time.Since(lastMove) > stallAfter {
			return settleStalled
		}
		select {
		case <-cut:
			return settleCut
		case <-stop:
			return settleStopped
		case <-tick:
		}
	}
	return settleTimeout
}

// stopped is ctx's Done channel when a signal would stop the drain now: a
// drain that follows a signal during the load (aborted) runs on for its
// grace, so it never stops it.
func stopped(ctx context.Context, aborted bool) <-chan struct{} {
	if aborted {
		return nil
	}
	return ctx.Done()
}

// observedBacklog sums the latest value of every observed series that is a
// backlog (named *_backlog or *_pending), and the time of the oldest of
// those latest values; ok is false when there is none.
func (r *run) observedBacklog() (float64, time.Time, bool) {
	r.seriesMu.Lock()
	defer r.seriesMu.Unlock()
	var sum float64
	var at time.Time
	ok := false
	for _, s := range r.series.byKey {
		if s.Name == "backlog" || len(s.Points) == 0 || !(strings.HasSuffix(s.Name, "_backlog") || s.Name == "consumer_pending") {
			continue
		}
		p := s.Points[len(s.Points)-1]
		sum += p.V
		if !ok || p.T.Before(at) {
			at = p.T
		}
		ok = true
	}
	return sum, at, ok
}
