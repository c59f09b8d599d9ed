// Package schedule turns a phase of a plan into a send schedule. A Pacer is
// a pure function of elapsed time: it says when send n is due and how many
// are due by a given time, so it is tested in virtual time. Run drives one in
// real time without one sleep per send: at each wake-up it emits every send
// that has fallen due, each with its own scheduled time. It wakes up within
// tens of microseconds of the due time (the Precise clock, wait.go).
package schedule

import (
	"context"
	"time"

	"github.com/pipebench/pipebench"
)

// Pacer is the send schedule of one phase, a pipebench.Curve. It is
// immutable after New and safe for concurrent use.
type Pacer struct {
	*pipebench.Curve
	// tick is the shortest time between two wake-ups (the phase's tick; 0:
	// MinWake).
	tick time.Duration
}

// New builds the pacer of a phase from the plan's parameters.
func New(ph pipebench.PlanPhase) (*Pacer, error) {
	c, err := ph.Curve()
	if err != nil {
		return nil, err
	}
	return &Pacer{Curve: c, tick: time.Duration(ph.Tick)}, nil
}

// Run drives p in real time from start with the Precise clock. It calls
// due(n, scheduled) for every send in order once it has fallen due. When it
// wakes up late it emits every overdue send at once, each with its own
// scheduled time, so a timer's granularity never caps the rate. It returns
// when every send was emitted, due returned false, or ctx is done, and
// reports how many sends it emitted.
func Run(ctx context.Context, p *Pacer, start time.Time, due func(n uint64, at time.Time) bool) uint64 {
	return RunWith(ctx, p, start, Precise, due)
}

// RunFlushed is Run calling flush after the sends emitted at each wake-up,
// before the next wait and before it returns: where a driver writes the
// sends of one wake-up together (pipebench.Flusher). It also stops once
// the clock passes until (zero: never): a pacer that fell so far behind
// that sends are still due then gives up on them (the caller counts the
// rest, p.Sends() less what it returns, as missed), instead of running
// past its phase's end.
func RunFlushed(ctx context.Context, p *Pacer, start, until time.Time, due func(n uint64, at time.Time) bool, flush func()) uint64 {
	return run(ctx, p, start, until, Precise, due, flush)
}

// RunWith is Run with the given clock (Coarse in a testing/synctest
// bubble's virtual time).
func RunWith(ctx context.Context, p *Pacer, start time.Time, clock Clock, due func(n uint64, at time.Time) bool) uint64 {
	return run(ctx, p, start, time.Time{}, clock, due, nil)
}

// checkEvery is how many overdue sends run emits between two looks at the
// clock and ctx: a pacer far behind (a rate no machine can make) still
// stops within microseconds of a signal or of until.
const checkEvery = 64

// run is RunWith with flush (nil: none) called after each wake-up's sends,
// stopping at until (zero: never).
func run(ctx context.Context, p *Pacer, start, until time.Time, clock Clock, due func(n uint64, at time.Time) bool, flush func()) uint64 {
	if flush != nil {
		defer flush()
	}
	var n uint64
	w := newWaiter(clock, p.tick)
	w.begin()
	defer w.end()
	over := func() bool { return ctx.Err() != nil || (!until.IsZero() && time.Now().After(until)) }
	for n < p.Sends() {
		if over() {
			return n
		}
		now := time.Since(start)
		for k := 1; n < p.Sends(); k++ {
			at, _ := p.At(n)
			if at > now {
				break
			}
			if k%checkEvery == 0 && over() {
				return n
			}
			n++
			if !due(n-1, start.Add(at)) {
				return n
			}
		}
		if flush != nil {
			flush()
		}
		if n >= p.Sends() {
			break
		}
		next, _ := p.At(n)
		if !w.wait(ctx, start.Add(next)) {
			return n
		}
	}
	return n
}
