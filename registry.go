package pipebench

import (
	"fmt"
	"sort"
	"strings"
)

// Payload names a kind of Batch content: what a Generator produces and a
// Driver accepts. `validate` refuses a scenario whose generator produces
// nothing its driver accepts, naming the pairs that fit.
type Payload string

// The payload kinds of the plug-ins pipebench ships. A new protocol may add
// its own.
const (
	// PayloadBytes is an opaque encoded Body with a ContentType (JSON
	// events, CloudEvents, log lines): any byte-carrying driver sends it.
	PayloadBytes Payload = "bytes"
	// PayloadLogLines is Body holding newline-terminated log lines; it is
	// also PayloadBytes.
	PayloadLogLines Payload = "loglines"
	// PayloadOTLPTraces, PayloadOTLPMetrics and PayloadOTLPLogs are OTLP
	// export requests (Data holds them; Body may hold their encoding).
	PayloadOTLPTraces  Payload = "otlp-traces"
	PayloadOTLPMetrics Payload = "otlp-metrics"
	PayloadOTLPLogs    Payload = "otlp-logs"
)

// Factory makes one kind of plug-in, named Name in scenario files. Build
// factories with NewFactory (a plug-in with a configuration) or
// NewSimpleFactory (one without), which own the type assertion, the
// default configuration and validation.
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
	// the decoder filled in (nil: the defaults).
	New func(cfg any, env Env) (T, error)
	// Produces lists the payloads a Generator makes; Accepts those a
	// Driver sends. Empty means any (no check).
	Produces []Payload
	Accepts  []Payload
	// Detector, when set, reads the plug-in's own series in a Result
	// (WithDetector; see Detector).
	Detector Detector
}

// Validator is the optional ability of a configuration to check itself.
// Its error holds one line per problem, each starting with the key it is
// about ("connections: must be at least 1").
type Validator interface {
	Validate() error
}

// NewFactory returns a factory for a plug-in configured by a C. defaults
// returns a C holding the defaults; build makes the plug-in from a
// configuration that has been decoded and validated (build gets its own
// copy, so it may change it). A nil or foreign configuration is replaced
// by the defaults, so tests may call New(nil, env).
func NewFactory[T, C any](name, doc string, defaults func() *C, build func(cfg *C, env Env) (T, error)) Factory[T] {
	return Factory[T]{
		Name:      name,
		Doc:       doc,
		NewConfig: func() any { return defaults() },
		New: func(cfg any, env Env) (T, error) {
			c, ok := cfg.(*C)
			if !ok || c == nil {
				c = defaults()
			}
			cp := *c
			if v, ok := any(&cp).(Validator); ok {
				if err := v.Validate(); err != nil {
					var zero T
					return zero, &Error{Code: ExitUsage, Msg: fmt.Sprintf("%s: invalid configuration", name), Err: err}
				}
			}
			return build(&cp, env)
		},
	}
}

// NewSimpleFactory returns a factory for a plug-in that takes no
// configuration.
func NewSimpleFactory[T any](name, doc string, build func(env Env) (T, error)) Factory[T] {
	return Factory[T]{Name: name, Doc: doc, New: func(_ any, env Env) (T, error) { return build(env) }}
}

// WithPayloads returns f declaring what it produces (a generator) or
// accepts (a driver).
func (f Factory[T]) WithPayloads(produces, accepts []Payload) Factory[T] {
	f.Produces, f.Accepts = produces, accepts
	return f
}

// Fits reports whether a generator producing produces can be sent by a
// driver accepting accepts: they share a payload, or either says nothing.
func Fits(produces, accepts []Payload) bool {
	if len(produces) == 0 || len(accepts) == 0 {
		return true
	}
	for _, p := range produces {
		for _, a := range accepts {
			if p == a {
				return true
			}
		}
	}
	return false
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
	// Reporters render Results by format name ("text", "md", "html").
	Reporters *Catalog[Reporter]
}

// NewRegistry returns a registry with empty catalogs.
func NewRegistry() *Registry {
	return &Registry{
		Generators: NewCatalog[Generator]("generator"),
		Drivers:    NewCatalog[Driver]("driver"),
		Sinks:      NewCatalog[Sink]("sink"),
		Observers:  NewCatalog[Observer]("observer"),
		SUTs:       NewCatalog[SUT]("sut"),
		Reporters:  NewCatalog[Reporter]("report format"),
	}
}

// Reporter returns the reporter registered under format, built with no
// configuration, or a usage error naming the valid formats.
func (r *Registry) Reporter(format string) (Reporter, error) {
	f, ok := r.Reporters.Lookup(format)
	if !ok {
		return nil, UsageError(fmt.Sprintf("unknown report format %q", format), "valid formats: "+strings.Join(r.Reporters.Names(), ", "), nil)
	}
	return f.New(nil, Env{})
}
