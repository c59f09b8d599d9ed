package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// blast runs a closed-model phase: Workers senders send Count items in
// total, each starting its next send when the previous one returns. The
// phase ends when every send returned or its duration (the blast's time
// limit) is up.
type blast struct{}

func (blast) execute(ctx, sendCtx context.Context, r *run, i int, wg *sync.WaitGroup) {
	ph := r.plan.Phases[i]
	count := max(ph.BatchSize, 1)
	sends := r.pacers[i].Sends()
	workers := max(ph.Profile.Workers, 1)
	deadline, cancel := context.WithTimeout(ctx, ph.Duration.D())
	defer cancel()
	var next atomic.Uint64
	base := r.nextSeq.Add(sends*uint64(count)) - sends*uint64(count)
	var bw sync.WaitGroup
	for w := 0; w < workers; w++ {
		bw.Add(1)
		wg.Add(1)
		go func() {
			defer bw.Done()
			defer wg.Done()
			for deadline.Err() == nil {
				n := next.Add(1) - 1
				if n >= sends {
					return
				}
				at := time.Now()
				r.rec.Started(i, count, 0)
				r.send(sendCtx, i, base+n*uint64(count), count, at)
			}
		}()
	}
	bw.Wait()
}
