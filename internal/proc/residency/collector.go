package residency

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Headroom is how much the heap may grow between two collections: Collector
// lets it grow by Headroom, but never by more than Go's default (as much as
// is live) nor by less than Floor percent of what is live.
//
// What pipebench holds live in a large run is mostly what lives as long as
// the run: the client, buffers and goroutines of each of many connections,
// the latency histograms. Go's default target (GOGC=100) lets the heap
// reach twice that before a cycle, so that resident memory doubles the
// state. With 1,000 Kafka producers (65-68 MB live; bench/kafka.sh,
// conns-p) anonymous memory was 142-145 MB at Go's default, 113-115 MB at
// a target of 50 and 102-105 MB at 25, at the same CPU: that run
// allocates little. With a consumer reading every record back (conns),
// 122-125 MB at 50 and 106-108 MB at 25 for 10% more CPU: the consumer
// allocates, and the floor doubles the cycles. A small live heap
// keeps Go's default: there the doubling costs a few megabytes, and more
// frequent cycles cost CPU in proportion to what the run allocates. gRPC
// calls allocate: in driver/grpc's BenchmarkUnaryRate at 20,000 calls/s on
// one core (8 runs of each, interleaved) a fixed GOGC=50 answered a median
// of 19.4 k calls per CPU-second, Go's default 20.9 k and Collector 20.8 k.
const Headroom = 16 << 20

// Floor is the lowest target Collector sets, in percent of the live heap:
// from 64 MiB live the heap grows by a quarter of it between cycles, so
// that a very large heap is not collected for every 16 MiB allocated.
const Floor = 25

// Collector keeps the collector's target at max(Floor, 100 x Headroom / live)
// percent, at most 100, re-read after every cycle, unless the GOGC
// environment variable sets a target (then it does nothing). It returns
// whether it took over.
func Collector() bool {
	if v, ok := os.LookupEnv("GOGC"); ok && v != "" {
		return false
	}
	if !started.CompareAndSwap(false, true) {
		return true
	}
	t := &tuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, percent: 100}
	t.arm()
	return true
}

// Percent is the target Collector would set for a live heap of live
// bytes.
func Percent(live uint64) int {
	if live == 0 {
		return 100
	}
	p := 100 * uint64(Headroom) / live
	return int(min(max(p, Floor), 100))
}

// started is whether a tuner runs: one is enough.
var started atomic.Bool

// tuner is only used on the finalizer goroutine once armed.
type tuner struct {
	sample  []metrics.Sample
	percent int // the target it set last
}

// arm allocates an object that only the collector can free and asks to
// be told when it does: once each cycle, tune then runs (on the
// finalizer goroutine) and arms the next.
func (t *tuner) arm() {
	s := &sentinel{t: t}
	runtime.SetFinalizer(s, func(s *sentinel) {
		s.t.tune()
		s.t.arm()
	})
}

type sentinel struct {
	t *tuner
	_ [16]byte // not a tiny allocation: it is freed on its own, the cycle it is unreachable
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := Percent(t.sample[0].Value.Uint64())
	if p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}
