package runner_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/runner"
)

// closingObserver counts its observations and its closes.
type closingObserver struct {
	observed, closed atomic.Int32
	afterClose       atomic.Bool
}

func (o *closingObserver) Observe(context.Context, time.Time) ([]pipebench.Point, error) {
	if o.closed.Load() > 0 {
		o.afterClose.Store(true)
	}
	o.observed.Add(1)
	return nil, nil
}

func (o *closingObserver) Close() error { o.closed.Add(1); return nil }

// The runner closes an observer that can be closed exactly once, after
// its last observation; and when a later observer fails to build, the
// ones built already are closed too.
func TestRunnerClosesObservers(t *testing.T) {
	var made []*closingObserver
	reg := registry(t,
		pipebench.NewSimpleFactory("closing", "test observer", func(pipebench.Env) (pipebench.Observer, error) {
			o := &closingObserver{}
			made = append(made, o)
			return o, nil
		}),
		pipebench.NewSimpleFactory("broken", "test observer that cannot start", func(pipebench.Env) (pipebench.Observer, error) {
			return nil, errors.New("cannot start")
		}))
	plan := compile(t, reg, `
name: close
target: {driver: http}
sink: {type: http}
interval: 100ms
observers:
  - {type: closing}
phases:
  - {name: a, duration: 300ms, rate: 50/s}
`)
	if _, err := runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 {
		t.Fatalf("%d observers built", len(made))
	}
	o := made[0]
	if o.closed.Load() != 1 || o.observed.Load() < 2 || o.afterClose.Load() {
		t.Errorf("closed %d times after %d observations (observed after the close: %v); want once, after the last", o.closed.Load(), o.observed.Load(), o.afterClose.Load())
	}

	plan = compile(t, reg, `
name: close-broken
target: {driver: http}
sink: {type: http}
observers:
  - {type: closing}
  - {type: broken}
phases:
  - {name: a, duration: 300ms, rate: 50/s}
`)
	if _, err := runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg}); err == nil {
		t.Fatal("a run whose observer cannot start ran")
	}
	if len(made) != 2 || made[1].closed.Load() != 1 {
		t.Errorf("the observer built before the broken one was not closed")
	}
}
