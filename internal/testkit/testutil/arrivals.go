package testutil

import (
	"sync"
	"testing"
	"time"
)

// Arrivals records what a sink under test matched, as the runner's
// recorder would (it has Arrive, Faulted and Unmatched, the methods of
// pipebench.Arrivals): how many times each sequence number arrived, and the
// items faulted and unmatched. The zero value is ready; safe for
// concurrent use.
type Arrivals struct {
	mu        sync.Mutex
	seqs      map[uint64]int
	faulted   int
	unmatched int
}

// Arrive counts one arrival of seq.
func (a *Arrivals) Arrive(seq uint64, _, _ time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seqs == nil {
		a.seqs = map[uint64]int{}
	}
	a.seqs[seq]++
}

// Faulted counts n items failed by an injected fault.
func (a *Arrivals) Faulted(n int) { a.mu.Lock(); a.faulted += n; a.mu.Unlock() }

// Unmatched counts n items that carried no sequence number.
func (a *Arrivals) Unmatched(n int) { a.mu.Lock(); a.unmatched += n; a.mu.Unlock() }

// Count returns how many different sequence numbers arrived and how many
// items were faulted, so far.
func (a *Arrivals) Count() (distinct, faulted int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seqs), a.faulted
}

// Distinct returns how many different sequence numbers arrived, so far.
func (a *Arrivals) Distinct() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seqs)
}

// UnmatchedItems returns how many items arrived without a sequence
// number, so far.
func (a *Arrivals) UnmatchedItems() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unmatched
}

// Times returns how many times seq arrived, so far.
func (a *Arrivals) Times(seq uint64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seqs[seq]
}

// WaitDistinct waits up to timeout for n different sequence numbers to
// have arrived, and fails the test with "the sink got X of n WHAT" when
// they have not.
func (a *Arrivals) WaitDistinct(tb testing.TB, timeout time.Duration, n int, what string) {
	tb.Helper()
	if !Poll(timeout, func() bool { return a.Distinct() == n }) {
		tb.Fatalf("the sink got %d of %d %s", a.Distinct(), n, what)
	}
}

// ExpectEachOnce fails the test at the first sequence number from first
// to last that did not arrive exactly once ("WHAT 7 arrived 2 times").
func (a *Arrivals) ExpectEachOnce(tb testing.TB, first, last uint64, what string) {
	tb.Helper()
	a.mu.Lock()
	for s := first; s <= last; s++ {
		if n := a.seqs[s]; n != 1 {
			a.mu.Unlock()
			tb.Fatalf("%s %d arrived %d times", what, s, n)
		}
	}
	a.mu.Unlock()
}
