package schedule

import (
	"context"
	"runtime"
	"syscall"
	"time"
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
	g       margin
	last    time.Time // the previous wait's target
}

func newPreciseWaiter() waiter { return &preciseWaiter{g: margin{m: SpinMin}} }

func (w *preciseWaiter) begin() {
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
	// Spin at most an eighth of the time since the last wake-up, so the
	// spin never takes more than an eighth of a core.
	spinCap := SpinMax
	if !w.last.IsZero() {
		// At most one wake-up per MinWake: above 1/MinWake sends a
		// second, each wake-up starts several.
		if early := w.last.Add(MinWake); t.Before(early) {
			t = early
		}
		spinCap = min(spinCap, t.Sub(w.last)/8)
	}
	w.last = t
	for {
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		m := min(w.g.get(), spinCap)
		if d <= m {
			break
		}
		sleep := min(d-m, sleepChunk)
		ts := syscall.NsecToTimespec(int64(sleep))
		target := time.Now().Add(sleep)
		syscall.Nanosleep(&ts, nil) // EINTR: the loop sleeps again
		if over := time.Since(target); over > 0 && sleep < sleepChunk {
			w.g.observe(over)
		}
	}
	for time.Now().Before(t) {
	}
	return ctx.Err() == nil
}
