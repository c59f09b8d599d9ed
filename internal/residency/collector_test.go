package residency

import (
	"runtime/debug"
	"testing"
)

func TestCollector(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	// GOGC set: the target in force is left as it is.
	t.Setenv("GOGC", "100")
	if got := Collector(); got != 100 {
		t.Fatalf("with GOGC set, Collector() = %d, want the target in force, 100", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set, the collector's target became %d, want 100", got)
	}

	// GOGC unset or empty: CollectorPercent.
	t.Setenv("GOGC", "")
	if got := Collector(); got != CollectorPercent {
		t.Fatalf("Collector() = %d, want %d", got, CollectorPercent)
	}
	if got := debug.SetGCPercent(100); got != CollectorPercent {
		t.Fatalf("the collector's target is %d, want %d", got, CollectorPercent)
	}
}
