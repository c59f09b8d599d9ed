package runner_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/runner"
)

// asyncDriver is a pipebench.AsyncSender: it answers from goroutines of its
// own after the hand-over, and panics on every seventh send (before
// or after it answered), as a buggy driver might.
type asyncDriver struct {
	sends, panics atomic.Int64
	wg            sync.WaitGroup
	syncSends     atomic.Int64
}

func (d *asyncDriver) Start(context.Context) error { return nil }
func (d *asyncDriver) Shutdown(context.Context) error {
	d.wg.Wait()
	return nil
}

func (d *asyncDriver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	d.syncSends.Add(1)
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

func (d *asyncDriver) SendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	n := d.sends.Add(1)
	if len(b.Body) == 0 || b.Count != 1 {
		panic("the batch was not built before the hand-over")
	}
	switch n % 7 {
	case 0:
		d.panics.Add(1)
		panic("buggy driver")
	case 3: // answers, then panics: the outcome counts once
		done(time.Time{}, pipebench.Outcome{Class: pipebench.ClassOK, Written: time.Now()})
		d.panics.Add(1)
		panic("buggy driver after its answer")
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		started := time.Now()
		runtime.Gosched() // the answer comes later, from another goroutine
		done(started, pipebench.Outcome{Class: pipebench.ClassOK, Written: time.Now()})
	}()
}

// throughDriver is the registry and plan of a run that sends 64-byte
// events through d alone, in one phase (load, of duration at rate): the
// run's driver is d itself, for the test to inspect.
func throughDriver(t *testing.T, d pipebench.Driver, duration, rate string) (*pipebench.Registry, pipebench.Plan) {
	t.Helper()
	reg := registry(t, pipebench.NewSimpleFactory("fake", "test driver",
		func(pipebench.Env) (pipebench.Driver, error) { return d, nil }).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes}))
	return reg, compile(t, reg, fmt.Sprintf(`
name: through-fake-driver
target: {driver: fake}
workload: {generator: event, size: 64}
phases:
  - {name: load, duration: %s, rate: %s}
`, duration, rate))
}

// run700 runs 700 sends in a second through d, which counts those it got
// in sends, and checks it got every one.
func run700(t *testing.T, d pipebench.Driver, sends *atomic.Int64) *pipebench.PhaseResult {
	t.Helper()
	reg, plan := throughDriver(t, d, "1s", "700/s")
	res := runPlan(t, reg, plan)
	if got := sends.Load(); got != 700 {
		t.Fatalf("the driver got %d sends, want 700", got)
	}
	return &res.Phases[0]
}

// The open model hands each due send to an AsyncSender (never Send): every
// send is counted once, a panic in SendAsync is an error outcome (once, even
// when the driver had answered), and the phase waits for the last answer.
func TestPacedHandsSendsToAnAsyncSender(t *testing.T) {
	d := &asyncDriver{}
	p := run700(t, d, &d.sends)
	if n := d.syncSends.Load(); n != 0 {
		t.Errorf("%d sends went through Send, want all through SendAsync", n)
	}
	panicked := float64(d.sends.Load() / 7) // n%7 == 0: no answer before the panic
	for name, want := range map[string]float64{"sent": 700, "accepted": 700 - panicked, "dropped": 0} {
		if got := get(t, p, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := get(t, p, "errors", "class", "error"); got != panicked {
		t.Errorf("errors{class=error} = %v, want %v (the panics before an answer)", got, panicked)
	}
}

// heldDriver is a pipebench.Flusher: it holds the sends handed over
// until Flush, which answers them.
type heldDriver struct {
	asyncDriver
	mu      sync.Mutex
	held    []func(time.Time, pipebench.Outcome)
	flushes atomic.Int64
}

func (d *heldDriver) SendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	d.sends.Add(1)
	d.mu.Lock()
	d.held = append(d.held, done)
	d.mu.Unlock()
}

func (d *heldDriver) Flush() {
	d.flushes.Add(1)
	d.mu.Lock()
	held := d.held
	d.held = nil
	d.mu.Unlock()
	for _, done := range held {
		done(time.Time{}, pipebench.Outcome{Class: pipebench.ClassOK, Written: time.Now()})
	}
}

// The open model flushes a pipebench.Flusher after the sends due at each
// wake-up: a driver that writes only then has every send answered.
func TestPacedFlushesAFlusher(t *testing.T) {
	d := &heldDriver{}
	p := run700(t, d, &d.sends)
	for name, want := range map[string]float64{"sent": 700, "accepted": 700, "dropped": 0} {
		if got := get(t, p, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if f := d.flushes.Load(); f == 0 {
		t.Error("the driver was never flushed")
	}
}

// slowGen makes event batches one at a time, each taking at least a fixed
// time (it simulates a generator that cannot make batches as fast as they
// fall due: big OTLP batches on a starved core), and keeps the largest
// number of batches made and not yet released at once.
type slowGen struct {
	pipebench.Generator
	each        time.Duration
	mu          sync.Mutex
	out, maxOut atomic.Int64
	made        atomic.Int64
}

func (g *slowGen) Next(seq uint64, count int, at time.Time) pipebench.Batch {
	g.mu.Lock()
	defer g.mu.Unlock()
	deadline := time.Now().Add(g.each)
	for time.Now().Before(deadline) {
	}
	g.made.Add(1)
	n := g.out.Add(1)
	for {
		m := g.maxOut.Load()
		if n <= m || g.maxOut.CompareAndSwap(m, n) {
			break
		}
	}
	return g.Generator.Next(seq, count, at)
}

func (g *slowGen) Release(b *pipebench.Batch) {
	g.out.Add(-1)
	if r, ok := g.Generator.(pipebench.Releaser); ok {
		r.Release(b)
	}
}

// A driver that is not an AsyncSender (HTTP/2 here) makes each batch in
// the send's own goroutine. When batches cannot be made as fast as they fall
// due, the bytes of the sends still waiting to make theirs count against
// max_in_flight_bytes from when they fall due: the batches made and not
// yet answered never exceed the bound (by more than one batch), the sends
// beyond it are not made, and the run says why. (It used to count a batch
// only once made, so thousands of waiting goroutines each made theirs
// later, far beyond the bound: 3.7 GB for OTLP traces at 400,000 spans/s.)
// The sends not made are pipebench's own shortfall, not the system's: its
// own backlog of batches still to make took the bound, so the run is
// invalid and names pipebench.
func TestPacedBoundsBytesOfBatchesNotYetMade(t *testing.T) {
	g := &slowGen{each: 10 * time.Millisecond}
	reg := registry(t, pipebench.NewSimpleFactory("slow-event", "test generator",
		func(env pipebench.Env) (pipebench.Generator, error) {
			c := payload.EventFactory().NewConfig().(*payload.EventConfig)
			c.Size = 65536
			var err error
			g.Generator, err = payload.EventFactory().New(c, env)
			return g, err
		}).WithPayloads([]pipebench.Payload{pipebench.PayloadBytes}, nil))
	plan := heldUnderOneMiB(t, reg, "{driver: http, http2: true}", "{generator: slow-event}", "400/s")
	res := runWithin(t, reg, plan, 60*time.Second)
	ph := &res.Phases[0]
	// 1 MiB holds 16 batches of 64 KiB (a little more: an event's object
	// is its size plus its brackets).
	if m := g.maxOut.Load(); m > 17 {
		t.Errorf("%d batches of 64 KiB were made and not answered at once, beyond the 1 MiB bound", m)
	}
	if sent, made := get(t, ph, "sent"), float64(g.made.Load()); sent != made {
		t.Errorf("sent %v, but %v batches were made", sent, made)
	}
	if missed := get(t, ph, "missed"); missed == 0 || res.Manifest.Status != pipebench.StatusInvalid {
		t.Errorf("missed %v, status %s: want sends missed and the run invalid", missed, res.Manifest.Status)
	}
	if why := strings.Join(res.Manifest.Reasons, "; "); !strings.Contains(why, "pipebench could not keep up") {
		t.Errorf("reasons do not name pipebench: %s", why)
	}
	if planned, sent, held, missed := float64(plan.Phases[0].Items), get(t, ph, "sent"), get(t, ph, "held_back"), get(t, ph, "missed"); sent+held+missed != planned {
		t.Errorf("sent %v + held back %v + missed %v != planned %v", sent, held, missed, planned)
	}
	if d := get(t, ph, "delivered"); d != get(t, ph, "accepted") {
		t.Errorf("delivered %v != accepted %v", d, get(t, ph, "accepted"))
	}
}

// silentDriver answers every send but the tenth, which it keeps forever,
// as a client waiting on a target that went silent does.
type silentDriver struct{ sends atomic.Int64 }

func (d *silentDriver) Start(context.Context) error    { return nil }
func (d *silentDriver) Shutdown(context.Context) error { return nil }
func (d *silentDriver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	if d.sends.Add(1) == 10 {
		select {} // never returns, whatever ctx says
	}
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

// Sends a driver never returns do not hold the run: SendsGrace after the
// load ended the run goes on, those sends are abandoned, and the verdict
// (never passed) says the target stopped answering.
func TestSendsThatNeverReturnDoNotHoldTheRun(t *testing.T) {
	d := &silentDriver{}
	reg, plan := throughDriver(t, d, "500ms", "100/s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg, SendsGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run waited for the silent send until the test's own timeout")
	}
	if v, _ := res.Total.Get("abandoned"); v != 1 {
		t.Errorf("abandoned %v, want the one send that never returned", v)
	}
	// Failed, or invalid where the stuck send also kept a due send from
	// starting: never passed or completed, and the reason named.
	st := res.Manifest.Status
	if st != pipebench.StatusFailed && st != pipebench.StatusInvalid || !strings.Contains(strings.Join(res.Manifest.Reasons, "\n"), "the target stopped answering") {
		t.Errorf("status %s, reasons %q", st, res.Manifest.Reasons)
	}
}

// instantDriver answers every send at the hand-over: the cheapest driver
// there is, so that what limits a run through it is pipebench's pacing.
type instantDriver struct{ sends atomic.Int64 }

func (d *instantDriver) Start(context.Context) error    { return nil }
func (d *instantDriver) Shutdown(context.Context) error { return nil }
func (d *instantDriver) Send(context.Context, *pipebench.Batch) pipebench.Outcome {
	d.sends.Add(1)
	return pipebench.Outcome{Class: pipebench.ClassOK}
}
func (d *instantDriver) SendAsync(_ context.Context, _ *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	d.sends.Add(1)
	done(time.Time{}, pipebench.Outcome{Class: pipebench.ClassOK})
}

// A plan no machine this size can make (10 million sends a second): the pacer gives
// up a second after the phase's end instead of running on past it, the
// sends it did not make are missed (pipebench's own share), the run is
// invalid and names pipebench, and target = sent + held back + missed.
func TestPacerGivesUpOnAPlanItCannotMake(t *testing.T) {
	d := &instantDriver{}
	reg, plan := throughDriver(t, d, "1s", "10000000/s")
	start := time.Now()
	res := runWithin(t, reg, plan, time.Minute)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run took %v: the pacer ran on past its phase's end", took)
	}
	ph := &res.Phases[0]
	if d := ph.Ended.Sub(ph.Started); d > 2500*time.Millisecond {
		t.Errorf("the phase lasted %v, want its 1 s and the 1 s grace at most", d)
	}
	if res.Manifest.Status != pipebench.StatusInvalid || !strings.Contains(strings.Join(res.Manifest.Reasons, "; "), "pipebench could not keep up") {
		t.Errorf("status %s, reasons %q: want invalid, naming pipebench", res.Manifest.Status, res.Manifest.Reasons)
	}
	sent, held, missed := get(t, ph, "sent"), get(t, ph, "held_back"), get(t, ph, "missed")
	if planned := float64(plan.Phases[0].Items); sent+held+missed != planned || missed == 0 {
		t.Errorf("sent %v + held back %v + missed %v != planned %v", sent, held, missed, planned)
	}
	if got := float64(d.sends.Load()); got != sent {
		t.Errorf("the driver got %v sends, sent says %v", got, sent)
	}
}

// A signal during a phase the pacer cannot keep up with stops it at once:
// the pacer looks at its context between overdue sends, not only between
// wake-ups.
func TestPacerFarBehindHonoursAStop(t *testing.T) {
	reg, plan := throughDriver(t, &instantDriver{}, "20s", "10000000/s")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	res, _ := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stopped after %v, want within a second of the signal", took)
	}
	if res == nil || res.Manifest.Status != pipebench.StatusAborted {
		t.Fatalf("want an aborted Result, got %+v", res)
	}
}
