package runner_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
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

// The open model hands each due send to an AsyncSender (never Send): every
// send is counted once, a panic in SendAsync is an error outcome (once, even
// when the driver had answered), and the phase waits for the last answer.
func TestPacedHandsSendsToAnAsyncSender(t *testing.T) {
	d := &asyncDriver{}
	reg := registry(t)
	if err := reg.Drivers.Register(pipebench.NewSimpleFactory("async-fake", "test driver",
		func(pipebench.Env) (pipebench.Driver, error) { return d, nil }).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes})); err != nil {
		t.Fatal(err)
	}
	_, plan := parse(t, reg, `
name: async
target: {driver: async-fake}
workload: {generator: event, size: 64}
phases:
  - {name: load, duration: 1s, rate: 700/s}
`)
	res, err := runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	p := &res.Phases[0]
	if n := d.syncSends.Load(); n != 0 {
		t.Errorf("%d sends went through Send, want all through SendAsync", n)
	}
	if got := d.sends.Load(); got != 700 {
		t.Fatalf("the driver got %d sends, want 700", got)
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
