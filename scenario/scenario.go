// Package scenario decodes scenario files strictly, applies defaults,
// validates everything at once with file:line:col and YAML paths, and
// compiles a scenario into a pipebench.Plan.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// Component is a plug-in chosen by name with its decoded configuration:
// Config is the pointer the factory's NewConfig returned, filled in from
// the YAML (nil when the factory takes no configuration). Observers also
// carry a Name and an Interval.
type Component = pipebench.Component

// Phase is one phase as written in the scenario, defaults applied.
type Phase struct {
	Name        string
	Duration    pipebench.Duration
	Profile     pipebench.Profile
	Stagger     pipebench.Duration
	MaxInFlight int
	// MaxInFlightBytes is 0 when the scenario does not set it (the
	// default applies at compile).
	MaxInFlightBytes int64
	// Tick is 0 when the scenario does not set it (the pacer's floor).
	Tick   pipebench.Duration
	Faults pipebench.FaultPolicy
}

// Scenario is a decoded, validated scenario file.
type Scenario struct {
	File        string
	Name        string
	Version     string
	Case        string
	Description string
	Labels      map[string]string
	SUT         *Component
	Target      Component
	Generator   Component
	Batch       int
	Sink        *Component
	Observers   []Component
	Interval    pipebench.Duration
	Drain       pipebench.Duration
	Phases      []Phase
	Thresholds  []pipebench.Threshold
}

// Params is what decoding needs besides the file.
type Params struct {
	// Context, when done (a signal), stops Load reading the scenario
	// file, even a FIFO no one writes; nil: never.
	Context context.Context
	// Registry gives the valid plug-in names and their configurations.
	Registry *pipebench.Registry
	// Env looks up ${VAR}; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// Dir is the folder relative file paths in plug-in settings are read
	// from (pipebench.FilePaths); Load sets it to the scenario file's.
	// Empty: the working directory.
	Dir string
	// ParseThreshold parses a threshold expression, once, into the form
	// the Plan carries; nil means kpi.ParseThreshold.
	ParseThreshold func(expr string) (pipebench.Threshold, error)
}

// Defaults applied when the scenario says nothing.
const (
	DefaultMaxInFlight = pipebench.DefaultMaxInFlight
	// DefaultMaxInFlightBytes bounds the generator's memory for requests
	// awaiting answers: a run that falls behind drops sends (and says so)
	// instead of growing without end.
	DefaultMaxInFlightBytes = pipebench.DefaultMaxInFlightBytes
	DefaultBatch            = 1
	DefaultInterval         = pipebench.Duration(1e9)
	DefaultDrain            = pipebench.Duration(30e9)
	DefaultBlastLimit       = pipebench.DefaultBlastLimit
	DefaultGenerator        = "event"
)

// Load reads and decodes the scenario at path ("-" reads standard input).
func Load(path string, p Params) (*Scenario, error) {
	data, err := pipebench.ReadInput(p.Context, pipebench.Input{Path: path, What: "scenario file", Limit: pipebench.MaxScenarioSize})
	if errors.Is(err, os.ErrNotExist) {
		return nil, pipebench.UsageError(fmt.Sprintf("scenario file %s does not exist", path),
			"give the path of a scenario YAML file, or builtin:NAME (pipebench run --list)", nil)
	}
	if err != nil {
		return nil, err
	}
	if p.Dir == "" {
		p.Dir = filepath.Dir(path)
	}
	return Parse(path, data, p)
}

// Parse decodes a scenario held in memory; file names it in messages. The
// error, if any, wraps an *Errors listing every problem.
func Parse(file string, data []byte, p Params) (*Scenario, error) {
	if p.Registry == nil {
		p.Registry = pipebench.NewRegistry()
	}
	if p.Env == nil {
		p.Env = os.LookupEnv
	}
	if p.ParseThreshold == nil {
		p.ParseThreshold = kpi.ParseThreshold
	}
	d := &decoder{file: file, p: p}
	var sc *Scenario
	if d.checkText(data) { // size and bytes first: see limits.go
		sc = d.decode(data)
	}
	if len(d.errs) > 0 {
		d.errs.dedupe()
		d.errs.sort()
		if d.more > 0 {
			d.errs = append(d.errs, Problem{File: file, Msg: fmt.Sprintf("and %d more problems, not shown: fix the ones above first", d.more)})
		}
		errs := d.errs
		return nil, &errs
	}
	return sc, nil
}
