package natse2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	natsdriver "github.com/pipebench/pipebench/driver/nats"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/runner"
)

// soakParams are the soak's length, connections and rate: 20 s, 500
// connections, 2,000 events/s in the normal test run;
// PIPEBENCH_SOAK=10m PIPEBENCH_SOAK_CONNS=2000 PIPEBENCH_SOAK_RATE=10000
// for the long one. PIPEBENCH_SOAK_HEAPPROFILE=FILE writes a heap profile
// at every sample (the last one stays).
func soakParams() (time.Duration, int, int) {
	dur, conns, rate := 20*time.Second, 500, 2000
	if m := os.Getenv("PIPEBENCH_SOAK_MODE"); m != "" {
		soakMode = m
	}
	if v, err := time.ParseDuration(os.Getenv("PIPEBENCH_SOAK")); err == nil && v > 0 {
		dur = v
	}
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_SOAK_CONNS")); err == nil && v > 0 {
		conns = v
	}
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_SOAK_RATE")); err == nil && v > 0 {
		rate = v
	}
	return dur, conns, rate
}

// soakMode is the driver's mode (PIPEBENCH_SOAK_MODE).
var soakMode = natsdriver.ModeJSAsync

// memSample is one point of the memory curve: the process's resident set,
// the Go heap found live by the last collection, the goroutine stacks.
type memSample struct {
	at         time.Duration
	rss, heap  float64 // MB
	stacks     float64 // MB
	goroutines int
}

// rssMB is this process's resident set (VmRSS) in MB; the nats-server is a
// child process, not counted.
func rssMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// TestSoak runs the whole pipeline in this process (runner, event
// generator, nats driver over held connections, the embedded nats-server
// as a child, a durable pull consumer, the nats observer) at a fixed rate
// for a minute, sampling memory as it goes, and checks that every event
// sent was delivered exactly once and that memory stayed flat: the live
// heap in the last third of the run is not above the one in the middle
// third by more than a quarter plus 8 MB (the first third is warm-up). The
// curve is logged (-v); with PIPEBENCH_SOAK and friends it is the long soak
// with thousands of connections.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s soak through nats-server")
	}
	dur, conns, rate := soakParams()
	reg := natsRegistry(t)
	batch := max(1, rate/1000)
	plan := scenariotest.Plan(t, reg, "soak.yaml", fmt.Sprintf(`
name: soak
sut: {type: jetstream, stream: {name: EVENTS, subjects: ["events.>"], max_bytes: 268435456, discard: old}}
target: {driver: nats, mode: %s, connections: %d, subject: "events.{conn}", connect_concurrency: 64}
workload: {generator: event, size: 128, seq_in: field, batch: %d}
sink: {type: nats, stream: EVENTS, durable: pipebench, workers: 2}
observers: [{type: nats}]
interval: 5s
drain: 20s
phases:
  - {name: soak, duration: %s, rate: %d/s}
`, soakMode, conns, batch, pipebench.Duration(dur), rate))

	every := min(max(dur/12, 2*time.Second), time.Minute)
	profile := os.Getenv("PIPEBENCH_SOAK_HEAPPROFILE")
	var (
		mu      sync.Mutex
		samples []memSample
	)
	start := time.Now()
	stop := testutil.Every(every, func(time.Time) {
		// No forced collection: the resident set is the one the run
		// really has; the live heap is the one the last collection
		// found.
		ms := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
		metrics.Read(ms)
		s := memSample{at: time.Since(start), rss: rssMB(), heap: float64(ms[0].Value.Uint64()) / (1 << 20),
			stacks: float64(ms[1].Value.Uint64()) / (1 << 20), goroutines: runtime.NumGoroutine()}
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
		t.Logf("soak %6s: RSS %6.1f MB, live heap %6.1f MB, stacks %5.1f MB, %d goroutines", s.at.Round(time.Second), s.rss, s.heap, s.stacks, s.goroutines)
		if profile != "" {
			if f, err := os.Create(profile); err == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), dur+3*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	stop()
	if err != nil {
		t.Fatal(err)
	}
	suitetest.SkipIfOverloaded(t, res)
	kpis := map[string]float64{}
	for _, k := range res.Total.KPIs {
		if len(k.Labels) == 0 {
			kpis[k.Name] = k.Value
		}
	}
	want := float64(plan.Phases[0].Items)
	t.Logf("soak of %s, %d connections, %d events/s: sent %.0f, delivered %.0f, lost %.0f, duplicates %.0f, e2e p99 %.1f ms",
		dur, conns, rate, kpis["sent"], kpis["delivered"], kpis["lost"], kpis["duplicates"], kpis["e2e_latency.p99"])
	if kpis["sent"] != want || kpis["accepted"] != want || kpis["delivered"] != want || kpis["lost"] != 0 || kpis["duplicates"] != 0 {
		t.Errorf("want %.0f sent, accepted and delivered, none lost or duplicated; got %v", want, kpis)
	}
	if got := kpis["connections_open.max"]; got != float64(conns) {
		t.Errorf("connections open %v, want %d", got, conns)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(samples) < 6 {
		t.Fatalf("only %d memory samples", len(samples))
	}
	third := dur / 3
	var mid, last float64
	var peakRSS float64
	for _, s := range samples {
		peakRSS = max(peakRSS, s.rss)
		switch {
		case s.at > dur:
		case s.at > 2*third:
			last = max(last, s.heap)
		case s.at > third:
			mid = max(mid, s.heap)
		}
	}
	t.Logf("live heap: middle third max %.1f MB, last third max %.1f MB; peak RSS %.1f MB", mid, last, peakRSS)
	if mid > 0 && last > mid*1.25+8 {
		t.Errorf("memory grew: the live heap went from at most %.1f MB in the middle third to %.1f MB in the last", mid, last)
	}
}
