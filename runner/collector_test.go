package runner_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	promobs "github.com/pipebench/pipebench/observer/prometheus"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/runner"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	"github.com/pipebench/pipebench/sut/otelcol"
	"github.com/pipebench/pipebench/sut/otelcol/collector/full"
)

// TestMain lets this test binary be the collector child.
func TestMain(m *testing.M) {
	full.MaybeRunChild()
	os.Exit(m.Run())
}

// collectorScenario is the run of a real collector between the otlp driver
// and sink, observed through its metrics, with phases (YAML, from
// "phases:" on); it skips the test in -short mode, as it starts a
// collector.
func collectorScenario(t *testing.T, phases string) *runner.Params {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	reg := registry(t, otlpgen.TracesFactory(), otlpdriver.Factory(), otlpsink.Factory(), otelcol.Factory(), promobs.Factory())
	plan := compile(t, reg, `
name: collector-accounting
sut: {type: otelcol, batch: {timeout: 100ms}}
target: {driver: otlp}
workload: {generator: otlp-traces, batch: 100}
sink: {type: otlp}
observers: [{type: prometheus, preset: otelcol}]
interval: 500ms
drain: 30s
`+phases)
	return &runner.Params{Plan: plan, Registry: reg}
}

// No faults: what pipebench sent, the collector accepted, the collector
// exported and the sink received are the same number, exactly.
func TestCollectorAccountsForEverySpan(t *testing.T) {
	p := collectorScenario(t, `
phases:
  - {name: steady, duration: 3s, rate: 2000/s}
`)
	res, err := runner.Run(context.Background(), *p)
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Total
	sent := get(t, tot, "sent")
	for _, k := range []struct {
		name   string
		labels []string
	}{
		{"delivered", nil},
		{"receiver_accepted.total", []string{"instance", "collector-0"}},
		{"exporter_sent.total", []string{"instance", "collector-0"}},
	} {
		if got := get(t, tot, k.name, k.labels...); got != sent {
			t.Errorf("%s = %v, want sent = %v", k.name, got, sent)
		}
	}
	if sent != 6000 || get(t, tot, "lost") != 0 {
		t.Errorf("sent %v lost %v", sent, get(t, tot, "lost"))
	}
}

// 70% of exports answered 503 for a phase: the exporter queue fills and
// drains; every span is accounted for: sent = delivered + lost, and any loss
// is what the collector itself reports dropping.
func TestCollectorBackpressureAccounting(t *testing.T) {
	p := collectorScenario(t, `
phases:
  - {name: steady, duration: 2s, rate: 2000/s}
  - {name: backpressure, duration: 4s, rate: 2000/s, faults: {error_ratio: 0.7, error_status: 503}}
  - {name: recovery, duration: 2s, rate: 1000/s}
`)
	res, err := runner.Run(context.Background(), *p)
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Total
	sent, delivered, lost := get(t, tot, "sent"), get(t, tot, "delivered"), get(t, tot, "lost")
	if sent != delivered+lost {
		t.Errorf("sent %v != delivered %v + lost %v", sent, delivered, lost)
	}
	failed, _ := tot.Get("exporter_failed.total", "instance", "collector-0")
	enq, _ := tot.Get("exporter_enqueue_failed.total", "instance", "collector-0")
	refused, _ := tot.Get("receiver_refused.total", "instance", "collector-0")
	if lost > failed+enq+refused {
		t.Errorf("lost %v is not explained by the collector's drops (send failed %v, enqueue failed %v, refused %v)", lost, failed, enq, refused)
	}
	if get(t, &res.Phases[1], "faulted") == 0 {
		t.Error("the sink faulted nothing in the backpressure phase")
	}
	if q := get(t, &res.Phases[1], "exporter_queue_size.max", "instance", "collector-0"); q <= 0 {
		t.Errorf("exporter queue max %v in backpressure, want it to fill", q)
	}
}

// A real collector killed during the run: the run fails, and the Result
// names the collector, its exit status and the tail of its log. (The test
// binary's only children are the collector replicas it starts.)
func TestCollectorKilledMidRunFails(t *testing.T) {
	p := collectorScenario(t, `
phases:
  - {name: before, duration: 1s, rate: 500/s}
  - {name: after, duration: 1s, rate: 500/s}
thresholds:
  - "sent >= 0"
`)
	p.Plan.Drain = pipebench.Duration(2 * time.Second)
	var once sync.Once
	p.Progress = func(pr runner.Progress) {
		if pr.PhaseIndex == 1 {
			once.Do(func() {
				for _, pid := range children(t) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
		}
	}
	res, err := runner.Run(context.Background(), *p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Status != pipebench.StatusFailed {
		t.Fatalf("status %s, want failed: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	why := strings.Join(res.Manifest.Reasons, "\n")
	if !strings.Contains(why, "the system under test failed: collector-0") || !strings.Contains(why, "signal: killed") || !strings.Contains(why, "log") {
		t.Errorf("the reasons do not name the dead collector:\n%s", why)
	}
}

// children returns the pids of this process's children, from /proc.
func children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, pid)
		}
	}
	if len(out) == 0 {
		t.Fatal("no child process to kill")
	}
	return out
}
