package residency

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{10 << 20, 100},        // a small heap keeps Go's default
		{Headroom, 100},        // growing by all of it is growing by the headroom
		{2 * Headroom, 50},     // half of it is the headroom
		{Headroom * 4 / 3, 75}, // growing by the headroom
		{4 * Headroom, Floor},  // a quarter of it is the headroom
		{1 << 30, Floor},       // never less than the floor
	} {
		if got := Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// With GOGC set Collector leaves the target alone; without, once the
// live heap is large the collector runs at its floor and, once it is small
// again, back at Go's default.
func TestCollector(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	current := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }

	t.Setenv("GOGC", "100")
	if Collector() {
		t.Fatal("Collector took over with GOGC set")
	}

	t.Setenv("GOGC", "")
	if !Collector() {
		t.Fatal("Collector did not take over without GOGC")
	}
	// About 6 x Headroom live: the target goes to the floor.
	held := make([][]byte, 0, 96)
	for range 96 {
		held = append(held, make([]byte, 1<<20))
	}
	testutil.Eventually(t, 10*time.Second, func() bool { runtime.GC(); return current() == Floor }, "the target is %d with %d MiB live", Floor, len(held))
	runtime.KeepAlive(held)
	held = nil
	testutil.Eventually(t, 10*time.Second, func() bool { runtime.GC(); return current() == 100 }, "the target is back at 100 with the heap freed")
}
