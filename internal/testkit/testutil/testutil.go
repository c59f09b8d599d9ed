// Package testutil holds helpers for tests: waiting on a condition
// instead of sleeping.
package testutil

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 10 ms until it is true, and fails the test
// with the message (fmt.Sprintf(format, args...)) when it is still false
// after timeout. cond runs on the test's goroutine.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	if !Poll(timeout, cond) {
		tb.Fatalf("after %s: %s", timeout, fmt.Sprintf(format, args...))
	}
}

// Poll polls cond every 10 ms until it is true or timeout has passed, and
// reports whether it became true. For conditions a test inspects further
// itself.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

// Every calls fn on a goroutine of its own every interval, with the
// tick's time, until the stop it returns is called: stop waits for fn's
// last call to end, and may be called more than once. For what a test
// samples or plays in the background while it runs something else.
func Every(interval time.Duration, fn func(now time.Time)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				fn(now)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// FreeAddr is a loopback host:port that nothing listens on now: for a
// server the test starts there, or a target that refuses connections.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Lazy is a value for Eventually's message that is computed only when the
// message is printed, at the timeout: testutil.Lazy(out.String) shows the
// output as it was then, not when Eventually was called.
type Lazy func() string

// String calls l.
func (l Lazy) String() string { return l() }

// Start calls start and fails the test when it returns an error; when the
// test ends (after its deferred calls), stop is called. Both get a
// background context. For a component with Start and Shutdown methods:
// testutil.Start(t, sut.Start, sut.Shutdown).
func Start(tb testing.TB, start, stop func(context.Context) error) {
	tb.Helper()
	if err := start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stop(context.Background()) })
}

// ErrorText is the message of err and of each error it wraps in turn
// (through Unwrap() error), one a line: what a test searches for the
// problems a Validate joined, whatever wraps them. "" for nil.
func ErrorText(err error) string {
	var b strings.Builder
	for e := err; e != nil; {
		b.WriteString(e.Error() + "\n")
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return b.String()
}
