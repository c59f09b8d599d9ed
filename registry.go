package pipebench

import (
	"fmt"
	"sort"
)

// Factory makes one kind of plug-in, named Name in scenario files.
type Factory[T any] struct {
	// Name is the plug-in's name in scenario files ("http", "otlp").
	Name string
	// Doc is one line shown in `pipebench schema` and error hints.
	Doc string
	// NewConfig returns a pointer to a configuration struct holding the
	// defaults. The scenario decoder decodes the plug-in's YAML section
	// into it strictly; if it has a `Validate() error` method, that runs
	// next. NewConfig may be nil when the plug-in takes no configuration.
	NewConfig func() any
	// New builds the plug-in from a configuration NewConfig returned and
	// the decoder filled in.
	New func(cfg any, env Env) (T, error)
}

// Catalog holds the factories of one kind of plug-in. It is filled once at
// start-up and read-only after; it is not safe for concurrent Register.
type Catalog[T any] struct {
	kind   string
	byName map[string]Factory[T]
}

// NewCatalog returns an empty catalog of plug-ins of the given kind
// ("driver", "sink").
func NewCatalog[T any](kind string) *Catalog[T] {
	return &Catalog[T]{kind: kind, byName: map[string]Factory[T]{}}
}

// Kind returns the catalog's kind of plug-in.
func (c *Catalog[T]) Kind() string { return c.kind }

// Register adds f. A second factory with the same name is an error.
func (c *Catalog[T]) Register(f Factory[T]) error {
	if f.Name == "" || f.New == nil {
		return fmt.Errorf("%s factory needs a name and a New function", c.kind)
	}
	if _, dup := c.byName[f.Name]; dup {
		return fmt.Errorf("%s %q is registered twice", c.kind, f.Name)
	}
	c.byName[f.Name] = f
	return nil
}

// Lookup returns the factory named name.
func (c *Catalog[T]) Lookup(name string) (Factory[T], bool) {
	f, ok := c.byName[name]
	return f, ok
}

// Names returns the registered names, sorted.
func (c *Catalog[T]) Names() []string {
	names := make([]string, 0, len(c.byName))
	for n := range c.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Registry holds every plug-in pipebench knows. cmd/pipebench builds the one
// registry; the scenario decoder takes its lists of valid names from it.
type Registry struct {
	Generators *Catalog[Generator]
	Drivers    *Catalog[Driver]
	Sinks      *Catalog[Sink]
	Observers  *Catalog[Observer]
	SUTs       *Catalog[SUT]
}

// NewRegistry returns a registry with empty catalogs.
func NewRegistry() *Registry {
	return &Registry{
		Generators: NewCatalog[Generator]("generator"),
		Drivers:    NewCatalog[Driver]("driver"),
		Sinks:      NewCatalog[Sink]("sink"),
		Observers:  NewCatalog[Observer]("observer"),
		SUTs:       NewCatalog[SUT]("sut"),
	}
}
