// Package runner executes a Plan: it starts the sink, the embedded system
// under test, the driver and the observers the Plan names (built from a
// Registry), paces every phase, drains, and hands what it recorded to
// kpi.Assemble for the Result. It knows plug-ins only by their interfaces
// and the run only by its Plan.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/schedule"
)

// Params is what one run needs: the Plan and the Registry to build its
// components from, and where to report.
type Params struct {
	Plan     pipebench.Plan
	Registry *pipebench.Registry
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Progress, if set, is called from the observation goroutine once per
	// interval and once at the end of each phase.
	Progress func(Progress)
	// ToolVersion and Args go into the Result's manifest (Args as given:
	// the caller removes secrets from them).
	ToolVersion string
	Args        []string
	// AbortGrace bounds how long in-flight sends and the drain may take
	// once the run was stopped by a signal (default 5s).
	AbortGrace time.Duration
	// SendsGrace bounds how long the sends still in flight when the load
	// ended may take to return, whatever happens (default 10m, above the
	// drivers' own timeouts, 5-30 s by default): what has not returned
	// then is abandoned, and the run fails saying so.
	SendsGrace time.Duration
	// Checkpoint, if set, is handed a partial Result (status "running")
	// every CheckpointEvery while the run goes on, from the observation
	// goroutine, so a soak killed by the machine loses at most one
	// interval. CheckpointEvery defaults to a minute.
	Checkpoint      func(*pipebench.Result)
	CheckpointEvery time.Duration
	// Cut, when done, abandons in-flight sends and the drain at once (a
	// second Ctrl-C); the partial Result is still returned. nil: never.
	Cut context.Context
}

// Progress is a live view of a run, for progress displays.
type Progress struct {
	// RunID is the run's id, the one its Result will carry (minted when
	// the run starts, so live views can label their series with it).
	RunID         string
	Phase         string
	PhaseIndex    int
	Phases        int
	Draining      bool
	HasSink       bool
	Elapsed       time.Duration // since the run's load started
	PhaseElapsed  time.Duration
	PhaseDuration time.Duration
	Remaining     time.Duration // planned load time left, drain excluded
	TargetRate    float64       // items/s the pacer asks for now
	SentRate      float64       // items/s over the last interval
	RatesKnown    bool          // the rates were measured over an interval yet
	AcceptedRate  float64
	DeliveredRate float64
	Sent          uint64 // this phase: what left pipebench
	TotalSent     uint64 // every phase so far
	Accepted      uint64
	Failed        uint64
	Dropped       uint64 // this phase: held back at their due time (max_in_flight)
	// HeldBack counts this phase's items the system under test held back
	// (Dropped and sends that never left); Missed, pipebench's own.
	HeldBack, Missed uint64
	Delivered        uint64 // this phase's items that arrived
	InFlight         int64
	Backlog          float64 // accepted, not yet delivered (whole run)
	QueueSize        float64 // largest exporter_queue_size observed now, -1 when not observed
	// Snapshot returns a partial Result for live charts: the manifest's
	// names and start, the phases started so far (no KPIs yet) and a copy
	// of every series. Safe to call from any goroutine, at any time.
	Snapshot func() *pipebench.Result
	// PhaseStats returns copies of phase i's send statistics (items by
	// outcome class, latency histograms) and, with a sink, of its arrival
	// statistics (end-to-end latency; loss is not counted here), nil
	// without one. For exporters of the run's own metrics. Valid for
	// 0 <= i <= min(PhaseIndex, Phases-1); safe from any goroutine, also
	// after the run ended.
	PhaseStats func(i int) (kpi.SendStats, *kpi.ArrivalStats)
	// Partial returns the run so far as a Result with its KPIs (status
	// running, partial), as a checkpoint is: for live KPI tables. It
	// costs more than Snapshot (it computes every KPI); safe from any
	// goroutine, also after the run ended.
	Partial func() *pipebench.Result
}

// components are the plug-ins of one run.
type components struct {
	gen       pipebench.Generator
	drv       pipebench.Driver
	sink      pipebench.Sink
	sut       pipebench.SUT
	observers []namedObserver
	dir       string
}

type namedObserver struct {
	name     string
	obs      pipebench.Observer
	interval time.Duration
}

// Run executes p.Plan and returns its Result, whatever happened once the
// plan was found runnable: a Result marked aborted (and partial) after a
// signal; invalid (and no error) when the driver reached nothing at its
// start; status error, with the error, when a component failed to start.
// It returns a nil Result only for a plan that cannot run at all (no
// registry, no phases, a phase that cannot be paced).
func Run(ctx context.Context, p Params) (*pipebench.Result, error) {
	if p.Logger == nil {
		p.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.AbortGrace <= 0 {
		p.AbortGrace = 5 * time.Second
	}
	if p.SendsGrace <= 0 {
		p.SendsGrace = 10 * time.Minute
	}
	if p.Cut == nil {
		p.Cut = context.Background()
	}
	if p.Registry == nil {
		return nil, errors.New("runner: no registry")
	}
	if len(p.Plan.Phases) == 0 {
		return nil, pipebench.UsageError("the plan has no phases", "add at least one phase to the scenario", nil)
	}
	r := &run{p: p, plan: p.Plan, log: p.Logger}
	return r.execute(ctx)
}

// run is the state of one execution.
type run struct {
	p    Params
	plan pipebench.Plan
	log  *slog.Logger
	c    components

	rec      *kpi.Recorder
	arr      *kpi.Arrivals
	series   *seriesSet
	seriesMu sync.Mutex

	phaseMu sync.Mutex // guards phaseT0, phaseEnd and faultedAt for checkpoints
	started time.Time
	id      string        // the run's id, minted once at its start
	nextSeq atomic.Uint64 // the next sequence number; written by the executor, read by checkpoints
	// sendsCancelled is set when a stopped run cancels its sends in
	// flight: what they end with is the cancellation, not the target's
	// answer, so they stay sent without an outcome (abandoned).
	sendsCancelled atomic.Bool
	// sendsHung is set when sends had not returned SendsGrace after the
	// load ended (see awaitSends).
	sendsHung atomic.Bool
	phaseIdx  atomic.Int32 // current phase, -1 before, len(phases) while draining
	phaseT0   []time.Time
	phaseEnd  []time.Time
	// phaseUse are readings of pipebench's own process at each phase's
	// start and end (phaseMu).
	phaseUse  [][2]selfUse
	faultedAt []uint64
	pacers    []*schedule.Pacer
	loadStart time.Time
	draining  atomic.Bool
	final     atomic.Bool // the last observation, after the drain
	acceptedN atomic.Uint64
	lastQueue atomic.Value // float64
	ostate    *obsState
	obsErrors atomic.Uint64
	obsRounds atomic.Uint64 // observations completed
	// sutExits describe the system under test's processes that ended
	// during the run.
	sutExits []string
}

func (r *run) execute(ctx context.Context) (res *pipebench.Result, err error) {
	started := time.Now()
	r.started = started
	r.id = pipebench.NewRunID(started, "")
	n := len(r.plan.Phases)
	r.rec = kpi.NewRecorder(n)
	r.series = newSeriesSet()
	r.phaseT0 = make([]time.Time, n)
	r.phaseEnd = make([]time.Time, n)
	r.phaseUse = make([][2]selfUse, n)
	r.faultedAt = make([]uint64, n)
	r.pacers = make([]*schedule.Pacer, n)
	r.phaseIdx.Store(-1)
	r.lastQueue.Store(float64(-1))
	for i, ph := range r.plan.Phases {
		pc, perr := schedule.New(ph)
		if perr != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("phase %q cannot be paced", ph.Name), "check its rates and duration", perr)
		}
		r.pacers[i] = pc
	}

	// Components live on their own context: a signal stops the load, not
	// the sink or the system under test, which must stay up for the drain.
	compCtx, stopComponents := context.WithCancel(context.WithoutCancel(ctx))
	defer stopComponents()
	if err := r.setup(compCtx); err != nil {
		r.teardown()
		return r.notStarted(started, err)
	}
	defer r.teardown()

	obsCtx, stopObs := context.WithCancel(compCtx)
	obsDone := make(chan struct{})
	// The first observation is made before the first send, so that every
	// counter's value at the start of the load is one read before it: a
	// point is stamped with the time it was asked for, and one asked for
	// as the load began but answered a moment later would already count
	// some of the load (the effects of a blast's first events), and the
	// blast would seem never to complete. It also gives the first tick
	// its rates.
	r.observeOnce(obsCtx, time.Now())
	go func() { defer close(obsDone); r.observeLoop(obsCtx) }()

	aborted := r.load(ctx)
	loadEnded := time.Now()
	r.drain(ctx, aborted)
	// A signal during the drain stops the run as one during the load does:
	// what had not arrived yet is abandoned, not lost.
	aborted = aborted || ctx.Err() != nil
	stopObs()
	<-obsDone
	// The pipeline counts an export after its answer arrives: give its
	// counters a moment to settle before the last point of every series.
	if len(r.c.observers) > 0 && !aborted {
		sleepUntil(r.p.Cut, time.Now().Add(min(r.interval(), time.Second)))
	}
	if st, ok := r.c.sink.(pipebench.Settler); ok && r.c.sink != nil {
		sctx, cancel := context.WithTimeout(r.p.Cut, 5*time.Second)
		if err := st.Settle(sctx); err != nil {
			r.log.Warn("the sink could not record what it consumed", "err", err)
		}
		cancel()
	}
	lastObs := time.Now()
	// The last observation, cut short by a second signal.
	r.final.Store(true)
	r.observeOnce(r.p.Cut, lastObs)
	if er, ok := r.c.sut.(pipebench.ExitReporter); ok {
		r.sutExits = er.Exited()
	}

	res = r.result(started, loadEnded, lastObs, aborted)
	if aborted {
		return res, &pipebench.Error{Code: pipebench.ExitFailure, Msg: "run stopped by a signal; the partial result was kept"}
	}
	return res, nil
}

// build makes the component c from its catalog.
func build[T any](cat *pipebench.Catalog[T], c pipebench.Component, env pipebench.Env, what string) (T, error) {
	f, ok := cat.Lookup(c.Type)
	if !ok {
		var zero T
		return zero, pipebench.UsageError(fmt.Sprintf("unknown %s %q", cat.Kind(), c.Type), fmt.Sprintf("valid %ss: %v", cat.Kind(), cat.Names()), nil)
	}
	v, err := f.New(c.Config, env)
	if err != nil {
		return v, startErr(what, c.Type, err)
	}
	return v, nil
}

// endpoints returns what x receives on: its endpoint, and its endpoints
// by protocol when it has several.
func endpoints(x interface{ Endpoint() string }) (string, map[string]string) {
	if m, ok := x.(pipebench.MultiEndpoint); ok {
		return x.Endpoint(), m.Endpoints()
	}
	return x.Endpoint(), nil
}

// setup builds and starts every component: sink first, then the system
// under test (it exports to the sink), then the driver (it sends to the
// system under test), then observers (they watch the system under test).
func (r *run) setup(ctx context.Context) error {
	reg := r.p.Registry
	dir, err := os.MkdirTemp("", "pipebench-run-")
	if err != nil {
		return fmt.Errorf("create a scratch directory: %w", err)
	}
	r.c.dir = dir
	env := pipebench.Env{Dir: dir, Logger: r.log}
	r.arr = kpi.NewArrivals(len(r.plan.Phases), r.rec.Live)

	// target is where the next component sends: the sink, then the SUT.
	var target pipebench.Env
	if c := r.plan.Sink; c != nil {
		sink, err := build(reg.Sinks, *c, env, "sink")
		if err != nil {
			return err
		}
		if err := sink.Start(ctx, r.arr); err != nil {
			return startErr("sink", c.Type, err)
		}
		r.c.sink = sink
		target.Target, target.Targets = endpoints(sink)
		r.log.Info("sink started", "type", c.Type, "endpoint", sink.Endpoint())
	}
	if c := r.plan.SUT; c != nil {
		e := env
		e.Target, e.Targets = target.Target, target.Targets
		sut, err := build(reg.SUTs, *c, e, "system under test")
		if err != nil {
			return err
		}
		if err := sut.Start(ctx); err != nil {
			return startErr("system under test", c.Type, err)
		}
		r.c.sut = sut
		target.Target, target.Targets = endpoints(sut)
		r.log.Info("system under test started", "type", c.Type, "endpoint", sut.Endpoint())
	}
	if r.c.gen, err = build(reg.Generators, r.plan.Workload, env, "generator"); err != nil {
		return err
	}
	// The driver aims at the system under test, or, when there is none,
	// straight at the sink (a loopback check of pipebench itself).
	denv := env
	denv.Target, denv.Targets = target.Target, target.Targets
	drv, err := build(reg.Drivers, r.plan.Target, denv, "driver")
	if err != nil {
		return err
	}
	if err := drv.Start(ctx); err != nil {
		if pipebench.IsUnreached(err) {
			// Nothing could reach the system under test: whatever was
			// measured now would describe the network, not the system.
			return &unreached{err}
		}
		return startErr("driver", r.plan.Target.Type, err)
	}
	r.c.drv = drv
	oenv := env
	if r.c.sut != nil {
		oenv.Instances = r.c.sut.Instances()
		// An observer that speaks the system's own protocol (the kafka
		// observer's admin API) finds it where the driver does.
		oenv.Target, oenv.Targets = target.Target, target.Targets
	}
	for _, o := range r.plan.Observers {
		obs, err := build(reg.Observers, o, oenv, "observer")
		if err != nil {
			return err
		}
		iv := o.Interval.D()
		if iv <= 0 {
			iv = r.interval()
		}
		name := o.Name
		if name == "" {
			name = o.Type
		}
		r.c.observers = append(r.c.observers, namedObserver{name: name, obs: obs, interval: iv})
	}
	return nil
}

func startErr(kind, name string, err error) error {
	var pe *pipebench.Error
	if errors.As(err, &pe) {
		return err
	}
	return &pipebench.Error{Code: pipebench.ExitFailure, Msg: fmt.Sprintf("start %s %q", kind, name), Err: err}
}

// teardown stops the components in reverse order, each bounded: the
// observers first (closeObservers), then the driver, the system under test
// and the sink.
func (r *run) teardown() {
	r.closeObservers()
	stop := func(what string, f func(context.Context) error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f(ctx); err != nil {
			r.log.Warn("shutdown", "component", what, "err", err)
		}
	}
	if r.c.drv != nil {
		stop("driver", r.c.drv.Shutdown)
	}
	if r.c.sut != nil {
		stop("system under test", r.c.sut.Shutdown)
	}
	if r.c.sink != nil {
		stop("sink", r.c.sink.Shutdown)
	}
	if r.c.dir != "" {
		os.RemoveAll(r.c.dir)
	}
}

func (r *run) interval() time.Duration {
	if d := r.plan.Interval.D(); d > 0 {
		return d
	}
	return time.Second
}

// load runs the phases in order, each with its executor. It returns true
// when ctx was cancelled (a signal) before the plan was done.
func (r *run) load(ctx context.Context) (aborted bool) {
	// Sends get their own context: a signal stops new sends at once, and
	// in-flight ones get AbortGrace (or until Cut) to finish.
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	var wg sync.WaitGroup
	r.nextSeq.Store(r.plan.FirstSeq())
	if !r.plan.StartAt.IsZero() {
		sleepUntil(ctx, r.plan.StartAt) // shards start together
	}
	r.loadStart = time.Now()
	last := -1
	for i, ph := range r.plan.Phases {
		if ctx.Err() != nil {
			break
		}
		last = i
		r.startPhase(i, ph)
		executorFor(ph).execute(ctx, sendCtx, r, i, &wg)
		r.endPhase(i)
	}
	aborted = ctx.Err() != nil
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	r.awaitSends(ctx, done, cancelSends)
	// The last phase's final sends were still in flight when it ended; the
	// faults the sink answered them with belong to it.
	if last >= 0 {
		f, _ := r.arr.Totals()
		r.phaseMu.Lock()
		r.faultedAt[last] = f
		r.phaseMu.Unlock()
	}
	return aborted
}

func (r *run) startPhase(i int, ph pipebench.PlanPhase) {
	if fs, ok := r.c.sink.(pipebench.FaultSetter); ok && r.c.sink != nil {
		fs.SetFaults(ph.Faults, time.Now())
	}
	r.arr.StartPhase(i, r.nextSeq.Load())
	r.arr.SetRunning(i)
	use := readSelfUse()
	r.phaseMu.Lock()
	r.phaseUse[i][0] = use
	r.phaseT0[i] = time.Now()
	r.phaseMu.Unlock()
	r.phaseIdx.Store(int32(i))
	r.log.Info("phase started", "phase", ph.Name, "duration", ph.Duration, "items", ph.Items)
	r.emitProgress(r.phaseT0[i])
}

func (r *run) endPhase(i int) {
	f, _ := r.arr.Totals()
	use := readSelfUse()
	r.phaseMu.Lock()
	r.phaseUse[i][1] = use
	r.phaseEnd[i] = time.Now()
	r.faultedAt[i] = f
	r.phaseMu.Unlock()
	r.emitProgress(time.Now())
}

// send builds, sends and records one batch.
func (r *run) send(ctx context.Context, i int, seq uint64, count int, at time.Time) {
	b := r.c.gen.Next(seq, count, at)
	b.Seq, b.Count, b.Scheduled = seq, count, at
	size := int64(len(b.Body))
	live := r.rec.Live(i)
	live.InFlightBytes.Add(size)
	started := time.Now()
	out := r.safeSend(ctx, &b)
	ended := time.Now()
	live.InFlightBytes.Add(-size)
	r.rec.Record(i, pipebench.Sample{Scheduled: at, Started: started, Ended: ended, Count: count, Bytes: len(b.Body), Outcome: out})
	if out.Class == pipebench.ClassOK {
		if r.c.sink != nil { // nothing to match arrivals against otherwise
			r.arr.Accept(seq, count)
		}
		r.acceptedN.Add(uint64(count))
	}
	if rel, ok := r.c.gen.(pipebench.Releaser); ok {
		rel.Release(&b)
	}
}

// safeSend calls the driver and turns a panic into an error outcome, so a
// bug in one plug-in cannot lose the measurements already made.
func (r *run) safeSend(ctx context.Context, b *pipebench.Batch) (out pipebench.Outcome) {
	defer func() {
		if v := recover(); v != nil {
			buf := make([]byte, 4096)
			buf = buf[:runtime.Stack(buf, false)]
			r.log.Error("driver panicked", "panic", v, "stack", string(buf))
			out = pipebench.Outcome{Class: pipebench.ClassError, Detail: "driver panic", Message: fmt.Sprint("driver panic: ", v)}
		}
	}()
	return r.c.drv.Send(ctx, b)
}

// cut is Params.Cut's Done channel, or nil (never ready) without one.
func (r *run) cut() <-chan struct{} {
	if r.p.Cut == nil {
		return nil
	}
	return r.p.Cut.Done()
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

// waitAtMost waits for done, for at most d.
// awaitSends waits for the sends still in flight when the load ended
// (done closes when every one returned): until they return; once the run
// is stopped (ctx done), AbortGrace at most, then they are cancelled and
// waited for until they return or a cut; at a cut (a second signal) a
// second at most after cancelling them. Whatever happens, it waits
// SendsGrace at most after the load's end: sends a driver never returns
// (a target that went silent under a client that waits for it) cannot
// hold the run, and what did not return is abandoned (sent, no answer).
func (r *run) awaitSends(ctx context.Context, done <-chan struct{}, cancelSends func()) {
	cancel := func() {
		r.sendsCancelled.Store(true)
		cancelSends()
	}
	hung := time.NewTimer(r.p.SendsGrace)
	defer hung.Stop()
	stopped := ctx.Done()
	var grace <-chan time.Time
	for {
		select {
		case <-done:
			return
		case <-r.cut():
			// Cut short: cancelled sends still get a moment to return,
			// but no more.
			cancel()
			waitAtMost(done, time.Second)
			return
		case <-stopped:
			stopped = nil
			t := time.NewTimer(r.p.AbortGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			grace = nil
			cancel()
		case <-hung.C:
			r.log.Warn("sends did not return after the load ended; abandoned", "after", r.p.SendsGrace)
			r.sendsHung.Store(true)
			cancel()
			waitAtMost(done, time.Second)
			return
		}
	}
}

func waitAtMost(done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
