package grpcdriver_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/runner"
)

// A real gRPC server (grpc-go, in a process of its own) stopped for 2 s in
// the middle of a fixed-rate run over TCP: the shape of the 20,000
// calls/s case, at a tenth of the rate for a shared machine. While it is
// stopped the calls in flight reach max_in_flight (1,000) and the sends
// due meanwhile are held back, the system's share: counted, with the
// reason, beside what left pipebench, and named in a saturated detection;
// nothing is missed and the run is valid. Within 2 s after the server
// runs again the rate is back at the plan, by the server's own count of
// what arrived and by pipebench's; what pipebench sent is what the server
// received. The generator's goroutines and heap stay bounded all along
// (the calls in flight hold no goroutine).
func TestPausedServerRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("a 9 s run against a server process stopped for 2 s")
	}
	const (
		rate     = 2000
		dur      = 9 * time.Second
		pauseAt  = 3 * time.Second
		pauseFor = 2 * time.Second
		maxIn    = 1000
	)
	dir := t.TempDir()
	arrivals := filepath.Join(dir, "arrivals")
	addr, proc := startServerProcess(t, filepath.Join(dir, "s.sock"), arrivals)
	reg := scenariotest.Registry(t, payload.MessageFactory(), grpcdriver.Factory())
	plan := scenariotest.Plan(t, reg, "paused.yaml", fmt.Sprintf(`
name: grpc-paused-server
target: {driver: grpc, endpoint: %q, method: pipebench.healthevents.v1.HealthEventService/Report, proto_files: [../../examples/healthevents.proto], connections: 4}
workload:
  generator: grpc-message
  message: {version: 1, events: [{node_name: "node-{{seq %% 100}}", sequence: "{{seq}}", severity: SEVERITY_FATAL}]}
interval: 250ms
phases:
  - {name: hold, duration: %s, rate: %d/s, max_in_flight: %d}
`, addr, dur, rate, maxIn))

	// The generator's goroutines and heap, sampled all along.
	var maxG, maxHeap atomic.Int64
	sample := testutil.Every(20*time.Millisecond, func(time.Time) {
		if g := int64(runtime.NumGoroutine()); g > maxG.Load() {
			maxG.Store(g)
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if h := int64(m.HeapAlloc); h > maxHeap.Load() {
			maxHeap.Store(h)
		}
	})
	// The pause, once the phase ran pauseAt: the server's process stopped
	// (every thread of it), then run again pauseFor later.
	var mu sync.Mutex
	var stoppedAt, resumedAt time.Time
	var once sync.Once
	progress := func(p runner.Progress) {
		if p.PhaseElapsed < pauseAt {
			return
		}
		once.Do(func() {
			if err := proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Errorf("stopping the server: %v", err)
				return
			}
			testutil.Poll(5*time.Second, func() bool { return stopped(proc.cmd.Process.Pid) })
			mu.Lock()
			stoppedAt = time.Now()
			mu.Unlock()
			time.AfterFunc(pauseFor, func() {
				proc.cmd.Process.Signal(syscall.SIGCONT)
				mu.Lock()
				resumedAt = time.Now()
				mu.Unlock()
			})
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg, Progress: progress})
	sample()
	if err != nil {
		t.Fatal(err)
	}
	proc.stop()
	mu.Lock()
	paused, resumed := stoppedAt, resumedAt
	mu.Unlock()
	if paused.IsZero() || resumed.IsZero() {
		t.Fatalf("the server was not stopped and run again (stopped %v, resumed %v)", paused, resumed)
	}

	if res.Manifest.Status != pipebench.StatusCompleted {
		t.Fatalf("status %s, want completed (the server's pause is a result about it): %q", res.Manifest.Status, res.Manifest.Reasons)
	}
	ph := &res.Phases[0]
	planned := float64(plan.Phases[0].Items)
	sent, held, missed := kpiValue(t, ph, "sent"), kpiValue(t, ph, "held_back"), kpiValue(t, ph, "missed")
	byReason := kpiValue(t, ph, "held_back", "reason", kpi.HeldMaxInFlight)
	t.Logf("planned %.0f, sent %.0f, held back %.0f (max_in_flight %.0f), missed %.0f; goroutines at most %d, heap at most %.1f MB",
		planned, sent, held, byReason, missed, maxG.Load(), float64(maxHeap.Load())/1e6)
	// Whose limit: the system's, all of it, for the reason that held it.
	if missed != 0 || held != planned-sent {
		t.Errorf("held back %v, missed %v: want held back = planned %v - sent %v = %v, nothing missed", held, missed, planned, sent, planned-sent)
	}
	// The sends due while the server was stopped, less the max_in_flight
	// it held before it stopped answering: about pauseFor*rate - maxIn.
	if want := pauseFor.Seconds()*rate - maxIn; byReason < 0.7*want || byReason != held {
		t.Errorf("held back for max_in_flight %v of %v held back, want about %v", byReason, held, want)
	}
	var detected bool
	for _, d := range res.Detections {
		switch d.Detector {
		case kpi.DetectGeneratorLimit:
			t.Errorf("pipebench named as the limit: %s", d.Message)
		case kpi.DetectSaturated:
			detected = true
			if !strings.Contains(d.Message, pipebench.FormatCount(held)) || !strings.Contains(d.Message, "max_in_flight") {
				t.Errorf("the saturated detection does not say how many were held back and why: %s", d.Message)
			}
		}
	}
	if !detected {
		t.Errorf("no %s detection: %+v", kpi.DetectSaturated, res.Detections)
	}
	// What left pipebench is what the server received.
	b, err := os.ReadFile(arrivals)
	if err != nil {
		t.Fatal(err)
	}
	var at []time.Time
	for ; len(b) >= 8; b = b[8:] {
		at = append(at, time.Unix(0, int64(binary.LittleEndian.Uint64(b))))
	}
	if float64(len(at)) != sent {
		t.Errorf("sent %v, the server received %d", sent, len(at))
	}
	// Back at the plan within 2 s after the server ran again: by the
	// server's count of arrivals from then to the phase's end (and no half
	// second of it far below: a loaded machine moves a half second by a
	// tenth), and by pipebench's sent rate over the same time.
	from, to := resumed.Add(2*time.Second), ph.Ended
	if to.Sub(from) < time.Second {
		t.Fatalf("the phase ended %v after the server ran again: no time left to see the rate", ph.Ended.Sub(resumed))
	}
	count := func(from, to time.Time) float64 {
		n := 0
		for _, a := range at {
			if !a.Before(from) && a.Before(to) {
				n++
			}
		}
		return float64(n) / to.Sub(from).Seconds()
	}
	if got := count(from, to); got < 0.95*rate {
		t.Errorf("the server received %.0f/s from 2 s after it ran again to the phase's end, want the plan's %d/s", got, rate)
	}
	for s := from; s.Add(500 * time.Millisecond).Before(to); s = s.Add(500 * time.Millisecond) {
		if got := count(s, s.Add(500*time.Millisecond)); got < 0.75*rate {
			t.Errorf("the server received %.0f/s from %v after it ran again, want the plan's %d/s", got, s.Sub(resumed), rate)
		}
	}
	if got := seriesMean(res, "sent_rate", from, to); got < 0.95*rate {
		t.Errorf("pipebench sent %.0f/s from 2 s after the server ran again, want the plan's %d/s", got, rate)
	}
	// Bounded: no goroutine per call in flight (1,000 at the pause), a
	// heap of a few MB.
	if g := maxG.Load(); g > 60 {
		t.Errorf("%d goroutines at most: the calls in flight hold goroutines", g)
	}
	if h := maxHeap.Load(); h > 64<<20 {
		t.Errorf("the heap reached %.1f MB", float64(h)/1e6)
	}
}

// kpiValue is a phase's KPI, with a label when one is given; a missing one
// fails the test.
func kpiValue(t *testing.T, ph *pipebench.PhaseResult, name string, label ...string) float64 {
	t.Helper()
	for _, k := range ph.All(name) {
		if len(label) == 2 {
			if k.Labels[label[0]] != label[1] {
				continue
			}
		} else if len(k.Labels) != 0 {
			continue
		}
		return k.Value
	}
	if len(label) == 2 {
		return 0 // nothing held back for that reason
	}
	t.Fatalf("no KPI %s", name)
	return 0
}

// seriesMean is the mean of a run-wide series' points within [from, to].
func seriesMean(res *pipebench.Result, name string, from, to time.Time) float64 {
	sum, n := 0.0, 0
	for _, s := range res.Series {
		if s.Name != name || len(s.Labels) != 0 {
			continue
		}
		for _, p := range s.Points {
			if !p.T.Before(from) && !p.T.After(to) {
				sum += p.V
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// stopped reports whether every thread of process pid is stopped (a
// SIGSTOP takes effect asynchronously).
func stopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}
