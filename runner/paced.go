package runner

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/schedule"
)

// paced runs an open-model phase: sends start when due, whether or not
// earlier ones finished (handed to the driver one after the other when it
// is a pipebench.AsyncSender, else each in a goroutine of its own),
// bounded by max_in_flight (a send due while the bound is reached is held
// back: the system under test had that many answers outstanding), and by
// max_in_flight_bytes (the requests' bytes in flight: the generator's
// memory, bounded when the system falls behind). A pacer that fell so far
// behind that sends are still due LateGrace after the phase's end stops
// there: what it had not made is missed (pipebench's own share, which
// makes the run invalid), and the phase ends on time.
type paced struct{}

// LateGrace is how far past its phase's end a pacer that fell behind goes
// on making the sends due in the phase: a send later than this is a
// failure of pipebench's (schedule lag above a second makes the run
// invalid anyway).
const LateGrace = time.Second

func (paced) execute(ctx, sendCtx context.Context, r *run, i int, wg *sync.WaitGroup) {
	ph := r.plan.Phases[i]
	live := r.rec.Live(i)
	count := max(ph.BatchSize, 1)
	maxInFlight := int64(ph.MaxInFlight)
	if maxInFlight < 1 {
		maxInFlight = 10000
	}
	maxBytes := ph.MaxInFlightBytes
	as, _ := r.c.drv.(pipebench.AsyncSender)
	// A send that makes its batch in a goroutine of its own has its bytes
	// reserved when it is due, at the size of the batch made last (the
	// first batch is made here, to know it): sends whose goroutines wait
	// for the processor to make their batches count against
	// max_in_flight_bytes too, so a generator that cannot make batches as
	// fast as they fall due stays within it instead of growing without
	// bound.
	var last atomic.Int64
	// making counts the sends whose goroutines have not made their
	// batches yet, and reserved the bytes reserved for them: pipebench's
	// own backlog, told apart from what the system holds.
	var making, reserved atomic.Int64
	workers := &senders{work: make(chan *asyncSend), ctx: sendCtx, last: &last}
	defer close(workers.work)
	// A driver that writes the sends of one wake-up together is told
	// when the row ends.
	var flush func()
	if f, ok := as.(pipebench.Flusher); ok {
		flush = f.Flush
	}
	until := r.phaseT0[i].Add(ph.Duration.D() + LateGrace)
	made := schedule.RunFlushed(ctx, r.pacers[i], r.phaseT0[i], until, func(n uint64, at time.Time) bool {
		seq := r.nextSeq.Add(uint64(count)) - uint64(count)
		// A send due while a bound is reached is held back. Whose limit
		// held it: the system's when its unanswered sends alone reach
		// the bound, else pipebench's own, whose sends still waiting to
		// make their batches took the rest (a generator that cannot make
		// batches as fast as they fall due).
		if n := live.InFlight.Load(); n >= maxInFlight {
			if n-making.Load() >= maxInFlight {
				r.rec.Dropped(i, count, kpi.HeldMaxInFlight, at)
			} else {
				r.rec.Missed(i, uint64(count))
			}
			return true
		}
		if b := live.InFlightBytes.Load(); maxBytes > 0 && b >= maxBytes {
			if b-reserved.Load() >= maxBytes {
				r.rec.Dropped(i, count, kpi.HeldMaxInFlightBytes, at)
			} else {
				r.rec.Missed(i, uint64(count))
			}
			return true
		}
		now := time.Now()
		r.rec.Started(i, count, now.Sub(at))
		wg.Add(1)
		if as != nil {
			r.sendAsync(sendCtx, as, i, seq, count, at, now, wg)
			return true
		}
		s := r.newSend(i, seq, count, at, now, wg)
		if s.reserved = last.Load(); s.reserved == 0 {
			s.make(&last)
		} else {
			live.InFlightBytes.Add(s.reserved)
			reserved.Add(s.reserved)
			making.Add(1)
			s.making, s.reservedSum = &making, &reserved
		}
		workers.run(s)
		return true
	}, flush)
	if left := r.pacers[i].Sends() - made; left > 0 && ctx.Err() == nil {
		// The pacer gave up at until: the sends it had not made are
		// pipebench's shortfall, and their sequence numbers stay unused
		// (the next phase starts after them, as planned).
		r.nextSeq.Add(left * uint64(count))
		r.rec.Missed(i, left*uint64(count))
	}
	// The phase lasts its planned duration even when the last send is due
	// earlier (a low rate), so rates divide by the right time.
	if end := r.phaseT0[i].Add(ph.Duration.D()); ctx.Err() == nil {
		sleepUntil(ctx, end)
	}
}

// senders runs a phase's sends to a driver that is not an AsyncSender on
// goroutines kept from send to send: a send goes to one that is idle, or
// starts one. A goroutine keeps the stack the driver's library grew (a gRPC
// call's is deep: growing it again for every send cost about a seventh of
// the generator's CPU). They end once the phase has handed out its last
// send (work closed) and their own is done.
type senders struct {
	work chan *asyncSend // unbuffered: taken only by an idle goroutine
	ctx  context.Context
	last *atomic.Int64
}

// run hands s to an idle goroutine, or to a new one.
func (w *senders) run(s *asyncSend) {
	select {
	case w.work <- s:
	default:
		go w.loop(s)
	}
}

func (w *senders) loop(s *asyncSend) {
	for ok := true; ok; s, ok = <-w.work {
		s.sync(w.ctx, w.last)
	}
}

// asyncSend is one send handed to an AsyncSender: what run.send keeps on
// its stack, kept until the driver reports the outcome. They are pooled
// (asyncSends), each with its done bound once, so a send allocates
// nothing here.
type asyncSend struct {
	r        *run
	wg       *sync.WaitGroup
	rel      pipebench.Releaser // the generator, when it takes its buffers back
	b        pipebench.Batch
	i, count int
	seq      uint64
	at       time.Time
	started  time.Time
	size     int64
	reserved int64 // bytes counted in flight before the batch was made
	made     bool  // the batch is made
	// making and reservedSum, when set, count this send among those
	// whose batch is not made yet, with its reserved bytes (paced).
	making, reservedSum *atomic.Int64
	reported            atomic.Bool
	fn                  func(time.Time, pipebench.Outcome) // s.done
	// kept: the driver panicked and may still call done: s never goes
	// back to the pool.
	kept bool
}

var asyncSends = sync.Pool{New: func() any { return new(asyncSend) }}

// newSend takes a send record from the pool for send seq of phase i,
// due at at, started now.
func (r *run) newSend(i int, seq uint64, count int, at, now time.Time, wg *sync.WaitGroup) *asyncSend {
	s := asyncSends.Get().(*asyncSend)
	if s.fn == nil {
		s.fn = s.done
	}
	s.r, s.wg, s.i, s.count, s.seq, s.at, s.started = r, wg, i, count, seq, at, now
	s.rel, _ = r.c.gen.(pipebench.Releaser)
	s.reported.Store(false)
	s.made, s.reserved = false, 0
	s.making, s.reservedSum = nil, nil
	return s
}

// make makes s's batch and counts its bytes in flight (less what was
// reserved for it); last, if set, learns its size.
func (s *asyncSend) make(last *atomic.Int64) {
	r := s.r
	s.b = r.c.gen.Next(s.seq, s.count, s.at)
	s.b.Seq, s.b.Count, s.b.Scheduled = s.seq, s.count, s.at
	s.size = int64(len(s.b.Body))
	r.rec.Live(s.i).InFlightBytes.Add(s.size - s.reserved)
	if s.making != nil {
		s.making.Add(-1)
		s.reservedSum.Add(-s.reserved)
		s.making, s.reservedSum = nil, nil
	}
	s.reserved, s.made = 0, true
	if last != nil {
		last.Store(max(s.size, 1))
	}
}

// sync is run.send for a driver that is not an AsyncSender, in the send's
// own goroutine: it makes the batch (unless made already), sends it and
// records the outcome. The send starts once its batch is made.
func (s *asyncSend) sync(ctx context.Context, last *atomic.Int64) {
	if !s.made {
		s.make(last)
	}
	started := time.Now()
	s.done(started, s.r.safeSend(ctx, &s.b))
}

// sendAsync is run.send for an AsyncSender: the same batch, times and
// records, with the second half in done.
func (r *run) sendAsync(ctx context.Context, as pipebench.AsyncSender, i int, seq uint64, count int, at, now time.Time, wg *sync.WaitGroup) {
	s := r.newSend(i, seq, count, at, now, wg)
	s.make(nil)
	defer func() {
		// A driver that panics: the send is an error, as in safeSend.
		if v := recover(); v != nil {
			buf := make([]byte, 4096)
			buf = buf[:runtime.Stack(buf, false)]
			r.log.Error("driver panicked", "panic", v, "stack", string(buf))
			s.kept = true
			s.done(time.Time{}, pipebench.Outcome{Class: pipebench.ClassError, Detail: "driver panic", Message: fmt.Sprint("driver panic: ", v)})
		}
	}()
	as.SendAsync(ctx, &s.b, s.fn)
}

// done records the outcome of s, once, and puts s back in the pool. The
// send started when the driver took it up (what came before is lag: the
// generator's), not before the hand-over.
func (s *asyncSend) done(started time.Time, out pipebench.Outcome) {
	if !s.reported.CompareAndSwap(false, true) {
		return
	}
	if started.After(s.started) {
		s.started = started
	}
	r, i, count := s.r, s.i, s.count
	ended := time.Now()
	r.rec.Live(i).InFlightBytes.Add(-s.size)
	if out.Class != pipebench.ClassOK && r.sendsCancelled.Load() {
		// Ended by the stopped run's cancellation, not by the target: no
		// outcome, so it counts as abandoned (sent, never answered).
	} else {
		r.rec.Record(i, pipebench.Sample{Scheduled: s.at, Started: s.started, Ended: ended, Count: count, Bytes: len(s.b.Body), Outcome: out})
	}
	if out.Class == pipebench.ClassOK {
		if r.c.sink != nil { // nothing to match arrivals against otherwise
			r.arr.Accept(s.seq, count)
		}
		r.acceptedN.Add(uint64(count))
	}
	if s.rel != nil {
		s.rel.Release(&s.b)
	}
	wg := s.wg
	if !s.kept {
		s.b, s.r, s.wg, s.rel = pipebench.Batch{}, nil, nil, nil
		asyncSends.Put(s)
	}
	wg.Done()
}
