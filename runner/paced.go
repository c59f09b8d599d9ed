package runner

import (
	"context"
	"sync"
	"time"

	"github.com/pipebench/pipebench/schedule"
)

// paced runs an open-model phase: sends start when due, whether or not
// earlier ones finished, bounded by max_in_flight (a send due while the
// bound is reached is counted as dropped), and by max_in_flight_bytes
// (the requests' bytes in flight: the generator's memory, bounded when the
// system or the generator falls behind).
type paced struct{}

func (paced) execute(ctx, sendCtx context.Context, r *run, i int, wg *sync.WaitGroup) {
	ph := r.plan.Phases[i]
	live := r.rec.Live(i)
	count := max(ph.BatchSize, 1)
	maxInFlight := int64(ph.MaxInFlight)
	if maxInFlight < 1 {
		maxInFlight = 10000
	}
	maxBytes := ph.MaxInFlightBytes
	schedule.Run(ctx, r.pacers[i], r.phaseT0[i], func(n uint64, at time.Time) bool {
		seq := r.nextSeq.Add(uint64(count)) - uint64(count)
		if live.InFlight.Load() >= maxInFlight {
			r.rec.Dropped(i, count)
			return true
		}
		if maxBytes > 0 && live.InFlightBytes.Load() >= maxBytes {
			live.DroppedForBytes.Add(uint64(count))
			r.rec.Dropped(i, count)
			return true
		}
		r.rec.Started(i, count, time.Since(at))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.send(sendCtx, i, seq, count, at)
		}()
		return true
	})
	// The phase lasts its planned duration even when the last send is due
	// earlier (a low rate), so rates divide by the right time.
	if end := r.phaseT0[i].Add(ph.Duration.D()); ctx.Err() == nil {
		sleepUntil(ctx, end)
	}
}
