package schedule

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// Linux prctl options for the calling thread's timer slack.
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// sleepChunk bounds one nanosleep, so a cancelled ctx is seen in time.
const sleepChunk = 20 * time.Millisecond

// preciseWaiter sleeps with nanosleep on a locked thread whose timer slack
// is 1 ns, then spins out the last margin.
type preciseWaiter struct {
	slack   uintptr
	slackOK bool
	p       pacing
}

// newPreciseWaiter is the timerfd waiter (falling back on the sleeper
// where a timerfd cannot be made).
func newPreciseWaiter(tick time.Duration) waiter {
	return &timerfdWaiter{p: pacing{g: margin{m: SpinMin}, wake: max(tick, MinWake)}}
}

func newSleepWaiter(tick time.Duration) waiter {
	return &preciseWaiter{p: pacing{g: margin{m: SpinMin}, wake: max(tick, MinWake)}}
}

func (w *preciseWaiter) begin() {
	w.p.last = time.Now() // Run's first pass, before its first wait, is a wake-up
	runtime.LockOSThread()
	s, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno == 0 {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0); errno == 0 {
			w.slack, w.slackOK = s, true
		}
	}
}

func (w *preciseWaiter) end() {
	if w.slackOK {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, w.slack, 0)
	}
	runtime.UnlockOSThread()
}

func (w *preciseWaiter) wait(ctx context.Context, t time.Time) bool {
	ok, _, _ := w.p.sleepUntil(ctx, t, func(d time.Duration) bool {
		ts := syscall.NsecToTimespec(int64(d))
		syscall.Nanosleep(&ts, nil) // EINTR: the loop sleeps again
		return true
	})
	return ok
}

// pacing is what a waiter keeps from one wait to the next: the spin
// margin it learnt and the previous wait's target.
type pacing struct {
	g    margin
	last time.Time
	wake time.Duration // the shortest time between two targets: MinWake or the phase's tick
}

// sleepUntil waits until t. The target is first moved to at least
// p.wake (MinWake, or the phase's longer tick) after the previous one
// (above 1/p.wake sends a second, each wake-up starts several), and the spin capped at an eighth of the time
// since it (so the spin never takes more than an eighth of a core). A
// moved target is not spun for: the sends it starts were due before it,
// so coming back precisely at it buys them nothing, and above 1/MinWake
// sends a second the spin would take an eighth of a core at every rate
// (at 80,000 HTTP requests a second, 1.2 of the 10 µs of CPU a request). Then
// it sleeps with sleep, a chunk of at most sleepChunk at a time, until the
// spin margin before t, learning the margin from how late the shorter
// sleeps end, and spins out the rest. It returns false when ctx ends
// first. When sleep returns false (it could not sleep), sleepUntil returns
// at once with fell true and the target as moved, for the caller to wait
// for it otherwise.
func (p *pacing) sleepUntil(ctx context.Context, t time.Time, sleep func(time.Duration) bool) (ok, fell bool, target time.Time) {
	spinCap := SpinMax
	if !p.last.IsZero() {
		if early := p.last.Add(p.wake); t.Before(early) {
			t, spinCap = early, 0
		}
		spinCap = min(spinCap, t.Sub(p.last)/8)
	}
	p.last = t
	for {
		if ctx.Err() != nil {
			return false, false, t
		}
		d := time.Until(t)
		if d <= 0 {
			return true, false, t
		}
		m := min(p.g.get(), spinCap)
		if d <= m {
			break
		}
		chunk := min(d-m, sleepChunk)
		end := time.Now().Add(chunk)
		if !sleep(chunk) {
			return false, true, t
		}
		if over := time.Since(end); over > 0 && chunk < sleepChunk {
			p.g.observe(over)
		}
	}
	for time.Now().Before(t) {
	}
	return ctx.Err() == nil, false, t
}

// Linux timerfd constants.
const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

// timerfdWaiter waits on a timerfd that the Go runtime's poller watches,
// like a network read: the pacer's goroutine parks without holding a
// thread or a P, and the poller wakes it when the kernel's high-resolution
// timer fires (no timer slack applies to a timerfd), where a Go timer would
// come back up to a millisecond late. It spins out the last margin like the
// sleeper. Compared with the sleeper (nanosleep on a locked thread), a wait
// costs two system calls on the pacer's side and no thread hand-off: the
// sleeper's thread holds the P while it sleeps, until the runtime's monitor
// takes it back for the goroutines that send, and wants it back when it
// wakes up.
type timerfdWaiter struct {
	f     *os.File
	raw   syscall.RawConn
	fd    uintptr
	p     pacing
	sleep waiter // when no timerfd could be made
	// sleepFn and readFn are w.sleepFor and w.readTimer, bound once (a
	// closure made at each wait allocated twice a wake-up).
	sleepFn func(time.Duration) bool
	readFn  func(uintptr) bool
	buf     [8]byte
}

func (w *timerfdWaiter) begin() {
	w.p.last = time.Now() // Run's first pass, before its first wait, is a wake-up
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno == 0 {
		// A non-blocking descriptor: os.NewFile registers it with the
		// runtime's poller.
		w.f = os.NewFile(fd, "pacer-timerfd")
		if raw, err := w.f.SyscallConn(); err == nil {
			w.raw, w.fd = raw, fd
			w.sleepFn, w.readFn = w.sleepFor, w.readTimer
			return
		}
		w.f.Close()
		w.f = nil
	}
	w.sleep = newSleepWaiter(w.p.wake)
	w.sleep.begin()
}

func (w *timerfdWaiter) end() {
	if w.sleep != nil {
		w.sleep.end()
		return
	}
	w.f.Close()
}

// arm sets the timer to fire once, d from now.
func (w *timerfdWaiter) arm(d time.Duration) bool {
	spec := [4]int64{0, 0, int64(d / time.Second), int64(d % time.Second)} // interval, then value
	// A raw system call: it never blocks, and a non-raw one wakes the
	// runtime's monitor thread (sysmon) when it sleeps, at every wait.
	_, _, errno := syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, w.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	return errno == 0
}

func (w *timerfdWaiter) wait(ctx context.Context, t time.Time) bool {
	if w.sleep != nil {
		return w.sleep.wait(ctx, t)
	}
	ok, fell, t := w.p.sleepUntil(ctx, t, w.sleepFn)
	if fell {
		w.sleep = newSleepWaiter(w.p.wake)
		w.sleep.begin()
		return w.sleep.wait(ctx, t)
	}
	return ok
}

// sleepFor sleeps d on the timer: it parks until the timer fired (the
// read then returns its count).
func (w *timerfdWaiter) sleepFor(d time.Duration) bool {
	if !w.arm(d) {
		return false
	}
	w.raw.Read(w.readFn)
	return true
}

// readTimer reads the timer's count: raw for the same reason as arm's
// (the descriptor is non-blocking); false while it has not fired.
func (w *timerfdWaiter) readTimer(fd uintptr) bool {
	_, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
	return e != syscall.EAGAIN
}
