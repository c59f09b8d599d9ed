package kpi

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// RunRecord is everything a run recorded, for Assemble. The runner fills
// it; Assemble decides every number, the validity and the verdict.
type RunRecord struct {
	Plan pipebench.Plan
	// Phases are the phases that ran, in plan order (a run stopped by a
	// signal has fewer than the plan). Arrivals is nil without a sink.
	Phases []PhaseInput
	// Drain is what arrived after the last phase; nil without a sink.
	Drain *PhaseInput
	// Arrivals are the whole run's (RunStats); nil without a sink.
	Arrivals *ArrivalStats
	// Faulted is the whole run's count of faults the sink injected.
	Faulted uint64
	Series  []pipebench.Series
	// Messages are the first distinct failure messages by class.
	Messages map[string][]string
	Aborted  bool
	// Partial marks a checkpoint of a run still going: its last phase is
	// not judged, and its status is "running".
	Partial bool
	// ObserverErrors counts failed observations.
	ObserverErrors uint64
	// Invalid are reasons the runner found that the run's numbers do not
	// describe the system under test (nothing reached it when the driver
	// started); Failures are failures of the system under test that are
	// no threshold (it exited during the run).
	Invalid, Failures []string
	// SetupError, when not "", is why the run could not start at all.
	SetupError string
	// LoadEnded is when the last phase ended; ObservedUntil is the time of
	// the last observation (after the drain).
	LoadEnded, ObservedUntil time.Time
	// Detectors are the plan's plug-ins' own readings of their series
	// (pipebench.Registry.Detectors), run after the general detectors.
	Detectors []pipebench.Detector
}

// Assemble computes the Result of a run: each phase's KPIs with the
// derived ones (backlog.max, a blast's time to complete), the drain, the
// total row, thresholds, detections, the validity, the verdict and a
// summary in words. m is the manifest without its Status and Reasons.
func Assemble(rec RunRecord, m pipebench.Manifest) *pipebench.Result {
	res := &pipebench.Result{Schema: pipebench.ResultSchema, Plan: rec.Plan, Series: rec.Series, Errors: rec.Messages}
	var reasons []string
	total := SendStats{Details: map[string]uint64{}, HeldBack: map[string]uint64{}, Latency: newHist(), Service: newHist(), Wait: newHist(), Lag: newHist(), ReadLag: newHist()}
	for i, in := range rec.Phases {
		ph := rec.Plan.Phases[i]
		pr := Build(in, rec.Series)
		derivePhase(&pr, ph, in, rec.Series)
		if rec.Plan.Shard != nil {
			pr.Histograms = encodeHistograms(in)
		}
		res.Phases = append(res.Phases, pr)
		total.merge(in.Sends)
		// The phase a signal cut short (or a checkpoint caught running)
		// is not judged on its shortfall.
		if !(rec.Aborted || rec.Partial) || i < len(rec.Phases)-1 {
			reasons = append(reasons, Validity(ph, &pr, in.Sends)...)
		}
	}
	if len(res.Phases) > 0 {
		res.Total = buildTotal(rec, total, res, m.Item)
		if rec.Plan.Shard != nil {
			in := PhaseInput{Sends: total, Arrivals: rec.Arrivals}
			res.Total.Histograms = encodeHistograms(in)
		}
	}
	if rec.Drain != nil && len(res.Phases) > 0 {
		// The drain's own pipeline readings: what the pipeline exported,
		// held and used after the load.
		d := Build(*rec.Drain, res.Series)
		res.Drain = &d
	}
	if rec.Aborted {
		abandonQueued(res)
	}
	var planned uint64
	for i := range rec.Phases {
		planned += rec.Plan.Phases[i].Items
	}
	reasons = append(reasons, reached(total, planned)...)
	if len(res.Phases) > 0 {
		reasons = append(reasons, Restarts(rec.Series, res.Phases[0].Started, rec.ObservedUntil)...)
	}
	res.Thresholds = EvalThresholds(rec.Plan, res.Phases)
	res.Detections = append(Saturation(res, reasons), DetectAll(res, rec.Detectors)...)
	res.Summary = append(Summary(res), Capacity(res)...)

	failures := rec.Failures
	if !rec.Aborted && !rec.Partial {
		failures = append(failures, acceptedNothing(total)...)
	}
	m.Status, reasons = Verdict(Judgement{Thresholds: res.Thresholds, Invalid: append(rec.Invalid, reasons...), Failures: failures, Error: rec.SetupError,
		Aborted: rec.Aborted, Partial: rec.Partial, Ran: len(rec.Phases), Planned: len(rec.Plan.Phases)})
	if rec.ObserverErrors > 0 {
		reasons = append(reasons, fmt.Sprintf("%d observations failed (see the log)", rec.ObserverErrors))
	}
	m.Reasons = reasons
	res.Manifest = m
	res.Summary = append(res.Summary, LedgerSummary(res)...)
	return res
}

// buildTotal is the whole run's row: every phase's sends, the whole
// sequence range's arrivals and loss, the pipeline's own totals including
// what it exported during the drain, the drain time and the backlog peak.
func buildTotal(rec RunRecord, sends SendStats, res *pipebench.Result, item string) *pipebench.PhaseResult {
	first, last := res.Phases[0], res.Phases[len(res.Phases)-1]
	in := PhaseInput{Name: "total", Started: first.Started, Ended: last.Ended, Sends: sends}
	for _, ph := range rec.Phases {
		if g := ph.Generator; g != nil {
			if in.Generator == nil {
				in.Generator = &GeneratorUse{}
			}
			in.Generator.CPU += g.CPU
			in.Generator.Wait += g.Wait
			in.Generator.CPUs = max(in.Generator.CPUs, g.CPUs)
		}
	}
	var planned float64
	paced := true // a closed-model (blast) phase has no target rate
	for i, ph := range rec.Plan.Phases[:len(res.Phases)] {
		// What the phase planned for as long as it ran: a phase cut
		// short by a signal planned only its share.
		planned += ph.PlannedRate() * res.Phases[i].Ended.Sub(res.Phases[i].Started).Seconds()
		paced = paced && !ph.Blast()
	}
	if secs := last.Ended.Sub(first.Started).Seconds(); secs > 0 && paced {
		in.TargetRate = planned / secs
	}
	until := rec.ObservedUntil
	if until.IsZero() {
		until = time.Now()
	}
	// A raw counter's total is its value at the last observation, after
	// the drain.
	totals := func(t *pipebench.PhaseResult) {
		for _, k := range ObservedKPIs(res.Series, first.Started, until) {
			if strings.HasSuffix(k.Name, ".total") {
				t.Set(k)
			}
		}
	}
	if rec.Arrivals == nil {
		t := Build(in, res.Series)
		setHistograms(&t, res.Series, first.Started, until)
		totals(&t)
		wholeRunPeaks(&t, res.Series, first.Started, until)
		if !rec.Aborted {
			effectLedger(&t, res.Series, first.Started, until, item, rec.Partial)
		}
		return &t
	}
	in.Arrivals = rec.Arrivals
	in.Faulted = rec.Faulted
	t := Build(in, res.Series)
	setHistograms(&t, res.Series, first.Started, until)
	totals(&t)
	wholeRunPeaks(&t, res.Series, first.Started, until)
	if a := rec.Arrivals; a.Lost > 0 {
		// Accepted items never arrived: the backlog did not drain, and
		// has no drain time; how long the drain waited for it is said.
		// (A run stopped by a signal whose items all arrived did drain:
		// its drain time is measured like any other's.)
		t.Set(pipebench.KPI{Name: "drain_waited", Value: math.Max(0, until.Sub(last.Ended).Seconds()), Unit: pipebench.UnitSeconds})
	} else {
		drain := 0.0
		if !a.Last.IsZero() && a.Last.After(last.Ended) {
			drain = a.Last.Sub(last.Ended).Seconds()
		}
		t.Set(pipebench.KPI{Name: "drain_time", Value: drain, Unit: pipebench.UnitSeconds})
	}
	if b, ok := seriesMax(res.Series, "backlog", first.Started, until); ok {
		t.Set(pipebench.KPI{Name: "backlog.max", Value: b, Unit: pipebench.UnitCount})
	}
	if !rec.Aborted {
		// Lost is only what the pipeline no longer holds. (A run stopped
		// by a signal abandons what had not arrived: abandonQueued.)
		applyPending(&t, res.Phases, res.Series, until, item, rec.Partial)
	}
	return &t
}

// wholeRunPeaks sets, in the run's total, every observed gauge's peak
// (NAME.max, and memory_mb, a peak too) over the whole run, the drain
// included (the phases' windows end with the load), and when it was:
// NAME.max_at, in seconds from the start of the load.
func wholeRunPeaks(t *pipebench.PhaseResult, series []pipebench.Series, from, until time.Time) {
	for _, s := range series {
		if runnerSeries[s.Name] || isHistogramPart(s.Name) || s.Kind == pipebench.KindCounter || strings.HasSuffix(s.Name, "_rate") || s.Name == "cpu_cores" {
			continue
		}
		var peak pipebench.TimeValue
		found := false
		for _, p := range s.Points {
			if !p.T.Before(from) && !p.T.After(until) && (!found || p.V > peak.V) {
				peak, found = p, true
			}
		}
		if !found {
			continue
		}
		name := s.Name + ".max"
		if s.Name == "memory_mb" {
			name = s.Name
		}
		t.Set(pipebench.KPI{Name: name, Labels: s.Labels, Value: peak.V, Unit: s.Unit})
		t.Set(pipebench.KPI{Name: name + "_at", Labels: s.Labels, Value: peak.T.Sub(from).Seconds(), Unit: pipebench.UnitSeconds})
	}
	if _, at, ok := seriesPeak(series, "backlog", from, until); ok {
		t.Set(pipebench.KPI{Name: "backlog.max_at", Value: at.Sub(from).Seconds(), Unit: pipebench.UnitSeconds})
	}
}

// seriesPeak is the highest point of the series called name in [from, to]
// and when it was.
func seriesPeak(series []pipebench.Series, name string, from, to time.Time) (float64, time.Time, bool) {
	var peak pipebench.TimeValue
	ok := false
	for _, s := range series {
		if s.Name != name {
			continue
		}
		for _, p := range s.Points {
			if !p.T.Before(from) && !p.T.After(to) && (!ok || p.V > peak.V) {
				peak, ok = p, true
			}
		}
	}
	return peak.V, peak.T, ok
}

// abandonQueued renames, in a run stopped by a signal, the accepted items
// that had not arrived yet from lost to abandoned_queued: the run stopped
// watching for them, so nobody knows whether the pipeline would have
// delivered them.
func abandonQueued(res *pipebench.Result) {
	rows := []*pipebench.PhaseResult{res.Total}
	for i := range res.Phases {
		rows = append(rows, &res.Phases[i])
	}
	for _, p := range rows {
		if p == nil {
			continue
		}
		v, ok := p.Get("lost")
		if !ok {
			continue
		}
		kept := p.KPIs[:0]
		for _, k := range p.KPIs {
			if k.Name != "lost" {
				kept = append(kept, k)
			}
		}
		p.KPIs = kept
		p.Set(pipebench.KPI{Name: "abandoned_queued", Value: v, Unit: pipebench.UnitCount})
	}
}

// derivePhase adds the KPIs computed from others: backlog.max within the
// phase, and for a blast what a blast means (time to complete, peak
// backlog, completion rate) instead of rates over the time it took to send.
func derivePhase(pr *pipebench.PhaseResult, ph pipebench.PlanPhase, in PhaseInput, series []pipebench.Series) {
	if b, ok := seriesMax(series, "backlog", in.Started, in.Ended); ok {
		pr.Set(pipebench.KPI{Name: "backlog.max", Value: b, Unit: pipebench.UnitCount})
	} else if b, ok := nearest(series, "backlog", in.Ended); ok && in.Arrivals != nil {
		// A phase shorter than the interval saw no observation of its
		// own: the one closest to its end stands for it.
		pr.Set(pipebench.KPI{Name: "backlog.max", Value: b, Unit: pipebench.UnitCount})
	}
	if !ph.Blast() {
		return
	}
	// A blast is complete when its last item took effect (an effect
	// observer's "effects" counter reached what was accepted), else when
	// its last item arrived at the sink, else when its last send returned.
	done, items := in.Sends.LastEnded, float64(in.Sends.Items[pipebench.ClassOK])
	peakName := "in_flight"
	if a := in.Arrivals; a != nil {
		done, items, peakName = a.Last, float64(a.Own), "backlog"
	}
	if at, ok := effectsReached(series, in.Started, items); ok {
		done, peakName = at, "effect_backlog"
	}
	if done.IsZero() || !done.After(in.Started) {
		return
	}
	ttc := done.Sub(in.Started).Seconds()
	pr.Set(pipebench.KPI{Name: "time_to_complete", Value: ttc, Unit: pipebench.UnitSeconds})
	pr.Set(pipebench.KPI{Name: "completion_rate", Value: items / ttc, Unit: pipebench.UnitPerSecond})
	if in.Arrivals != nil {
		// Delivered over the time the blast took to take effect, not over
		// the moment it took to send.
		pr.Set(pipebench.KPI{Name: "delivered", Value: items, Unit: pipebench.UnitCount})
		pr.Set(pipebench.KPI{Name: "delivered_rate", Value: items / ttc, Unit: pipebench.UnitPerSecond})
	}
	if b, ok := seriesMax(series, peakName, in.Started, done.Add(time.Second)); ok {
		pr.Set(pipebench.KPI{Name: "peak_backlog", Value: b, Unit: pipebench.UnitCount})
	}
	// The blast's latency histograms (event to effect) span until it took
	// effect, not only the moment it took to send.
	setHistograms(pr, series, in.Started, done)
}

// effectsReached returns when the "effects" counter (an effect observer's
// total of events that took effect) had grown by n since from: the first
// observation at or after which it had.
func effectsReached(series []pipebench.Series, from time.Time, n float64) (time.Time, bool) {
	for _, s := range series {
		if s.Name != "effects" || len(s.Labels) != 0 || n <= 0 {
			continue
		}
		base := 0.0
		for _, p := range s.Points {
			if p.T.After(from) {
				break
			}
			base = p.V
		}
		for _, p := range s.Points {
			if p.T.After(from) && p.V-base >= n {
				return p.T, true
			}
		}
	}
	return time.Time{}, false
}

func seriesMax(series []pipebench.Series, name string, from, to time.Time) (float64, bool) {
	m, ok := 0.0, false
	for _, s := range series {
		if s.Name != name {
			continue
		}
		for _, p := range s.Points {
			if !p.T.Before(from) && !p.T.After(to) && (!ok || p.V > m) {
				m, ok = p.V, true
			}
		}
	}
	return m, ok
}

// nearest returns the point of the series called name closest to t.
func nearest(series []pipebench.Series, name string, t time.Time) (float64, bool) {
	var best float64
	var dist time.Duration = -1
	for _, s := range series {
		if s.Name != name {
			continue
		}
		for _, p := range s.Points {
			d := p.T.Sub(t)
			if d < 0 {
				d = -d
			}
			if dist < 0 || d < dist {
				best, dist = p.V, d
			}
		}
	}
	return best, dist >= 0
}

// The limits past which a phase's numbers describe pipebench rather than
// the system under test.
const (
	// MissedShare is the share of a phase's planned items pipebench may
	// fail to make before the run is invalid.
	MissedShare = 0.01
	// LagLimit is the p99 of the schedule lag and of the read lag above
	// which pipebench, not the system, set the pace (ms).
	LagLimit = 1000
	// SaturatedCPU is the share of its CPUs above which pipebench's own
	// process counts as saturated: the system's held-back sends cannot
	// then be told from pipebench's slowness in reading answers.
	SaturatedCPU = 0.9
)

// Validity returns why a phase's numbers describe pipebench rather than
// the system under test, or nothing when they are sound. Every send not
// made on time has an owner. The system under test's share (held back:
// max_in_flight answers outstanding, no free connection, a connect
// refused) is a result, never a reason here. Pipebench's own share is:
// more than MissedShare of the planned items not made (its pacer fell
// behind), sends starting or answers waiting to be read more than
// LagLimit late at p99, or sends held back while its own process used
// SaturatedCPU of its CPUs or more (whose limit it was cannot be told).
func Validity(ph pipebench.PlanPhase, pr *pipebench.PhaseResult, s SendStats) []string {
	var reasons []string
	if ph.Blast() {
		return nil
	}
	evidence := generatorEvidence(pr)
	planned := float64(ph.Items)
	if missed := float64(s.Missed); planned > 0 && missed > MissedShare*planned {
		reasons = append(reasons, fmt.Sprintf("phase %s: pipebench could not keep up: it did not make %s of %s planned items (%.1f%%) by a second after the phase's end%s; lower the rate, send more items per send, or spread the load over shards (run --shard, k8s run)",
			ph.Name, pipebench.FormatCount(missed), pipebench.FormatCount(planned), 100*missed/planned, evidence))
	}
	if lag, ok := pr.Get("schedule_lag.p99"); ok && lag > LagLimit {
		reasons = append(reasons, fmt.Sprintf("phase %s: pipebench fell behind its schedule: sends started %.0f ms late at p99 while connections and in-flight slots were free%s; lower the rate, send more items per send, or spread the load over shards", ph.Name, lag, evidence))
	}
	if lag, ok := pr.Get("read_lag.p99"); ok && lag > LagLimit {
		reasons = append(reasons, fmt.Sprintf("phase %s: pipebench fell behind reading answers: they waited %.0f ms at p99 for it to read them%s; lower the rate, add generator CPU, or spread the load over shards", ph.Name, lag, evidence))
	}
	if why := saturatedGenerator(pr); why != "" {
		reasons = append(reasons, fmt.Sprintf("phase %s: %s", ph.Name, why))
	}
	if held := s.HeldForSlots(); held > 0 && s.Service != nil && s.Service.TotalCount() > 0 && s.Lag != nil && s.Lag.TotalCount() > 0 {
		// A connection or in-flight slot is held from the write to the
		// answer's arrival by the system; pipebench's own share is how
		// late it acts: how late it starts what falls due (its lag: its
		// loops wake on the same scheduler) and, where the driver tells,
		// how long an answer waits for it to be read. When pipebench's
		// share is the larger, its slowness, not the system, kept them
		// busy.
		own, how := s.Lag.Mean()/1000, fmt.Sprintf("it started sends %.1f ms late on average", s.Lag.Mean()/1000)
		if s.ReadLag != nil && s.ReadLag.TotalCount() > 0 {
			own += s.ReadLag.Mean() / 1000
			how += fmt.Sprintf(" and answers waited %.1f ms on average for it to read them", s.ReadLag.Mean()/1000)
		}
		if svc := s.Service.Mean() / 1000; own > svc {
			reasons = append(reasons, fmt.Sprintf("phase %s: pipebench held its connections and in-flight slots longer than the system did: %s, against %.1f ms from the write to the answer's arrival, so the %s items held back for busy slots are pipebench's slowness%s; lower the rate, add generator CPU, or spread the load over shards",
				ph.Name, how, svc, pipebench.FormatCount(float64(held)), evidence))
		}
	}
	return reasons
}

// saturatedGenerator says why a phase whose sends the system held back
// cannot be judged: pipebench's own process used SaturatedCPU of its CPUs
// or more ("" when it did not, or nothing was held back). Where the driver
// tells when each answer arrived (read_lag), who held the connections is
// known from it instead (Validity), and the CPU is not asked. How long its
// threads waited for a CPU others held is not a rule (a light run on a
// loaded machine waits as long as a starved one): it is said beside every
// reason that names pipebench (generatorEvidence).
func saturatedGenerator(pr *pipebench.PhaseResult) string {
	held, _ := pr.Get("held_back")
	used, ok := pr.Get("generator_cpu_cores")
	cpus, _ := pr.Get("generator_cpus")
	_, timed := pr.Get("read_lag.p99")
	switch {
	case !ok || held <= 0 || cpus <= 0 || timed:
		return ""
	case used >= SaturatedCPU*cpus:
		return fmt.Sprintf("pipebench's own process used %.2f of its %.0f CPUs while the system under test held back %s items: whether the system or pipebench's reading of its answers held them cannot be told; give pipebench more CPU (fewer, larger sends, shards, another machine)",
			used, cpus, pipebench.FormatCount(held))
	}
	return ""
}

// generatorEvidence says, for a reason that names pipebench, what its own
// process spent: "; pipebench used 1.98 of its 2 CPUs and waited for a
// CPU 0.40 of the time" (empty when the phase has no such KPIs).
func generatorEvidence(pr *pipebench.PhaseResult) string {
	used, ok := pr.Get("generator_cpu_cores")
	if !ok {
		return ""
	}
	cpus, _ := pr.Get("generator_cpus")
	out := fmt.Sprintf(" (pipebench's process used %.2f of its %.0f CPUs", used, cpus)
	if wait, _ := pr.Get("generator_cpu_wait"); wait >= 0.05 {
		out += fmt.Sprintf(" and its threads waited %.2f CPU-seconds a second for a CPU another process held", wait)
	}
	return out + ")"
}

// reached says the run is invalid when nothing reached the system under
// test: planned items were not sent at all (every one held back or
// missed, or none built), or every send failed before the target answered
// (refused, a message the protocol cannot carry).
func reached(s SendStats, planned uint64) []string {
	started := s.SentItems()
	if started == 0 && planned > 0 {
		why := fmt.Sprintf("nothing was sent: none of the %s planned items left pipebench", pipebench.FormatCount(float64(planned)))
		var causes []string
		for _, k := range sortedKeys(s.HeldBack) {
			causes = append(causes, fmt.Sprintf("%s %s", k, pipebench.FormatCount(float64(s.HeldBack[k]))))
		}
		if s.Missed > 0 {
			causes = append(causes, fmt.Sprintf("missed by pipebench %s", pipebench.FormatCount(float64(s.Missed))))
		}
		if len(causes) > 0 {
			why += " (held back: " + strings.Join(causes, ", ") + ")"
		}
		if s.HeldBackItems() > s.Items[pipebench.ClassDropped] {
			why += ": check the target's address, port, protocol and TLS settings, and that it is running"
		}
		return []string{why}
	}
	if started == 0 || s.Unreached < started {
		return nil
	}
	var causes []string
	for _, k := range sortedKeys(s.Details) {
		causes = append(causes, fmt.Sprintf("%s %s", k, pipebench.FormatCount(float64(s.Details[k]))))
	}
	return []string{fmt.Sprintf("nothing reached the system under test: all %s items failed before the target answered (%s): check the target's address, port, protocol and TLS settings, that it is running, and that the workload's messages fit it",
		pipebench.FormatCount(float64(started)), strings.Join(causes, ", "))}
}

// acceptedNothing says the system under test failed when it was sent
// items and accepted none of them, whatever the protocol: such a run is
// never COMPLETED with exit 0 (nothing reached it at all is invalid
// instead, by reached).
func acceptedNothing(s SendStats) []string {
	sent := s.SentItems()
	if sent == 0 || s.Items[pipebench.ClassOK] > 0 || s.Unreached >= sent {
		return nil
	}
	var parts []string
	for _, c := range []pipebench.Class{pipebench.ClassRefused, pipebench.ClassTimeout, pipebench.ClassError} {
		if n := s.Items[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", c, pipebench.FormatCount(float64(n))))
		}
	}
	if s.Abandoned > 0 {
		parts = append(parts, fmt.Sprintf("no answer %s", pipebench.FormatCount(float64(s.Abandoned))))
	}
	return []string{fmt.Sprintf("the system under test accepted none of the %s items sent (%s)", pipebench.FormatCount(float64(sent)), strings.Join(parts, ", "))}
}

// EvalThresholds evaluates the plan's thresholds on the phases they name
// (a phase, or its group's steps; every phase when none).
func EvalThresholds(plan pipebench.Plan, phases []pipebench.PhaseResult) []pipebench.ThresholdResult {
	var out []pipebench.ThresholdResult
	for _, t := range plan.Thresholds {
		for i := range phases {
			if t.Phase != "" && (i >= len(plan.Phases) || !plan.Phases[i].InGroup(t.Phase)) {
				continue
			}
			out = append(out, EvalThreshold(t, &phases[i])...)
		}
	}
	return out
}

// Failed reports whether any threshold failed.
func Failed(ts []pipebench.ThresholdResult) bool {
	for _, t := range ts {
		if !t.Passed {
			return true
		}
	}
	return false
}

// Summary states in words what went wrong over the whole run: failed and
// dropped sends by class, items lost or duplicated. Empty when nothing did.
func Summary(r *pipebench.Result) []string {
	t := r.Total
	if t == nil {
		return nil
	}
	var out []string
	sent, _ := t.Get("sent")
	var failed float64
	var parts []string
	for _, c := range []pipebench.Class{pipebench.ClassRefused, pipebench.ClassTimeout, pipebench.ClassError} {
		if v, _ := t.Get("errors", "class", c.String()); v > 0 {
			failed += v
			part := fmt.Sprintf("%s %s", c, pipebench.FormatCount(v))
			if ms := r.Errors[c.String()]; len(ms) > 0 {
				part += fmt.Sprintf(" (%q)", ms[0])
			}
			parts = append(parts, part)
		}
	}
	if failed > 0 {
		out = append(out, fmt.Sprintf("%s of %s items sent were not accepted: %s", pipebench.FormatCount(failed), pipebench.FormatCount(sent), strings.Join(parts, ", ")))
	}
	if v, _ := t.Get("abandoned"); v > 0 {
		out = append(out, fmt.Sprintf("%s items were still in flight when the run was cut short or gave up waiting for them: sent, with no answer recorded", pipebench.FormatCount(v)))
	}
	if v, _ := t.Get("abandoned_queued"); v > 0 {
		out = append(out, fmt.Sprintf("%s accepted items had not arrived when the run was stopped: abandoned in the pipeline, not counted as lost (nobody watched for them)", pipebench.FormatCount(v)))
	}
	if v, _ := t.Get("held_back"); v > 0 {
		var reasons []string
		for _, k := range t.All("held_back") {
			if r := k.Labels["reason"]; r != "" {
				reasons = append(reasons, fmt.Sprintf("%s %s", heldWords(r), pipebench.FormatCount(k.Value)))
			}
		}
		out = append(out, fmt.Sprintf("%s items were held back by the system under test and never sent (%s): it did not let them be sent on time, a result about it, not counted as sent", pipebench.FormatCount(v), strings.Join(reasons, ", ")))
	}
	if v, _ := t.Get("missed"); v > 0 {
		out = append(out, fmt.Sprintf("%s items were missed by pipebench: it had not made them a second after their phase ended", pipebench.FormatCount(v)))
	}
	if v, ok := t.Get("lost"); ok && v > 0 {
		acc, _ := t.Get("accepted")
		if by := byPipeline(t, "pipeline_lost"); by != "" {
			out = append(out, fmt.Sprintf("%s copies of the %s accepted items never arrived at the sink (lost), by pipeline: %s", pipebench.FormatCount(v), pipebench.FormatCount(acc), by))
		} else {
			out = append(out, fmt.Sprintf("%s of %s accepted items never arrived at the sink (lost)", pipebench.FormatCount(v), pipebench.FormatCount(acc)))
		}
	}
	if v, _ := t.Get("duplicates"); v > 0 && byPipeline(t, "pipeline_duplicates") != "" {
		out = append(out, fmt.Sprintf("%s items arrived more than once through the same pipeline (duplicates), by pipeline: %s", pipebench.FormatCount(v), byPipeline(t, "pipeline_duplicates")))
	} else if v > 0 {
		out = append(out, fmt.Sprintf("%s items arrived more than once (duplicates)", pipebench.FormatCount(v)))
	}
	return out
}

// heldWords says a held-back reason in words.
func heldWords(reason string) string {
	switch reason {
	case HeldMaxInFlight:
		return "max_in_flight answers outstanding"
	case HeldMaxInFlightBytes:
		return "max_in_flight_bytes of requests outstanding"
	}
	return reason
}

func (dst *SendStats) merge(src SendStats) {
	for c := range dst.Items {
		dst.Items[c] += src.Items[c]
		dst.Batches[c] += src.Batches[c]
	}
	if dst.HeldBack == nil {
		dst.HeldBack = map[string]uint64{}
	}
	for k, v := range src.HeldBack {
		dst.HeldBack[k] += v
	}
	dst.Missed += src.Missed
	dst.DroppedForBytes += src.DroppedForBytes
	if !src.FirstHeld.IsZero() && (dst.FirstHeld.IsZero() || src.FirstHeld.Before(dst.FirstHeld)) {
		dst.FirstHeld = src.FirstHeld
	}
	dst.Bytes += src.Bytes
	dst.AcceptedBytes += src.AcceptedBytes
	dst.Unreached += src.Unreached
	dst.Abandoned += src.Abandoned
	for k, v := range src.Details {
		dst.Details[k] += v
	}
	dst.Latency.Merge(src.Latency)
	dst.Service.Merge(src.Service)
	if src.Wait != nil {
		dst.Wait.Merge(src.Wait)
	}
	dst.Lag.Merge(src.Lag)
	if src.ReadLag != nil {
		dst.ReadLag.Merge(src.ReadLag)
	}
	if src.LastEnded.After(dst.LastEnded) {
		dst.LastEnded = src.LastEnded
	}
}

func sortedKeys(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DetectAll runs every detector with its defaults: the general ones, which
// read only the KPI names every plug-in shares (stall, shortfall,
// backlog_growth, leak, throughput_drop, rate_drop, and the total's
// memory_slope), then each of detectors (the plan's plug-ins' own, such as
// the nats observer's storage and dispatch classes, F1 to F3). A stall
// is not counted while a PauseReporter among detectors says delivery was
// paused on purpose.
func DetectAll(res *pipebench.Result, detectors []pipebench.Detector) []pipebench.Detection {
	var o DetectOptions
	var pausers []pipebench.PauseReporter
	for _, d := range detectors {
		if p, ok := d.(pipebench.PauseReporter); ok {
			pausers = append(pausers, p)
		}
	}
	if len(pausers) > 0 {
		o.Paused = func(t time.Time) bool {
			for _, p := range pausers {
				if p.Paused(res, t) {
					return true
				}
			}
			return false
		}
	}
	out := append(Detect(res, o), Drift(res)...)
	byName := pipebench.SeriesByName(res.Series)
	out = append(out, rateDrop(res, byName, func(t time.Time) string { return phaseFrom(res, t) })...)
	for _, d := range detectors {
		out = append(out, d.Detect(res)...)
	}
	memorySlopes(res, byName)
	return out
}
