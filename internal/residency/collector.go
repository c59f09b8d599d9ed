package residency

import (
	"os"
	"runtime/debug"
)

// CollectorPercent is the Go collector's target that Collector sets: the
// heap may grow to 1.5 times what is live between two cycles, where Go's
// default (100) lets it reach twice.
//
// What pipebench holds live is mostly state that lives as long as the run:
// a client, its buffers and its goroutines for each of many connections,
// the latency histograms. Under the default target that state costs twice
// its size in resident memory. With 1,000 Kafka producers (bench/kafka.sh,
// conns-p) the anonymous memory went from 142-145 MB to 114-116 MB, with
// the same live heap (65-69 MB) and no more CPU; the fast paths of the
// drivers allocate little per send, so the extra cycles are few.
const CollectorPercent = 50

// Collector sets the collector's target to CollectorPercent, unless the
// GOGC environment variable sets one (GOGC=100 restores Go's default). It
// returns the target in force.
func Collector() int {
	if v, ok := os.LookupEnv("GOGC"); ok && v != "" {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(CollectorPercent)
	return CollectorPercent
}
