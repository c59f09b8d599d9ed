package testutil

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Every calls fn until stopped, and not after stop returns; a second stop
// does nothing.
func TestEvery(t *testing.T) {
	var n atomic.Int32
	stop := Every(time.Millisecond, func(time.Time) { n.Add(1) })
	Eventually(t, 5*time.Second, func() bool { return n.Load() >= 3 }, "fn was called %d times", n.Load())
	stop()
	after := n.Load()
	stop()
	if Poll(20*time.Millisecond, func() bool { return n.Load() != after }) {
		t.Errorf("fn was called after stop returned")
	}
}

func TestPoll(t *testing.T) {
	var n atomic.Int32
	go func() {
		for i := 0; i < 3; i++ {
			n.Add(1)
		}
	}()
	if !Poll(5*time.Second, func() bool { return n.Load() == 3 }) {
		t.Fatal("Poll gave up on a condition that became true")
	}
	start := time.Now()
	if Poll(50*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll reported a false condition true")
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("Poll gave up after %s, before its timeout", el)
	}
}

// Arrivals counts each sequence number's arrivals from several goroutines
// and finds the one that did not arrive exactly once.
func TestArrivals(t *testing.T) {
	var a Arrivals
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			for s := uint64(1); s <= 25; s++ {
				a.Arrive(uint64(g)*25+s, time.Time{}, time.Time{})
			}
			done <- struct{}{}
		}(g)
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	a.Faulted(3)
	a.Unmatched(2)
	a.WaitDistinct(t, time.Second, 100, "items")
	a.ExpectEachOnce(t, 1, 100, "item")
	if n, f := a.Count(); n != 100 || f != 3 || a.UnmatchedItems() != 2 || a.Times(7) != 1 || a.Distinct() != 100 || a.Times(101) != 0 {
		t.Fatalf("count %d, faulted %d, unmatched %d, times(7) %d", n, f, a.UnmatchedItems(), a.Times(7))
	}
	a.Arrive(7, time.Time{}, time.Time{})
	ft := &fakeTB{TB: t}
	func() {
		defer func() { recover() }()
		a.ExpectEachOnce(ft, 1, 100, "item")
	}()
	if ft.msg != "item 7 arrived 2 times" {
		t.Errorf("a duplicate reported as %q", ft.msg)
	}
}

// fakeTB records a Fatalf instead of failing the test.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}

// Start starts at once and stops when the test ends, after its deferred
// calls.
func TestStart(t *testing.T) {
	var order []string
	t.Run("sub", func(t *testing.T) {
		Start(t, func(context.Context) error { order = append(order, "start"); return nil },
			func(context.Context) error { order = append(order, "stop"); return nil })
		defer func() { order = append(order, "deferred") }()
	})
	if got := fmt.Sprint(order); got != "[start deferred stop]" {
		t.Errorf("order %s", got)
	}
}

func TestErrorText(t *testing.T) {
	inner := errors.New("timeout: must be more than 0")
	err := fmt.Errorf("effect: %w", inner)
	if got := ErrorText(err); got != "effect: timeout: must be more than 0\ntimeout: must be more than 0\n" {
		t.Errorf("%q", got)
	}
	if ErrorText(nil) != "" {
		t.Error("nil")
	}
}
