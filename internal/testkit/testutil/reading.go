package testutil

import (
	"context"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// Reading is a test's own reading of a pipeline taken at the runner's
// observations: an observer (Factory) that calls read with the run's
// environment (the system under test's instances, its endpoint) and keeps
// what it returned, with the time of the observation. The run's last
// observation, after the drain, asks every observer: Last is the test's
// reading of the pipeline at the moment the run's ledger reads it, taken
// by the test's own code. It reports no points.
type Reading[T any] struct {
	read func(ctx context.Context, env pipebench.Env) (T, error)
	mu   sync.Mutex
	last T
	at   time.Time
	err  error
	n    int
}

// NewReading returns a Reading that calls read.
func NewReading[T any](read func(ctx context.Context, env pipebench.Env) (T, error)) *Reading[T] {
	return &Reading[T]{read: read}
}

// Factory registers the reading as the observer type name.
func (r *Reading[T]) Factory(name string) pipebench.Factory[pipebench.Observer] {
	return pipebench.NewSimpleFactory(name, "a test's own reading of the pipeline", func(env pipebench.Env) (pipebench.Observer, error) {
		return readingObserver[T]{r: r, env: env}, nil
	})
}

type readingObserver[T any] struct {
	r   *Reading[T]
	env pipebench.Env
}

func (o readingObserver[T]) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	v, err := o.r.read(ctx, o.env)
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.r.n++
	if err != nil {
		o.r.err = err
		return nil, nil
	}
	o.r.last, o.r.at, o.r.err = v, at, nil
	return nil, nil
}

// Last returns the last reading, the time of the observation that took
// it, and the error of the last attempt (nil when it read).
func (r *Reading[T]) Last() (T, time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.at, r.err
}
