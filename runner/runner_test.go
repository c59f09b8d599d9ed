package runner_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/runner"
	httpsink "github.com/pipebench/pipebench/sink/http"
	"github.com/pipebench/pipebench/sut/relay"
)

// registry wires the real HTTP plug-ins, and any more factories a test
// names (its own fakes, other protocols): the runner is tested against real
// servers on loopback, never mocks.
func registry(tb testing.TB, more ...any) *pipebench.Registry {
	tb.Helper()
	return scenariotest.Registry(tb, append([]any{payload.EventFactory(), payload.CloudEventsFactory(),
		httpdriver.Factory(), httpsink.Factory(), relay.Factory()}, more...)...)
}

// compile parses and compiles a scenario written in a test.
func compile(tb testing.TB, reg *pipebench.Registry, yaml string) pipebench.Plan {
	tb.Helper()
	return scenariotest.Plan(tb, reg, "test.yaml", yaml)
}

// runPlan runs plan to the end with reg; the runner's error fails the test.
func runPlan(t *testing.T, reg *pipebench.Registry, plan pipebench.Plan) *pipebench.Result {
	t.Helper()
	return runWithin(t, reg, plan, 0)
}

// runWithin is runPlan with the run stopped after within (0: no bound), for
// a test whose run must not hang.
func runWithin(t *testing.T, reg *pipebench.Registry, plan pipebench.Plan, within time.Duration) *pipebench.Result {
	t.Helper()
	ctx := context.Background()
	if within > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, within)
		defer cancel()
	}
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func get(t *testing.T, p *pipebench.PhaseResult, name string, labels ...string) float64 {
	t.Helper()
	v, ok := p.Get(name, labels...)
	if !ok {
		t.Fatalf("phase %s has no KPI %s%v; it has %v", p.Name, name, labels, p.KPIs)
	}
	return v
}

// 2,000 events at 1,000/s straight to the sink, which answers every 10th
// with 503: the Result must hold the exact counts.
func TestRunExactCountsThroughFaultySink(t *testing.T) {
	reg := registry(t)
	plan := compile(t, reg, `
name: exact-counts
version: "1.0"
target:
  driver: http
workload:
  generator: event
  size: 128
sink:
  type: http
phases:
  - name: load
    duration: 2s
    rate: 1000/s
    faults:
      error_ratio: 0.1
      error_status: 503
drain: 5s
thresholds:
  - "lost == 0"
`)
	// No system under test: the driver aims at the sink directly, so the
	// sink's answers are what the driver sees.
	res := runPlan(t, reg, plan)
	if res.Manifest.Status != pipebench.StatusPassed {
		t.Fatalf("status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	p := &res.Phases[0]
	for name, want := range map[string]float64{
		"sent": 2000, "accepted": 1800, "delivered": 1800, "faulted": 200, "lost": 0, "duplicates": 0, "dropped": 0,
	} {
		if got := get(t, p, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := get(t, p, "errors", "class", "refused"); got != 200 {
		t.Errorf("errors{class=refused} = %v, want 200", got)
	}
	if got := get(t, p, "sent_rate"); got < 950 || got > 1050 {
		t.Errorf("sent_rate = %v, want about 1000", got)
	}
	if p99 := get(t, p, "latency.p99"); p99 <= 0 || p99 > 1000 {
		t.Errorf("latency.p99 = %v ms, want a positive latency under a second", p99)
	}
	if len(res.Thresholds) != 1 || !res.Thresholds[0].Passed {
		t.Errorf("thresholds: %+v", res.Thresholds)
	}
	// The failures over time add up to the counts: each point is the
	// items of one interval over its length.
	for _, c := range []struct {
		name  string
		class string
		want  float64
	}{{"failed_rate", "refused", 200}, {"failed_rate", "timeout", 0}, {"faulted_rate", "", 200}} {
		if got := integrate(t, res, c.name, c.class); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s{class=%q} adds up to %v items, want %v", c.name, c.class, got, c.want)
		}
	}
	if !hasSeries(res, "e2e_p99_ms") {
		t.Error("no end-to-end latency over time")
	}
}

// integrate adds up a rate series of res over the observations' intervals
// (the target_rate series has a point at every observation).
func integrate(t *testing.T, res *pipebench.Result, name, class string) float64 {
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
		if s.Name != name || s.Labels["class"] != class {
			continue
		}
		sum := 0.0
		for _, p := range s.Points {
			i := sort.Search(len(obs), func(i int) bool { return !obs[i].Before(p.T) })
			if i == 0 || i >= len(obs) {
				t.Fatalf("%s: a point at %v is not an observation's", name, p.T)
			}
			sum += p.V * obs[i].Sub(obs[i-1]).Seconds()
		}
		return sum
	}
	t.Fatalf("no series %s{class=%q}", name, class)
	return 0
}

func hasSeries(res *pipebench.Result, name string) bool {
	for _, s := range res.Series {
		if s.Name == name && len(s.Points) > 0 {
			return true
		}
	}
	return false
}

// throughRelay is the plan of 64-byte events sent through the embedded
// relay (its queue and workers given) to the sink, observed every 250 ms,
// with the scenario's phases and drain in rest.
func throughRelay(t *testing.T, reg *pipebench.Registry, queue, workers int, rest string) pipebench.Plan {
	t.Helper()
	return compile(t, reg, fmt.Sprintf(`name: through-relay
target: {driver: http}
workload: {generator: event, size: 64}
sut: {type: relay, queue_size: %d, workers: %d}
sink: {type: http}
interval: 250ms`, queue, workers)+rest)
}

// Through the embedded relay: the sink fails 70% for a phase, the relay
// retries, and after recovery everything accepted is delivered.
func TestRunBackpressureThroughRelayLosesNothing(t *testing.T) {
	reg := registry(t)
	plan := throughRelay(t, reg, 100000, 8, `
phases:
  - {name: steady, duration: 1s, rate: 500/s}
  - name: backpressure
    duration: 1s
    rate: 500/s
    faults: {error_ratio: 0.7, error_status: 503}
  - {name: recovery, duration: 1s, rate: 500/s}
drain: 20s
`)
	res := runPlan(t, reg, plan)
	if res.Total == nil {
		t.Fatal("no total")
	}
	sent := get(t, res.Total, "sent")
	if sent != 1500 {
		t.Errorf("sent = %v, want 1500", sent)
	}
	if lost := get(t, res.Total, "lost"); lost != 0 {
		t.Errorf("lost = %v, want 0 (the relay retries until delivered)", lost)
	}
	if d := get(t, res.Total, "delivered"); d != get(t, res.Total, "accepted") {
		t.Errorf("delivered %v != accepted %v", d, get(t, res.Total, "accepted"))
	}
	if f := get(t, &res.Phases[1], "faulted"); f == 0 {
		t.Errorf("the backpressure phase faulted nothing")
	}
	checkColumnsAddUp(t, res)
}

// checkColumnsAddUp checks that every count of the sink's account adds up
// across the table: the phases' and the drain's equal the total's.
func checkColumnsAddUp(t *testing.T, res *pipebench.Result) {
	t.Helper()
	if res.Drain == nil {
		t.Fatal("no drain row")
	}
	for _, k := range res.Total.KPIs {
		switch k.Name {
		case "delivered", "lost", "duplicates", "faulted", "pipeline_delivered", "pipeline_lost", "pipeline_faulted", "pipeline_duplicates":
		default:
			continue
		}
		var sum float64
		for _, p := range append(append([]pipebench.PhaseResult(nil), res.Phases...), *res.Drain) {
			for _, pk := range p.KPIs {
				if pk.Key() == k.Key() {
					sum += pk.Value
				}
			}
		}
		if sum != k.Value {
			t.Errorf("%s: phases and drain add up to %v, the total says %v", k.Key(), sum, k.Value)
		}
	}
}

// A signal during the drain stops it at once: the run is aborted, and
// what had not arrived is abandoned in the pipeline, not lost. The sink
// holds every answer for 3 s behind the relay, so the drain has waiting
// to do.
func TestSignalDuringDrainAbandonsNotLoses(t *testing.T) {
	reg := registry(t)
	plan := throughRelay(t, reg, 10000, 2, `
phases:
  - name: slow
    duration: 1s
    rate: 200/s
    faults: {latency: {kind: fixed, fixed: 3s}}
drain: 60s
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg, Progress: func(p runner.Progress) {
		if p.Draining {
			once.Do(cancel)
		}
	}})
	if err == nil || res == nil {
		t.Fatalf("a run stopped during its drain: result %v, error %v", res != nil, err)
	}
	if res.Manifest.Status != pipebench.StatusAborted {
		t.Fatalf("status %s, want aborted: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	if took := res.Manifest.Ended.Sub(res.Manifest.Started); took > 15*time.Second {
		t.Errorf("the run took %s: the signal did not stop the 60 s drain", took)
	}
	if _, ok := res.Total.Get("lost"); ok {
		t.Errorf("a stopped run counts lost items: %v", res.Total.KPIs)
	}
	if v, _ := res.Total.Get("abandoned_queued"); v <= 0 {
		t.Errorf("abandoned_queued = %v, want the items still in the relay", v)
	}
	if _, ok := res.Total.Get("drain_time"); ok {
		t.Errorf("an undrained backlog has a drain time")
	}
}

// A cancelled context stops the load and still returns the partial Result.
func TestRunAbortKeepsPartialResult(t *testing.T) {
	reg := registry(t)
	plan := compile(t, reg, `
name: abort
target: {driver: http}
sink: {type: http}
phases:
  - {name: long, duration: 60s, rate: 200/s}
  - {name: never, duration: 10s, rate: 200/s}
drain: 2s
`)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg, AbortGrace: time.Second})
	if err == nil {
		t.Fatal("an aborted run must return an error")
	}
	if res == nil {
		t.Fatal("an aborted run must return its partial result")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("abort took %v", took)
	}
	if res.Manifest.Status != pipebench.StatusAborted {
		t.Fatalf("status = %s, want aborted", res.Manifest.Status)
	}
	if len(res.Phases) != 1 {
		t.Fatalf("phases in result = %d, want 1", len(res.Phases))
	}
	if sent := get(t, &res.Phases[0], "sent"); sent < 100 {
		t.Errorf("sent = %v, want the ~300 sent before the abort", sent)
	}
	// The total's target is what was planned for the time the load ran,
	// not the whole 60 s phase's items over 1.5 s.
	if tr := get(t, res.Total, "target_rate"); tr < 190 || tr > 210 {
		t.Errorf("total target_rate = %v, want 200", tr)
	}
	// The drain is said not to have drained exactly when items it
	// waited for never came (abandoned); else it has its drain time.
	_, waited := res.Total.Get("drain_waited")
	_, timed := res.Total.Get("drain_time")
	abandoned, _ := res.Total.Get("abandoned_queued")
	if waited != (abandoned > 0) || timed == waited {
		t.Errorf("drain_waited %v, drain_time %v, with %v abandoned: %v", waited, timed, abandoned, res.Total.KPIs)
	}
	t.Logf("stopped run: drain_time %v, drain_waited %v, %v abandoned", timed, waited, abandoned)
	if timed {
		// Drained: the sink counted every item the target accepted, and
		// the drain lasted no longer than the run went on after its load.
		if d, a := get(t, res.Total, "delivered"), get(t, res.Total, "accepted"); d != a {
			t.Errorf("a drain time with %v delivered of %v accepted", d, a)
		}
		if dt, after := get(t, res.Total, "drain_time"), res.Manifest.Ended.Sub(res.Phases[0].Ended).Seconds(); dt > after {
			t.Errorf("drain_time %.3f s, but the run ended %.3f s after its load", dt, after)
		}
	}
}

// A closed-model phase sends exactly its count with its worker pool, every
// item arrives, and the table has no target rate for it (there is none).
func TestRunBlastSendsItsCount(t *testing.T) {
	reg := registry(t)
	plan := compile(t, reg, `
name: blast
target: {driver: http}
workload: {generator: event, size: 64}
sink: {type: http}
drain: 5s
phases:
  - name: blast
    blast: {count: 300, workers: 10}
    duration: 30s
`)
	res := runPlan(t, reg, plan)
	// No thresholds: a valid run without a verdict, never "passed".
	if res.Manifest.Status != pipebench.StatusCompleted {
		t.Fatalf("status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	// What a blast means: the time until its last item arrived, and the
	// rate over that time, not over the moment it took to send.
	ph := &res.Phases[0]
	ttc := get(t, ph, "time_to_complete")
	if ttc <= 0 || ttc > 30 {
		t.Errorf("time_to_complete = %v s", ttc)
	}
	if cr := get(t, ph, "completion_rate"); cr < 300/ttc*0.99 || cr > 300/ttc*1.01 {
		t.Errorf("completion_rate = %v, want 300 / %v s", cr, ttc)
	}
	if dr := get(t, ph, "delivered_rate"); dr != get(t, ph, "completion_rate") {
		t.Errorf("delivered_rate %v differs from completion_rate", dr)
	}
	for _, p := range []*pipebench.PhaseResult{&res.Phases[0], res.Total} {
		for name, want := range map[string]float64{"sent": 300, "accepted": 300, "delivered": 300, "lost": 0, "dropped": 0} {
			if got := get(t, p, name); got != want {
				t.Errorf("%s: %s = %v, want %v", p.Name, name, got, want)
			}
		}
		if v, ok := p.Get("target_rate"); ok {
			t.Errorf("%s: a closed-model phase has target_rate %v", p.Name, v)
		}
	}
}

// heldUnderOneMiB is the plan of one 2-second phase, hold, at rate, of
// the scenario's target and workload against the sink holding every
// answer 300 ms, with the requests' bytes in flight bounded to 1 MiB.
func heldUnderOneMiB(t *testing.T, reg *pipebench.Registry, target, workload, rate string) pipebench.Plan {
	t.Helper()
	return compile(t, reg, fmt.Sprintf(`
name: held-under-1mib
target: %s
workload: %s
sink: {type: http}
drain: 5s
defaults: {max_in_flight_bytes: 1MiB}
phases:
  - name: hold
    duration: 2s
    rate: %s
    faults: {latency: 300ms}
`, target, workload, rate))
}

// Requests of 64 KiB against a sink that holds every answer 300 ms, at
// 200/s: 60 sends (3.75 MiB) would be in flight, more than the 1 MiB bound.
// Sends due while the bound is reached are held back by the system under
// test (its answers outstanding took the bound) and counted apart from
// what was sent; the run stays valid, and says which bound held them.
func TestRunBoundsBytesInFlight(t *testing.T) {
	reg := registry(t)
	plan := heldUnderOneMiB(t, reg, "{driver: http, connections: 64}", "{generator: event, size: 65536}", "200/s")
	if got := plan.Phases[0].MaxInFlightBytes; got != 1<<20 {
		t.Fatalf("plan max_in_flight_bytes = %d, want 1 MiB", got)
	}
	res := runWithin(t, reg, plan, 30*time.Second)
	ph := &res.Phases[0]
	sent, dropped := get(t, ph, "sent"), get(t, ph, "held_back", "reason", kpi.HeldMaxInFlightBytes)
	if sent+dropped != 400 || get(t, ph, "held_back") != dropped || get(t, ph, "dropped") != dropped {
		t.Errorf("sent %v + held back for max_in_flight_bytes %v = %v, want the 400 planned", sent, dropped, sent+dropped)
	}
	// At most ~16 requests of 64 KiB fit in 1 MiB; 300 ms each gives at
	// most ~55/s of the 200/s (some more while the first ones are made).
	if dropped < 150 || sent > 250 {
		t.Errorf("sent %v, dropped %v: the 1 MiB bound did not hold", sent, dropped)
	}
	if d := get(t, ph, "delivered"); d != get(t, ph, "accepted") {
		t.Errorf("delivered %v != accepted %v", d, get(t, ph, "accepted"))
	}
	if res.Manifest.Status != pipebench.StatusCompleted {
		t.Errorf("status = %s, want completed (the system's limit is a result): %q", res.Manifest.Status, res.Manifest.Reasons)
	}
	if !hasLine(res.Summary, "held back by the system under test and never sent (max_in_flight_bytes of requests outstanding") {
		t.Errorf("the summary does not name the bytes bound: %q", res.Summary)
	}
	var saturated bool
	for _, d := range res.Detections {
		saturated = saturated || d.Detector == kpi.DetectSaturated && strings.Contains(d.Message, "system under test saturated at")
	}
	if !saturated {
		t.Errorf("no saturated detection: %+v", res.Detections)
	}
}
