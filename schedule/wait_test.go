package schedule

import (
	"context"
	"testing"
	"time"
)

// The Precise clock never emits a send before it is due, emits them all, and
// stops when ctx is done (no timing bound asserted: the machine may be busy).
func TestPreciseNeverEarlyAndCancels(t *testing.T) {
	p := mustNew(t, constant(2000, 200*time.Millisecond))
	start := time.Now()
	early := 0
	n := Run(context.Background(), p, start, func(_ uint64, at time.Time) bool {
		if time.Now().Before(at) {
			early++
		}
		return true
	})
	if n != 400 || early > 0 {
		t.Fatalf("emitted %d (want 400), %d before due", n, early)
	}
	ctx, cancel := context.WithCancel(context.Background())
	slow := mustNew(t, constant(1, time.Hour))
	done := make(chan uint64)
	go func() { done <- Run(ctx, slow, time.Now(), func(uint64, time.Time) bool { return true }) }()
	cancel()
	select {
	case n := <-done:
		if n > 1 {
			t.Errorf("cancelled run emitted %d", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled Run did not return")
	}
}

func TestMarginBounded(t *testing.T) {
	var g margin
	g.observe(time.Second)
	if got := g.get(); got != SpinMax {
		t.Errorf("margin after a 1 s overshoot = %v, want %v", got, SpinMax)
	}
	for range 200 {
		g.observe(0)
	}
	if got := g.get(); got != SpinMin {
		t.Errorf("margin after on-time sleeps = %v, want %v", got, SpinMin)
	}
}
