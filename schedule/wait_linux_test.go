package schedule

import (
	"context"
	"testing"
	"time"
)

// Both Linux waiters, the timerfd one and the nanosleep one, never return
// before the target, keep targets at least MinWake apart, and give up on a
// cancelled context.
func TestLinuxWaiters(t *testing.T) {
	for name, w := range map[string]waiter{"timerfd": newPreciseWaiter(), "nanosleep": newSleepWaiter()} {
		t.Run(name, func(t *testing.T) {
			w.begin()
			defer w.end()
			ctx := context.Background()
			at := time.Now()
			for i := 0; i < 20; i++ {
				at = at.Add(2 * time.Millisecond)
				if !w.wait(ctx, at) {
					t.Fatalf("wait %d gave up", i)
				}
				if now := time.Now(); now.Before(at) {
					t.Fatalf("wait %d returned %s early", i, at.Sub(now))
				}
			}
			// A target closer than MinWake to the last is moved to it.
			near := at.Add(MinWake / 4)
			w.wait(ctx, near)
			if now := time.Now(); now.Before(at.Add(MinWake)) {
				t.Errorf("a wake-up %s after the last one, want at least %s", now.Sub(at), MinWake)
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if w.wait(cancelled, time.Now().Add(time.Hour)) {
				t.Error("a wait on a cancelled context reported it was on time")
			}
		})
	}
}
