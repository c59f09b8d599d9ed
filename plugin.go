package pipebench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Generator builds what to send. It does no I/O.
//
// Next must be safe for concurrent use: the runner calls it from every sender
// goroutine. Sequence numbers are handed out by the runner.
type Generator interface {
	// Next returns the batch carrying items seq..seq+count-1, due at at.
	// It embeds seq and a send timestamp in every item so a sink can match
	// the arrival.
	Next(seq uint64, count int, at time.Time) Batch
}

// GeneratorFunc adapts a function to Generator.
type GeneratorFunc func(seq uint64, count int, at time.Time) Batch

// Next calls f.
func (f GeneratorFunc) Next(seq uint64, count int, at time.Time) Batch { return f(seq, count, at) }

// Releaser is the optional ability of a Generator to take back a batch's
// buffers once the driver is done with them.
type Releaser interface {
	Release(b *Batch)
}

// Driver sends batches over one protocol.
//
// Start is called once before any Send; Send is called concurrently from many
// goroutines; Shutdown once after the last Send returned.
type Driver interface {
	Start(ctx context.Context) error
	// Send sends b and classifies what happened. It never panics and never
	// returns a Go error: a failed send is a measurement.
	Send(ctx context.Context, b *Batch) Outcome
	Shutdown(ctx context.Context) error
}

// AsyncSender is the optional ability of a Driver to start a send without
// a goroutine of the caller's waiting for it: SendAsync hands b over and
// returns; done is called exactly once with the outcome (by the rules of
// Send), from a goroutine of the driver's or from SendAsync itself, once
// the driver no longer uses b. started is when the driver took the send up
// (where a call of Send would have begun: the time it waited for a free
// connection runs from there to the outcome's Written, and what came
// before is the generator's own lateness); zero means at the hand-over.
// Safe for concurrent use, as Send is. The open-model runner starts the
// sends that fall due at one wake-up of its pacer with it, back to back and
// with no goroutine per send.
type AsyncSender interface {
	SendAsync(ctx context.Context, b *Batch, done func(started time.Time, o Outcome))
}

// Await is Send for a driver whose sends are asynchronous: handOver hands
// one send over with done as its callback (SendAsync, and a Flush after it
// when the driver holds sends), and Await returns the outcome done gets.
func Await(handOver func(done func(started time.Time, o Outcome))) Outcome {
	w := awaiters.Get().(*awaiter)
	handOver(w.fn)
	out := <-w.ch
	awaiters.Put(w)
	return out
}

// awaiter is what Await waits on; fn is bound once.
type awaiter struct {
	ch chan Outcome
	fn func(time.Time, Outcome)
}

var awaiters = sync.Pool{New: func() any {
	w := &awaiter{ch: make(chan Outcome, 1)}
	w.fn = func(_ time.Time, o Outcome) { w.ch <- o }
	return w
}}

// Flusher is the optional ability of an AsyncSender to write the sends
// handed over back to back together, as a closed loop writes a pipeline's
// requests in one system call: SendAsync may hold a send until the next
// Flush, so a caller that hands sends to a Flusher calls Flush after the
// last of a row. The open-model runner calls it after the sends due at one
// wake-up of its pacer, before it sleeps; a send held meanwhile is late by
// microseconds, not by a wake-up.
type Flusher interface {
	Flush()
}

// Arrivals is where a Sink reports what reached it. Implementations are safe
// for concurrent use.
type Arrivals interface {
	// Arrive records one item with sequence number seq that was sent at
	// sent and arrived at at.
	Arrive(seq uint64, sent, at time.Time)
	// Faulted records n items in a request the sink answered with an
	// injected fault (so not delivered; the pipeline should retry them).
	Faulted(n int)
	// Unmatched records n items that carried no sequence number.
	Unmatched(n int)
}

// OrderedArrivals is the optional ability of an Arrivals to take a sink's
// own judgement of order: a sink whose transport keeps order only within a
// part of the stream (a Kafka partition, per producer) tells whether an
// item came after a later one of the same part, so that items of different
// parts interleaving, as they do by design, are not counted as reordered.
// ArriveOrdered otherwise counts as Arrive does.
type OrderedArrivals interface {
	ArriveOrdered(seq uint64, sent, at time.Time, reordered bool)
}

// PipelineArrivals is the optional ability of an Arrivals to keep the
// accounts of each pipeline of the system under test apart: a sink that
// tells pipelines apart (by PipelineHeader) reports a request's items to
// Pipeline(name), so that a fan-out of one item to several pipelines is not
// counted as duplicates, and loss, duplicates and end-to-end latency are
// known per pipeline.
type PipelineArrivals interface {
	// Pipeline returns the recorder of the named pipeline, or nil when
	// no more pipelines can be told apart (the sink then reports to the
	// Arrivals itself).
	Pipeline(name string) Arrivals
}

// Sink is a test backend the pipeline exports to.
//
// Start begins serving and returns once Endpoint is valid; Shutdown stops
// it and waits for in-flight requests.
type Sink interface {
	Start(ctx context.Context, rec Arrivals) error
	// Endpoint is the address the pipeline exports to, such as
	// "http://127.0.0.1:4318" or "127.0.0.1:4317".
	Endpoint() string
	Shutdown(ctx context.Context) error
}

// FaultSetter is the optional ability of a Sink to inject faults. The runner
// calls SetFaults at the start of every phase with that phase's policy.
type FaultSetter interface {
	SetFaults(p FaultPolicy, phaseStart time.Time)
}

// FaultSeeder is the optional ability of a FaultSetter to start the random
// draws of its fault decisions (latency) from a seed: `pipebench sink
// --seed`. Without it, and in a run, the seed is 1.
type FaultSeeder interface {
	SeedFaults(seed uint64)
}

// MetricKind tells how a Point's value behaves over time.
type MetricKind uint8

// The kinds of Points.
const (
	KindGauge   MetricKind = iota // a level: queue size, memory
	KindCounter                   // a monotonic total: accepted items, CPU seconds
)

// Point is one observed value.
type Point struct {
	Name   string
	Labels map[string]string
	Kind   MetricKind
	At     time.Time
	Value  float64
}

// Observer samples the state of the pipeline (a Prometheus endpoint, a
// process, a NATS server). Observe is called from one goroutine at a time,
// every interval; an error is recorded and the run goes on, and the points
// returned with it are kept (an observer of several targets returns those
// that answered).
type Observer interface {
	Observe(ctx context.Context, at time.Time) ([]Point, error)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, at time.Time) ([]Point, error)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, at time.Time) ([]Point, error) { return f(ctx, at) }

// Instance is one running process of a system under test.
type Instance struct {
	Name       string // "collector-0"
	PID        int    // 0 when unknown
	MetricsURL string // its own Prometheus endpoint, if it has one
	// CurrentPID, when set, returns the process id now, for a process the
	// system under test may restart during the run (a node killed and
	// started again); PID is the one it started with. Safe for concurrent
	// use.
	CurrentPID func() int `json:"-"`
}

// SUT is an embedded system under test, started by the runner for the
// zero-setup default and for tests.
type SUT interface {
	// Start starts the system, exporting to env.Target (the sink's
	// endpoint), and returns once Endpoint is ready to receive.
	Start(ctx context.Context) error
	// Endpoint is where drivers send.
	Endpoint() string
	// Instances lists its processes, for observers.
	Instances() []Instance
	Shutdown(ctx context.Context) error
}

// MultiEndpoint is the optional ability of a SUT or a Sink to receive on
// several protocols. Endpoints maps a protocol name ("grpc", "http") to the
// endpoint for it; the runner hands the map to the driver (and to the SUT,
// for the sink's) as Env.Targets.
type MultiEndpoint interface {
	Endpoints() map[string]string
}

// MultiReporter is the optional ability of a Reporter to render several
// Results at once, overlaid (`pipebench report a.json b.json --format
// html`); Report of one Result is ReportAll of one.
type MultiReporter interface {
	ReportAll(w io.Writer, results []*Result) error
}

// ExitReporter is the optional ability of a SUT to say which of its
// processes ended while it should have been running: one description each
// (name, exit status, the tail of its log), none when all run. The runner
// asks after the drain, before it stops the system; a run whose system
// under test died has failed, whatever its thresholds say.
type ExitReporter interface {
	Exited() []string
}

// ConnectionReporter is the optional ability of a Driver to say how many
// connections it holds open now, for the connections_open KPI. Safe for
// concurrent use.
type ConnectionReporter interface {
	OpenConnections() int
}

// LedgerReporter is the optional ability of a system under test or a
// driver to read, from the pipeline's own state, the terms of the run's
// ledger it can see (kpi.Ledger*: the items it holds, the items written
// at the source and not read yet, the items it says it dropped, a term it
// cannot read and why). The runner asks at every observation, as it asks
// observers; last is true for the last one, after the drain, whose
// readings the ledger takes (a reading too costly to take every interval,
// such as counting a store's documents, is taken then).
type LedgerReporter interface {
	Ledger(ctx context.Context, at time.Time, last bool) ([]Point, error)
}

// Settler is the optional ability of a Sink to bring what the pipeline
// records of its consumption up to date (a Kafka consumer group's
// committed offsets) before the run's last observation: the ledger then
// reads what the pipeline still holds for it, not also what it delivered
// since its last commit. The runner calls it once, after the drain.
type Settler interface {
	Settle(ctx context.Context) error
}

// The series of the ledger, which a LedgerReporter or an observer reports
// as gauges from the pipeline's own state (the last reading after the
// drain is the one the ledger takes; a series read before but not then
// makes its term unknown):
//
//	ledger_held{where, pipeline?, counts?}    items the pipeline holds (a queue, a stream's consumer, a store)
//	ledger_unread{where, counts?}             items written at the source it has not read yet (a file's lines)
//	ledger_dropped{where, pipeline?, counts?} items it says it dropped, since it started (its own counters)
//	ledger_unknown{term, because, where?}     1: term (held or unread) cannot be read now, and why
//	ledger_effected{where}                    items that took effect, by its own count since it started (a run without a sink)
//
// where says what holds the items, in words ("collector-0 exporter
// otlp/p2", "stream EVENTS"); pipeline names the pipeline, for the sink's
// account of each; counts names the pipeline's own unit when it is not the
// run's items ("metric points").
const (
	LedgerHeld     = "ledger_held"
	LedgerUnread   = "ledger_unread"
	LedgerDropped  = "ledger_dropped"
	LedgerUnknown  = "ledger_unknown"
	LedgerEffected = "ledger_effected"
)

// Reporter renders a Result. It only formats: every number comes from r.
type Reporter interface {
	Report(w io.Writer, r *Result) error
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(w io.Writer, r *Result) error

// Report calls f.
func (f ReporterFunc) Report(w io.Writer, r *Result) error { return f(w, r) }

// RunID identifies a saved run in a Store.
type RunID string

// RunFilter selects runs from a Store. Zero fields match everything.
type RunFilter struct {
	Scenario string
	Version  string
	Since    time.Time
	Until    time.Time
	Limit    int
}

// RunSummary is one line of run history.
type RunSummary struct {
	ID       RunID
	Scenario string
	Version  string
	Case     string
	Status   Status
	Started  time.Time
	Duration time.Duration
	// Labels are the run's manifest labels (a suite's run: suite=NAME),
	// kept beside its Result so that a run whose Result cannot be read is
	// still known by them.
	Labels map[string]string
}

// Store keeps the history of Results.
type Store interface {
	Save(ctx context.Context, r *Result) (RunID, error)
	Runs(ctx context.Context, f RunFilter) ([]RunSummary, error)
	Run(ctx context.Context, id RunID) (*Result, error)
	Close() error
}

// Env is what the runner gives a factory besides the component's own
// configuration.
type Env struct {
	// Target is the endpoint the runner resolved for this component: for
	// a Driver, the embedded SUT's endpoint (used when the driver's own
	// configuration names none); for a SUT, the sink's endpoint; for an
	// Observer, the embedded SUT's endpoint (empty without one).
	Target string
	// Targets are endpoints by protocol ("grpc", "http") when the system
	// under test (or, without one, the sink) receives on several: a driver
	// picks the one for its protocol and falls back to Target (TargetFor).
	Targets map[string]string
	// Instances are the SUT's processes, for observers.
	Instances []Instance
	// Dir is a scratch directory owned by the run, removed after it.
	Dir string
	// Logger receives the component's diagnostics; never nil.
	Logger *slog.Logger
}

// TargetFor is the endpoint for protocol: e.Targets[protocol], else
// e.Target.
func (e Env) TargetFor(protocol string) string {
	if t := e.Targets[protocol]; t != "" {
		return t
	}
	return e.Target
}

// ScratchDir is e.Dir, or the system's temporary directory when there is
// none (a component made outside a run, as in a test).
func (e Env) ScratchDir() string {
	if e.Dir == "" {
		return os.TempDir()
	}
	return e.Dir
}

// Log is e.Logger, or a logger that discards everything when there is
// none (a component made outside a run, as in a test).
func (e Env) Log() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return e.Logger
}

// CommandSetter is a system under test's configuration that can run a
// build of its own program instead of the embedded one, as a suite's
// builds do (each version of the system a binary): SetCommand names that
// program (a path, or a name looked up in PATH) and says what stops it.
type CommandSetter interface {
	SetCommand(path string) error
}
