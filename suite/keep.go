package suite

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// Resetter is the optional ability of a system under test kept running
// across a suite's cases to forget what it reported to the previous case
// (its list of effects), while its state (a database's memory, a
// cluster's objects) carries over. The Keeper calls it before each case
// after the first.
type Resetter interface {
	Reset()
}

// Keeper keeps the systems under test of a suite with sut: keep running
// from the case that started them to the end of the suite: Wrap gives the
// runner a registry whose SUT factories hand out the running system when a
// later case asks for the same one (same type, same configuration), and
// whose Shutdown leaves it running; Close stops them all. A system that
// exports to a sink is never kept (each case has a sink of its own). Safe
// for concurrent use.
type Keeper struct {
	mu   sync.Mutex
	kept map[string]*keptSUT
	dir  string
}

// NewKeeper returns a keeper with no system yet.
func NewKeeper() *Keeper { return &Keeper{kept: map[string]*keptSUT{}} }

// Wrap returns a copy of reg whose SUT factories go through the keeper.
func (k *Keeper) Wrap(reg *pipebench.Registry) *pipebench.Registry {
	out := *reg
	suts := pipebench.NewCatalog[pipebench.SUT](reg.SUTs.Kind())
	for _, name := range reg.SUTs.Names() {
		f, _ := reg.SUTs.Lookup(name)
		inner := f.New
		f.New = func(cfg any, env pipebench.Env) (pipebench.SUT, error) { return k.get(name, inner, cfg, env) }
		_ = suts.Register(f)
	}
	out.SUTs = suts
	return &out
}

// Kept reports whether a system is running for a later case to reuse.
func (k *Keeper) Kept() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.kept) > 0
}

func (k *Keeper) get(name string, build func(any, pipebench.Env) (pipebench.SUT, error), cfg any, env pipebench.Env) (pipebench.SUT, error) {
	if env.Target != "" {
		return build(cfg, env) // it exports to this case's sink
	}
	spec, err := json.Marshal(cfg)
	if err != nil {
		return build(cfg, env)
	}
	key := name + " " + string(spec)
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.kept[key]; ok && s.started {
		if r, ok := s.SUT.(Resetter); ok {
			r.Reset()
		}
		return &keptSUT{SUT: s.SUT, started: true}, nil
	}
	// Its files must outlive the case's scratch folder.
	if k.dir == "" {
		if k.dir, err = os.MkdirTemp("", "pipebench-kept-"); err != nil {
			return nil, err
		}
	}
	env.Dir = k.dir
	sut, err := build(cfg, env)
	if err != nil {
		return nil, err
	}
	s := &keptSUT{SUT: sut}
	k.kept[key] = s
	return s, nil
}

// Close stops every kept system and removes their files.
func (k *Keeper) Close(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	for key, s := range k.kept {
		if s.started {
			errs = append(errs, s.SUT.Shutdown(ctx))
		}
		delete(k.kept, key)
	}
	if k.dir != "" {
		os.RemoveAll(k.dir)
		k.dir = ""
	}
	return errors.Join(errs...)
}

// keptSUT starts its system once and never stops it (the Keeper does).
type keptSUT struct {
	pipebench.SUT
	started bool
}

func (s *keptSUT) Start(ctx context.Context) error {
	if s.started {
		return nil
	}
	if err := s.SUT.Start(ctx); err != nil {
		return err
	}
	s.started = true
	return nil
}

func (s *keptSUT) Shutdown(context.Context) error { return nil }

// Ledger passes pipebench.LedgerReporter through.
func (s *keptSUT) Ledger(ctx context.Context, at time.Time, last bool) ([]pipebench.Point, error) {
	if lr, ok := s.SUT.(pipebench.LedgerReporter); ok {
		return lr.Ledger(ctx, at, last)
	}
	return nil, nil
}

// Endpoints passes MultiEndpoint through.
func (s *keptSUT) Endpoints() map[string]string {
	if m, ok := s.SUT.(pipebench.MultiEndpoint); ok {
		return m.Endpoints()
	}
	return nil
}
