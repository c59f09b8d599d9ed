package runner

import "time"

// drain waits until everything accepted has arrived at the sink, delivery
// stopped moving for ten intervals, the drain time is up, or the run is
// cut. After a signal the drain lasts at most AbortGrace.
func (r *run) drain(aborted bool) {
	if r.c.sink == nil {
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
	last, lastMove := r.arr.Delivered(), time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if r.arr.Outstanding() == 0 {
			return
		}
		select {
		case <-r.p.Cut.Done():
			r.log.Info("drain cut short")
			return
		case <-tick.C:
		}
		if d := r.arr.Delivered(); d != last {
			last, lastMove = d, time.Now()
		} else if time.Since(lastMove) > stallAfter {
			r.log.Info("drain stopped: nothing arrived", "for", stallAfter)
			return
		}
	}
}
