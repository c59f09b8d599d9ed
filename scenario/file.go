package scenario

import (
	"errors"
	"fmt"

	"github.com/goccy/go-yaml/ast"

	"github.com/pipebench/pipebench"
)

// file is a scenario file's top level as it is written. The decoder fills
// it by its yaml tags (reflect.go) and the schema is reflected from it
// (schema.go); a key's description is its field's doc comment.
type file struct {
	// Name names the scenario: letters, digits, '.', '_' and '-'. Runs
	// are found by it in the history.
	Name string `yaml:"name" jsonschema:"required" example:"checkout-load"`
	// Version labels the version of the system under test (a row of the
	// comparison tables); run --sut-version overrides it.
	Version string `yaml:"version"`
	// Case names the test case (a column group of the comparison
	// tables); the name when not given.
	Case string `yaml:"case"`
	// Description says in a line what the scenario tests.
	Description string `yaml:"description"`
	// Labels are free key: value pairs recorded with every run.
	Labels map[string]string `yaml:"labels"`
	// SUT is an embedded system under test that pipebench starts on
	// loopback (type: otelcol, relay, jetstream, ...); the target and the
	// sink are wired to it.
	SUT section `yaml:"sut" plugin:"type"`
	// Target is where the load is sent: a driver (driver: http, otlp,
	// nats, grpc, ...) and its settings; the embedded system under test
	// (or the sink) when no address is given.
	Target section `yaml:"target" plugin:"driver" jsonschema:"required" example:"{driver: http, url: \"http://127.0.0.1:8080/\"}"`
	// Workload is what is sent: a generator (generator: event, otlp-traces,
	// cloudevents, ...; event by default), its settings and batch.
	Workload section `yaml:"workload" plugin:"generator"`
	// Sink is the test backend the pipeline exports to (type: http, otlp,
	// nats, promrw): it matches what arrives and applies the phases'
	// faults.
	Sink section `yaml:"sink" plugin:"type"`
	// Observers sample the pipeline's own state every interval: its
	// Prometheus metrics, a PromQL query, a process, NATS, a Kubernetes
	// object.
	Observers []section `yaml:"observers" plugin:"type"`
	// Interval is how often observers and the run's own counters are
	// sampled: 1s by default, at least 100ms.
	Interval *pipebench.Duration `yaml:"interval"`
	// Drain is the longest the run waits after the last phase for what
	// was accepted to arrive at the sink: 30s by default.
	Drain *pipebench.Duration `yaml:"drain"`
	// Defaults are phase settings for every phase; a phase's own value
	// wins.
	Defaults *pipebench.PhaseSettings `yaml:"defaults"`
	// Phases are the stretches of load, run in order.
	Phases []pipebench.PhaseSpec `yaml:"phases" jsonschema:"required" example:"[{name: load, duration: 1m, rate: 100/s}]"`
	// Thresholds are the conditions a run passes: failing one exits 99.
	Thresholds []threshold `yaml:"thresholds"`
}

// section is a plug-in's part of a scenario (target, workload, sink, sut,
// each observer), kept as written until its type key (the field's plugin
// tag) says which configuration it decodes into.
type section struct{ node ast.Node }

// threshold is one entry of thresholds: an expression alone, or with the
// phase it is about.
type threshold struct {
	// Expr is the condition: a KPI compared with a number, a duration, a
	// rate or a multiple of another KPI, like "latency.p99 < 500ms",
	// "delivered_rate >= 0.99 * sent_rate" or "max(memory_mb) < 512".
	Expr string `yaml:"expr" jsonschema:"required" example:"\"latency.p99 < 500ms\""`
	// Phase limits the threshold to the phase of that name (a steps
	// phase's name: each of its steps); every phase when not given.
	Phase string `yaml:"phase"`
}

// UnmarshalText reads the short form: the expression alone.
func (t *threshold) UnmarshalText(b []byte) error {
	t.Expr = string(b)
	return nil
}

// observerKeys are the keys every observer takes besides its own.
type observerKeys struct {
	// Name names the observer's series (its type when not given).
	Name string `yaml:"name"`
	// Interval is how often this observer is sampled (the scenario's
	// interval when not given; at least 100ms).
	Interval *pipebench.Duration `yaml:"interval"`
}

// Validate checks the interval.
func (k observerKeys) Validate() error { return checkInterval(k.Interval) }

// workloadKeys are the keys of workload besides the generator's own.
type workloadKeys struct {
	// Batch is how many items each send carries (1 by default): rates
	// count items, so 1000/s in batches of 100 is 10 sends a second.
	Batch *int `yaml:"batch"`
}

// Validate checks the batch size.
func (k workloadKeys) Validate() error {
	if k.Batch != nil && *k.Batch < 1 {
		return fmt.Errorf("batch: must be at least 1")
	}
	return nil
}

// Validate checks the rules of the top level's own keys: the name's
// letters, the interval, a phase at least. Each line starts with its key.
func (f file) Validate() error {
	var errs []error
	if f.Name != "" && !validName.MatchString(f.Name) {
		errs = append(errs, fmt.Errorf("name: %q may hold only letters, digits, '.', '_' and '-'", f.Name))
	}
	if err := checkInterval(f.Interval); err != nil {
		errs = append(errs, err)
	}
	if f.Phases != nil && len(f.Phases) == 0 {
		errs = append(errs, fmt.Errorf("phases: is empty: add at least one phase, like `phases: [{name: load, duration: 1m, rate: 100/s}]`"))
	}
	return errors.Join(errs...)
}

// checkInterval checks an interval that was given (nil: not given).
func checkInterval(iv *pipebench.Duration) error {
	switch {
	case iv == nil:
		return nil
	case *iv <= 0:
		return fmt.Errorf("interval: must be more than 0")
	}
	if err := pipebench.CheckInterval(*iv); err != nil {
		return fmt.Errorf("interval: %w", err)
	}
	return nil
}
