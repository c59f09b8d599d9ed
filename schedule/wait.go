package schedule

import (
	"context"
	"time"
)

// Clock is how Run waits for the next due send.
type Clock int

const (
	// Precise wakes up within tens of microseconds of the due time on an
	// idle core. On Linux the pacer's goroutine waits on a timerfd that
	// the runtime's network poller watches (a high-resolution timer with
	// no timer slack; the goroutine parks like a network read, holding no
	// thread) until shortly before the due time and spins out the rest
	// reading the clock. The spin is bounded: its margin adapts to how
	// late the waits came back (from SpinMin up to SpinMax) and never
	// exceeds an eighth of the time since the previous wake-up, so the
	// spin costs at most an eighth of a core at any rate, and far less on
	// an idle core where waits come back within microseconds (measured
	// with BenchmarkClocks). Where no timerfd can be made it is the
	// Sleeper; elsewhere than Linux the Go timer, whose runtime waits with
	// sub-millisecond timeouts there. It reads the real clock: use Coarse
	// inside a testing/synctest bubble.
	Precise Clock = iota
	// Coarse waits on a Go timer, which on Linux comes back up to about
	// 1 ms late (the runtime's poller waits in whole milliseconds). It
	// works in a testing/synctest bubble's virtual time.
	Coarse
)

// SpinMin and SpinMax bound the busy wait at the end of a Precise wait;
// MinWake is the shortest time between two Precise wake-ups (on Linux), so
// the pacer wakes up at most 10,000 times a second: each wake-up costs a
// few system calls (about 10-25 µs of CPU on a busy 2-core machine,
// measured with BenchmarkClocks: 0.09-0.14 cores at 2,000/s, 0.18-0.24 at
// 10,000/s, spin included, the same as the Sleeper's 0.13-0.14 and
// 0.20-0.26 in the same pass), and above 10,000 sends/s each wake-up
// starts the several sends due by then, at most MinWake late.
const (
	SpinMin = 20 * time.Microsecond
	SpinMax = 100 * time.Microsecond
	MinWake = 100 * time.Microsecond
)

// waiter waits until a time; begin and end bracket one Run.
type waiter interface {
	begin()
	end()
	// wait returns false when ctx was done before t.
	wait(ctx context.Context, t time.Time) bool
}

// newWaiter returns the waiter of clock c, waking up at most once a tick
// (at most once every MinWake on Linux when tick is shorter).
func newWaiter(c Clock, tick time.Duration) waiter {
	switch c {
	case Coarse:
		return &timerWaiter{tick: tick}
	case Sleeper:
		return newSleepWaiter(tick)
	}
	return newPreciseWaiter(tick)
}

// Sleeper is what Precise was before it waited on a timerfd: on Linux,
// nanosleep on a locked OS thread with a timer slack of 1 ns, then the
// spin (the Go timer elsewhere). It is kept for the benchmarks that
// compare the two (BenchmarkClocks, bench/truth).
const Sleeper Clock = 100

// timerWaiter waits on one reused Go timer, for at least tick after its
// previous target.
type timerWaiter struct {
	t    *time.Timer
	tick time.Duration
	last time.Time
}

func (w *timerWaiter) begin() {
	w.last = time.Now() // Run's first pass, before its first wait, is a wake-up
	w.t = time.NewTimer(time.Hour)
	w.t.Stop()
}

func (w *timerWaiter) end() { w.t.Stop() }

func (w *timerWaiter) wait(ctx context.Context, t time.Time) bool {
	if w.tick > 0 && !w.last.IsZero() {
		t = maxTime(t, w.last.Add(w.tick))
	}
	w.last = t
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	w.t.Reset(d)
	select {
	case <-ctx.Done():
		w.t.Stop()
		return false
	case <-w.t.C:
		return true
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// margin adapts the spin margin: it follows the latest sleep overshoot up
// at once and decays by 1/16 per wake-up, within [SpinMin, SpinMax].
type margin struct{ m time.Duration }

func (g *margin) get() time.Duration { return min(max(g.m+SpinMin/2, SpinMin), SpinMax) }

func (g *margin) observe(over time.Duration) {
	g.m -= g.m / 16
	if over > g.m {
		g.m = min(over, SpinMax)
	}
}
