//go:build !linux

package schedule

import (
	"context"
	"runtime"
	"time"
)

// timerLead is how long before the due time the Go timer wakes the
// waiter, which then yields until the due time.
const timerLead = 2 * time.Millisecond

// preciseWaiter sleeps on a Go timer until timerLead before the due time
// and yields the rest.
type preciseWaiter struct{ tw timerWaiter }

func newPreciseWaiter() waiter { return &preciseWaiter{} }

func (w *preciseWaiter) begin() { w.tw.begin() }
func (w *preciseWaiter) end()   { w.tw.end() }

func (w *preciseWaiter) wait(ctx context.Context, t time.Time) bool {
	if time.Until(t) > timerLead && !w.tw.wait(ctx, t.Add(-timerLead)) {
		return false
	}
	for time.Now().Before(t) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return ctx.Err() == nil
}
