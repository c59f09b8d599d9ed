package runner

import (
	"context"
	"io"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// observeLoop samples the run's own counters and every observer once per
// interval until ctx is done, after the first observation (observeOnce,
// which the caller makes before the load). Observers with a longer
// interval of their own are asked only when it has passed.
func (r *run) observeLoop(ctx context.Context) {
	iv := r.interval()
	t := time.NewTicker(iv)
	defer t.Stop()
	every := r.p.CheckpointEvery
	if every <= 0 {
		every = time.Minute
	}
	lastCheckpoint := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.observeOnce(ctx, now)
			r.emitProgress(now)
			if r.p.Checkpoint != nil && now.Sub(lastCheckpoint) >= every-every/10 && r.phaseIdx.Load() >= 0 {
				lastCheckpoint = now
				r.p.Checkpoint(r.checkpoint())
			}
		}
	}
}

// observer state kept between observations.
type obsState struct {
	deriver  *kpi.Deriver
	lastAsk  map[string]time.Time
	prevAt   time.Time
	prevSent uint64
	prevHeld uint64
	prevAcc  uint64
	prevDel  uint64
	rates    [3]float64 // sent, accepted, delivered over the last interval
	known    bool       // rates were measured over an interval
	// prevFailed and prevFaulted are the failed items by class and the
	// items the sink faulted at the last observation.
	prevFailed  [pipebench.NumClasses]uint64
	prevFaulted uint64
}

func (r *run) obs() *obsState {
	r.seriesMu.Lock()
	defer r.seriesMu.Unlock()
	if r.ostate == nil {
		r.ostate = &obsState{deriver: kpi.NewDeriver(), lastAsk: map[string]time.Time{}}
	}
	return r.ostate
}

// observeOnce records one point of every series.
func (r *run) observeOnce(ctx context.Context, now time.Time) {
	defer r.obsRounds.Add(1)
	st := r.obs()
	sent, acc, del := r.totals()
	held := r.heldBack()
	failed := r.failedByClass()
	var faulted uint64
	if r.arr != nil {
		faulted, _ = r.arr.Totals()
	}
	var queue float64 = -1
	var points []pipebench.Point
	for _, o := range r.c.observers {
		// The last observation, after the drain, asks every observer: the
		// ledger reads the pipeline's state then.
		if last, ok := st.lastAsk[o.name]; ok && now.Sub(last) < o.interval-o.interval/10 && !r.final.Load() {
			continue
		}
		st.lastAsk[o.name] = now
		octx, cancel := context.WithTimeout(ctx, o.interval)
		pts, err := o.obs.Observe(octx, now)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				// The run ended during this observation: the last one,
				// taken after the drain, stands in for it.
				continue
			}
			r.log.Warn("observer failed", "observer", o.name, "err", err)
			r.countObserverError(o.name)
			// Points that came with the error (some of several targets
			// answered) are kept.
		}
		points = append(points, pts...)
	}
	points = append(points, r.ledger(ctx, now)...)
	derived := st.deriver.Add(points)

	r.seriesMu.Lock()
	defer r.seriesMu.Unlock()
	if !st.prevAt.IsZero() {
		dt := now.Sub(st.prevAt).Seconds()
		if dt > 0 {
			st.rates = [3]float64{growth(sent, st.prevSent) / dt, growth(acc, st.prevAcc) / dt, growth(del, st.prevDel) / dt}
			st.known = true
			r.series.add("sent_rate", nil, pipebench.UnitPerSecond, pipebench.KindGauge, now, st.rates[0])
			r.series.add("held_back_rate", nil, pipebench.UnitPerSecond, pipebench.KindGauge, now, growth(held, st.prevHeld)/dt)
			r.series.add("accepted_rate", nil, pipebench.UnitPerSecond, pipebench.KindGauge, now, st.rates[1])
			if r.c.sink != nil {
				r.series.add("delivered_rate", nil, pipebench.UnitPerSecond, pipebench.KindGauge, now, st.rates[2])
				r.series.add("faulted_rate", nil, pipebench.UnitPerSecond, pipebench.KindGauge, now, float64(faulted-st.prevFaulted)/dt)
			}
			for _, c := range []pipebench.Class{pipebench.ClassRefused, pipebench.ClassTimeout, pipebench.ClassError} {
				r.series.add("failed_rate", map[string]string{"class": c.String()}, pipebench.UnitPerSecond, pipebench.KindGauge, now, float64(failed[c]-st.prevFailed[c])/dt)
			}
		}
	}
	st.prevAt, st.prevSent, st.prevAcc, st.prevDel, st.prevHeld = now, sent, acc, del, held
	st.prevFailed, st.prevFaulted = failed, faulted
	r.series.add("target_rate", nil, pipebench.UnitPerSecond, pipebench.KindGauge, now, r.targetRate(now))
	if r.c.sink != nil {
		backlog := float64(acc) - float64(del)
		if backlog < 0 {
			backlog = 0
		}
		r.series.add("backlog", nil, pipebench.UnitCount, pipebench.KindGauge, now, backlog)
	}
	if cr, ok := r.c.drv.(pipebench.ConnectionReporter); ok {
		r.series.add("connections_open", nil, pipebench.UnitCount, pipebench.KindGauge, now, float64(cr.OpenConnections()))
	}
	if i := int(r.phaseIdx.Load()); i >= 0 && i < len(r.plan.Phases) {
		live := r.rec.Live(i)
		r.series.add("schedule_lag_ms", nil, pipebench.UnitMillis, pipebench.KindGauge, now, float64(live.MaxLagUS.Swap(0))/1000)
		r.series.add("in_flight", nil, pipebench.UnitCount, pipebench.KindGauge, now, float64(live.InFlight.Load()))
	}
	r.addWindow("latency", r.rec.TakeWindow(), now)
	if r.arr != nil {
		r.addWindow("e2e", r.arr.TakeWindow(), now)
	}
	for _, d := range derived {
		r.series.add(d.Name, d.Labels, d.Unit, d.Kind, d.At, d.Value)
		if d.Name == "exporter_queue_size" && d.Value > queue {
			queue = d.Value
		}
	}
	r.lastQueue.Store(queue)
}

// FinalLedgerBound bounds the last reading of the ledger's terms, after the
// drain, when the interval is shorter.
const FinalLedgerBound = 10 * time.Second

// ledger asks the system under test and the driver, when they can tell,
// for the ledger's terms they read from the pipeline's own state
// (pipebench.LedgerReporter), bounded by the interval (the last reading by
// FinalLedgerBound).
func (r *run) ledger(ctx context.Context, now time.Time) []pipebench.Point {
	var out []pipebench.Point
	for _, c := range []struct {
		name string
		x    any
	}{{"system under test", r.c.sut}, {"driver", r.c.drv}} {
		lr, ok := c.x.(pipebench.LedgerReporter)
		if !ok || c.x == nil {
			continue
		}
		final := r.final.Load()
		bound := r.interval()
		if final && bound < FinalLedgerBound {
			// The last reading is what the ledger rests on, and the
			// drain is over: a pipeline busy with its backlog (a store
			// counting 200,000 documents) may take longer than an
			// interval to answer.
			bound = FinalLedgerBound
		}
		lctx, cancel := context.WithTimeout(ctx, bound)
		pts, err := lr.Ledger(lctx, now, final)
		cancel()
		if ctx.Err() != nil {
			// The run ended during this observation: the last one,
			// taken after the drain, stands in for it.
			continue
		}
		if err != nil {
			r.log.Warn("reading the ledger failed", "from", c.name, "err", err)
			r.countObserverError(c.name)
		}
		out = append(out, pts...)
	}
	return out
}

func (r *run) countObserverError(name string) {
	r.obsErrors.Add(1)
}

// growth is how much a count grew since prev; 0 when it shrank (what
// left pipebench is counted at the hand-over and taken back when a send
// comes back unsent, possibly an interval later).
func growth(now, prev uint64) float64 {
	if now < prev {
		return 0
	}
	return float64(now - prev)
}

// heldBack returns the items the system under test held back so far, all
// phases.
func (r *run) heldBack() (n uint64) {
	for i := range r.plan.Phases {
		n += r.rec.Live(i).HeldBack.Load()
	}
	return n
}

// totals returns items sent (left pipebench), accepted and delivered so
// far, all phases.
func (r *run) totals() (sent, acc, del uint64) {
	for i := range r.plan.Phases {
		sent += r.rec.Live(i).SentNow()
	}
	acc = r.acceptedN.Load()
	if r.arr != nil {
		del = r.arr.Delivered()
	}
	return
}

// addWindow adds the quantiles of a window of latencies (sends or
// arrivals since the last observation) as NAME_p50_ms, _p90_ms, _p99_ms.
func (r *run) addWindow(name string, w kpi.WindowQuantiles, now time.Time) {
	if w.Count == 0 {
		return
	}
	for _, q := range []struct {
		suffix string
		v      time.Duration
	}{{"_p50_ms", w.P50}, {"_p90_ms", w.P90}, {"_p99_ms", w.P99}} {
		r.series.add(name+q.suffix, nil, pipebench.UnitMillis, pipebench.KindGauge, now, float64(q.v)/float64(time.Millisecond))
	}
}

// failedByClass returns the items whose send failed so far, all phases,
// by outcome class.
func (r *run) failedByClass() (out [pipebench.NumClasses]uint64) {
	for i := range r.plan.Phases {
		l := r.rec.Live(i)
		for c := range out {
			out[c] += l.FailedBy[c].Load()
		}
	}
	return out
}

// targetRate is the rate the plan asks for at now.
func (r *run) targetRate(now time.Time) float64 {
	i := int(r.phaseIdx.Load())
	if i < 0 || i >= len(r.plan.Phases) || r.draining.Load() {
		return 0
	}
	// An observation slowed down by its observers reads the rate at the
	// time of its tick, which may be before the phase now running began:
	// that of the phase then, not a dip to zero.
	for i > 0 && now.Before(r.phaseT0[i]) {
		i--
	}
	// A tick that lands between the end of a phase and the start of the
	// next reads the rate at the phase's end, not a dip to zero (the
	// curve's last segment ends just before its duration).
	el := min(now.Sub(r.phaseT0[i]), r.plan.Phases[i].Duration.D()-time.Nanosecond)
	if r.plan.Phases[i].Blast() {
		return 0
	}
	return r.pacers[i].RateAt(el)
}

func (r *run) emitProgress(now time.Time) {
	if r.p.Progress == nil {
		return
	}
	i := int(r.phaseIdx.Load())
	pr := Progress{RunID: r.id, Phases: len(r.plan.Phases), PhaseIndex: i, Draining: r.draining.Load(), HasSink: r.c.sink != nil, Elapsed: now.Sub(r.loadStart)}
	for j := 0; j <= i && j < len(r.plan.Phases); j++ {
		pr.TotalSent += r.rec.Live(j).SentNow()
	}
	if i >= 0 && i < len(r.plan.Phases) {
		ph := r.plan.Phases[i]
		live := r.rec.Live(i)
		pr.Phase = ph.Name
		pr.PhaseElapsed = now.Sub(r.phaseT0[i])
		pr.PhaseDuration = ph.Duration.D()
		pr.Sent, pr.Accepted, pr.Failed = live.SentNow(), live.Accepted.Load(), live.Failed.Load()
		pr.Dropped, pr.Delivered, pr.InFlight = live.Dropped.Load(), live.Delivered.Load(), live.InFlight.Load()
		pr.HeldBack, pr.Missed = live.HeldBack.Load(), live.Missed.Load()
		rem := ph.Duration.D() - pr.PhaseElapsed
		for _, later := range r.plan.Phases[i+1:] {
			rem += later.Duration.D()
		}
		if rem < 0 {
			rem = 0
		}
		pr.Remaining = rem
	} else if pr.Draining {
		pr.Phase = "drain"
	}
	pr.TargetRate = r.targetRate(now)
	r.seriesMu.Lock()
	if st := r.ostate; st != nil {
		pr.SentRate, pr.AcceptedRate, pr.DeliveredRate = st.rates[0], st.rates[1], st.rates[2]
		pr.RatesKnown = st.known
		pr.Backlog = float64(st.prevAcc) - float64(st.prevDel)
		if pr.Backlog < 0 {
			pr.Backlog = 0
		}
	}
	r.seriesMu.Unlock()
	if r.c.sink == nil {
		// Without a sink nothing is matched: the backlog is what the
		// observers report, if they do.
		pr.Backlog, _, _ = r.observedBacklog()
	}
	pr.QueueSize = r.lastQueue.Load().(float64)
	pr.Snapshot = r.snapshot
	pr.PhaseStats = r.phaseStats
	pr.Partial = r.checkpoint
	r.p.Progress(pr)
}

// phaseStats is Progress.PhaseStats.
func (r *run) phaseStats(i int) (kpi.SendStats, *kpi.ArrivalStats) {
	s := r.rec.Stats(i)
	if r.c.sink == nil || r.arr == nil {
		return s, nil
	}
	a := r.arr.Stats(i, 0) // hi 0: no loss count, which needs the phase's end
	return s, &a
}

// snapshot is Progress.Snapshot.
func (r *run) snapshot() *pipebench.Result {
	res := &pipebench.Result{Manifest: pipebench.Manifest{
		RunID: r.id, Tool: "pipebench", ToolVersion: r.p.ToolVersion,
		Scenario: r.plan.Scenario, Version: r.plan.Version, Case: r.plan.Case, Item: r.itemName(),
		Started: r.loadStart.UTC(), Ended: time.Now().UTC(), Status: pipebench.StatusRunning,
	}}
	last := int(r.phaseIdx.Load()) // phaseT0[0..last] are written before phaseIdx
	for i := 0; i <= last && i < len(r.plan.Phases); i++ {
		res.Phases = append(res.Phases, pipebench.PhaseResult{Name: r.plan.Phases[i].Name, Started: r.phaseT0[i].UTC()})
	}
	r.seriesMu.Lock()
	res.Series = r.series.list()
	r.seriesMu.Unlock()
	return res
}

// closeObservers closes, once, every observer that holds goroutines or
// connections (the optional io.Closer ability): after the last
// observation, and on every way out of the run, a failed setup included.
func (r *run) closeObservers() {
	obs := r.c.observers
	r.c.observers = nil
	for i := len(obs) - 1; i >= 0; i-- {
		c, ok := obs[i].obs.(io.Closer)
		if !ok {
			continue
		}
		done := make(chan error, 1)
		go func() { done <- c.Close() }()
		select {
		case err := <-done:
			if err != nil {
				r.log.Warn("close observer", "observer", obs[i].name, "err", err)
			}
		case <-time.After(10 * time.Second):
			r.log.Warn("close observer", "observer", obs[i].name, "err", "still closing after 10s; left behind")
		}
	}
}
