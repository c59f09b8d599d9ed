package pod

import (
	"context"

	"github.com/pipebench/pipebench"
)

// rewired returns a copy of reg whose sink factories make what sink
// returns, and whose system under test factories what sut returns, where
// given: a shard's runner then sends to the in-cluster sink and matches
// what it received (a FeedSink), or to the in-cluster system under test.
// The scenario still decodes and validates as written (each factory keeps
// its name and configuration), so every shard's plan, and the merged
// Result's, name the scenario's own components.
func rewired(reg *pipebench.Registry, sink func() pipebench.Sink, sut func() pipebench.SUT) (*pipebench.Registry, error) {
	out := pipebench.NewRegistry()
	err := copyCatalog(out.Generators, reg.Generators, nil)
	if err == nil {
		err = copyCatalog(out.Drivers, reg.Drivers, nil)
	}
	if err == nil {
		err = copyCatalog(out.Observers, reg.Observers, nil)
	}
	if err == nil {
		err = copyCatalog(out.Reporters, reg.Reporters, nil)
	}
	if err == nil {
		err = copyCatalog(out.SUTs, reg.SUTs, replaceNew(sut))
	}
	if err == nil {
		err = copyCatalog(out.Sinks, reg.Sinks, replaceNew(sink))
	}
	return out, err
}

// replaceNew returns a factory rewriter whose factories build what make
// returns; nil when make is nil (no rewriting).
func replaceNew[T any](make func() T) func(pipebench.Factory[T]) pipebench.Factory[T] {
	if make == nil {
		return nil
	}
	return func(f pipebench.Factory[T]) pipebench.Factory[T] {
		f.New = func(any, pipebench.Env) (T, error) { return make(), nil }
		return f
	}
}

func copyCatalog[T any](dst, src *pipebench.Catalog[T], wrap func(pipebench.Factory[T]) pipebench.Factory[T]) error {
	for _, name := range src.Names() {
		f, _ := src.Lookup(name)
		if wrap != nil {
			f = wrap(f)
		}
		if err := dst.Register(f); err != nil {
			return err
		}
	}
	return nil
}

// remoteSUT stands, in a shard, for the system under test running in its
// own pod: it starts nothing and says where that one receives and where
// its metrics are (its instances have no PID here).
type remoteSUT struct {
	target    string
	targets   map[string]string
	instances []pipebench.Instance
}

var (
	_ pipebench.SUT           = (*remoteSUT)(nil)
	_ pipebench.MultiEndpoint = (*remoteSUT)(nil)
)

func (s *remoteSUT) Start(context.Context) error        { return nil }
func (s *remoteSUT) Endpoint() string                   { return s.target }
func (s *remoteSUT) Endpoints() map[string]string       { return s.targets }
func (s *remoteSUT) Instances() []pipebench.Instance    { return s.instances }
func (s *remoteSUT) Shutdown(ctx context.Context) error { return nil }
