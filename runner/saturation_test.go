package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// capacityServer is a system of known capacity: it serves K requests at
// once, each held H, so K/H a second; a request that finds every slot
// taken waits in the server for one. It counts what it received (its
// handler entered) and when each answer was finished: its own readings.
type capacityServer struct {
	slots    chan struct{}
	hold     time.Duration
	received atomic.Int64
	mu       sync.Mutex
	finished []time.Time
}

func newCapacityServer(t *testing.T, k int, hold time.Duration) (*capacityServer, string) {
	s := &capacityServer{slots: make(chan struct{}, k), hold: hold}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *capacityServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.received.Add(1)
	io.Copy(io.Discard, r.Body)
	s.slots <- struct{}{}
	time.Sleep(s.hold)
	<-s.slots
	s.mu.Lock()
	s.finished = append(s.finished, time.Now())
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// finishedIn counts the answers the server finished in [from, to].
func (s *capacityServer) finishedIn(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.finished {
		if !t.Before(from) && !t.After(to) {
			n++
		}
	}
	return n
}

// A server of known capacity (8 requests at once, each held 200 ms: 40 a
// second) driven at twice its capacity, with connections below and above
// its 8 slots and max_in_flight below and above them. The system's limit
// is a result, never pipebench's: the run is valid; pipebench's sent
// equals what the server received; every planned item not sent was held
// back by the system (target = sent + held back, exactly, nothing missed),
// for the reason that held it (no free connection, max_in_flight); the
// server finished, during the phase, what the narrowest of its slots, the
// connections and max_in_flight lets through (8, 4 or 4 a hold) within 2%
// (4% where max_in_flight is the narrowest: a slot it frees is used again
// at the next due send),
// and pipebench's own count of answers over the phase agrees with the
// server's; latency from the scheduled time is at least the hold.
func TestSaturationIsTheSystemsResult(t *testing.T) {
	if testing.Short() {
		t.Skip("four runs of 4 s at a server's capacity")
	}
	const k, hold = 8, 200 * time.Millisecond
	for _, tc := range []struct {
		name        string
		conns, maxI int
		reason      string
	}{
		{"connections below K", 4, 10000, "no free connection"},
		{"connections above K", 16, 10000, "no free connection"},
		{"max_in_flight below K", 16, 4, kpi.HeldMaxInFlight},
		{"max_in_flight above K", 16, 12, kpi.HeldMaxInFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, url := newCapacityServer(t, k, hold)
			rate := 2 * float64(k) / hold.Seconds()
			capacity := float64(min(k, tc.conns, tc.maxI)) / hold.Seconds()
			tolerance := 0.02
			if tc.maxI < min(k, tc.conns) {
				// The open model does not queue a send max_in_flight
				// holds back: a slot freed (once pipebench read the
				// answer) waits for the next due send, half a send
				// interval on average, before it is used again; the read
				// and that wait on a loaded machine add a few ms more
				// (5 ms measured), so 4%.
				capacity = float64(tc.maxI) / (hold.Seconds() + 1/(2*rate))
				tolerance = 0.04
			}
			reg := registry(t)
			plan := compile(t, reg, fmt.Sprintf(`
name: known-capacity
target: {driver: http, url: %q, connections: %d, timeout: 1s}
workload: {generator: event, size: 64}
interval: 250ms
defaults: {max_in_flight: %d}
phases:
  - {name: twice, duration: 4s, rate: %g/s}
`, url, tc.conns, tc.maxI, rate))
			res := runWithin(t, reg, plan, time.Minute)
			if res.Manifest.Status != pipebench.StatusCompleted {
				t.Fatalf("status %s, want completed (the system's limit is a result): %q", res.Manifest.Status, res.Manifest.Reasons)
			}
			ph := &res.Phases[0]
			planned := float64(plan.Phases[0].Items)
			sent, held, missed := get(t, ph, "sent"), get(t, ph, "held_back"), get(t, ph, "missed")
			if got := float64(srv.received.Load()); sent != got {
				t.Errorf("sent %v, but the server received %v", sent, got)
			}
			if missed != 0 || held != planned-sent {
				t.Errorf("held back %v, missed %v: want held back = target %v - sent %v = %v, nothing missed", held, missed, planned, sent, planned-sent)
			}
			if by := get(t, ph, "held_back", "reason", tc.reason); by != held {
				t.Errorf("held back for %s: %v of %v", tc.reason, by, held)
			}
			// Over the phase, after the first hold (the slots filling).
			from, to := ph.Started.Add(hold), ph.Ended
			span := to.Sub(from).Seconds()
			served := float64(srv.finishedIn(from, to))
			if got := served / span; got < (1-tolerance)*capacity || got > (1+tolerance)*capacity {
				t.Errorf("the server finished %.1f/s during the phase, want its capacity as seen through %d connections and max_in_flight %d: %.1f/s ± %.0f%%", got, tc.conns, tc.maxI, capacity, 100*tolerance)
			}
			// pipebench's own count of the answers over the phase, by
			// when they came (its accepted_rate series), against the
			// server's finished answers over the same observations.
			first, last, answered := answeredBetween(t, res, ph.Started, ph.Ended)
			if byServer := float64(srv.finishedIn(first, last)); answered < 0.98*byServer-2 || answered > 1.02*byServer+2 {
				t.Errorf("pipebench counted %.0f answers from %v to %v, the server finished %.0f", answered, first.Sub(ph.Started), last.Sub(ph.Started), byServer)
			}
			if p50 := get(t, ph, "latency.p50"); p50 < float64(hold/time.Millisecond) {
				t.Errorf("latency p50 %v ms, less than the server's hold of %v", p50, hold)
			}
			var saturated bool
			for _, d := range res.Detections {
				if d.Detector == kpi.DetectGeneratorLimit {
					t.Errorf("pipebench named as the limit: %s", d.Message)
				}
				saturated = saturated || d.Detector == kpi.DetectSaturated
			}
			if !saturated {
				t.Errorf("no %s detection: %+v", kpi.DetectSaturated, res.Detections)
			}
		})
	}
}

// answeredBetween sums pipebench's accepted_rate series over the
// observation intervals that lie within [from, to]: the answers it counted
// in that time, and the first and last observation bounding them.
func answeredBetween(t *testing.T, res *pipebench.Result, from, to time.Time) (first, last time.Time, n float64) {
	t.Helper()
	var obs []time.Time
	for _, s := range res.Series {
		if s.Name == "target_rate" {
			for _, p := range s.Points {
				obs = append(obs, p.T)
			}
		}
	}
	for _, s := range res.Series {
		if s.Name != "accepted_rate" {
			continue
		}
		for _, p := range s.Points {
			for i := 1; i < len(obs); i++ {
				if obs[i].Equal(p.T) && !obs[i-1].Before(from) && !p.T.After(to) {
					if first.IsZero() {
						first = obs[i-1]
					}
					last = p.T
					n += p.V * p.T.Sub(obs[i-1]).Seconds()
				}
			}
		}
	}
	if first.IsZero() {
		t.Fatalf("no accepted_rate observation within the phase")
	}
	return first, last, n
}

// The same kind of server, far from its capacity (1,000 requests at once,
// each held 1 ms, through 256 connections: 256,000 a second), driven by a
// pipebench starved of CPU: its process
// pinned to one core (GOMAXPROCS 1) that five spinning processes share,
// at a rate it cannot make on a sixth of a core. pipebench, not the
// system, set the pace: the run is invalid, its reasons and a
// generator_limit detection name pipebench, and its own readings show the
// starvation (its threads waited for a CPU).
func TestStarvedGeneratorIsInvalidAndNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("a run in a child process on a starved core")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil || exec.Command(taskset, "-c", "0", "true").Run() != nil {
		t.Skip("taskset cannot pin a process to CPU 0 here")
	}
	srv, url := newCapacityServer(t, 1000, time.Millisecond)
	// Spinners on CPU 0, each for 30 s at most.
	for range 5 {
		spin := exec.Command(taskset, "-c", "0", os.Args[0], "-test.run=^TestHelperSpin$")
		spin.Env = append(os.Environ(), "PIPEBENCH_HELPER_SPIN=30s")
		if err := spin.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { spin.Process.Kill(); spin.Wait() })
	}
	out := filepath.Join(t.TempDir(), "result.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	child := exec.CommandContext(ctx, taskset, "-c", "0", os.Args[0], "-test.run=^TestHelperStarvedRun$")
	child.Env = append(os.Environ(), "GOMAXPROCS=1", "PIPEBENCH_HELPER_STARVED="+url, "PIPEBENCH_HELPER_OUT="+out)
	if b, err := child.CombinedOutput(); err != nil {
		t.Fatalf("the starved run: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res pipebench.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Status != pipebench.StatusInvalid {
		t.Fatalf("status %s, want invalid: %q\n%+v", res.Manifest.Status, res.Manifest.Reasons, res.Phases[0].KPIs)
	}
	why := strings.Join(res.Manifest.Reasons, "; ")
	t.Logf("reasons: %s", why)
	if !strings.Contains(why, ": pipebench ") {
		t.Errorf("the reasons do not name pipebench: %s", why)
	}
	if msg, ok := kpi.GeneratorLimited(&res); !ok {
		t.Errorf("no %s detection: %+v", kpi.DetectGeneratorLimit, res.Detections)
	} else if !strings.Contains(msg, "waited") {
		t.Errorf("the detection does not show the starvation (threads waiting for a CPU): %s", msg)
	}
	ph := &res.Phases[0]
	if wait := get(t, ph, "generator_cpu_wait"); wait < 0.3 {
		t.Errorf("generator_cpu_wait %.2f: a process sharing its one core with five spinners waits most of the time", wait)
	}
	if used := get(t, ph, "generator_cpu_cores"); used > 0.5 {
		t.Errorf("generator_cpu_cores %.2f on a sixth of a core", used)
	}
	if sent := get(t, ph, "sent"); sent != float64(srv.received.Load()) {
		t.Errorf("sent %v, the server received %d", sent, srv.received.Load())
	}
}

// TestHelperStarvedRun is not a test: it is the starved run of
// TestStarvedGeneratorIsInvalidAndNamed, in a child process.
func TestHelperStarvedRun(t *testing.T) {
	url := os.Getenv("PIPEBENCH_HELPER_STARVED")
	if url == "" {
		t.Skip("helper process for TestStarvedGeneratorIsInvalidAndNamed")
	}
	reg := registry(t)
	plan := compile(t, reg, fmt.Sprintf(`
name: starved
target: {driver: http, url: %q, connections: 256, timeout: 2s}
workload: {generator: event, size: 64}
interval: 500ms
phases:
  - {name: load, duration: 2s, rate: 60000/s}
`, url))
	res := runWithin(t, reg, plan, 40*time.Second)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("PIPEBENCH_HELPER_OUT"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHelperSpin is not a test: it spins on its CPU for the time
// PIPEBENCH_HELPER_SPIN says, for TestStarvedGeneratorIsInvalidAndNamed.
func TestHelperSpin(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("PIPEBENCH_HELPER_SPIN"))
	if err != nil {
		t.Skip("helper process for TestStarvedGeneratorIsInvalidAndNamed")
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
