//go:build !linux

package schedule

import "time"

// newPreciseWaiter is the Go timer elsewhere than on Linux: the runtime
// waits with a sub-millisecond timeout there (kevent on macOS and the BSDs,
// high-resolution timers on Windows), so no spin is needed.
func newPreciseWaiter(tick time.Duration) waiter { return &timerWaiter{tick: tick} }

func newSleepWaiter(tick time.Duration) waiter { return &timerWaiter{tick: tick} }
