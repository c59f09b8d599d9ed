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
	for name, w := range map[string]waiter{"timerfd": newPreciseWaiter(0), "nanosleep": newSleepWaiter(0)} {
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

// A target moved to MinWake after the previous one is slept for to the
// end, with no spin: the sends it starts are due already. One that is not
// moved is slept for up to the spin margin before it, at least SpinMin
// early when the last wake-up is long past.
func TestMovedTargetsAreNotSpunFor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration // from the previous target
		spin  bool
	}{{"moved", MinWake / 4, false}, {"due", 10 * MinWake, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := pacing{g: margin{m: SpinMin}}
			p.last = time.Now()
			target := p.last.Add(tc.after)
			var first time.Duration
			var asked time.Time
			ok, fell, moved := p.sleepUntil(context.Background(), target, func(d time.Duration) bool {
				if first == 0 {
					first, asked = d, time.Now()
				}
				time.Sleep(d)
				return true
			})
			if !ok || fell {
				t.Fatalf("sleepUntil: ok %v, fell %v", ok, fell)
			}
			left := moved.Sub(asked) - first // how long before the target the first sleep was to end
			if tc.spin && left < SpinMin/2 {
				t.Errorf("the first sleep was to end %s before a target not moved, want the spin margin (at least %s)", left, SpinMin/2)
			}
			if !tc.spin && left > SpinMin/2 {
				t.Errorf("the first sleep was to end %s before a moved target, want no spin margin", left)
			}
		})
	}
}
