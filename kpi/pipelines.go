package kpi

import (
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench"
)

// MaxPipelines bounds how many pipelines Arrivals tells apart; the sink
// reports the requests of any further pipeline to the totals alone.
const MaxPipelines = 64

// pipeArrivals is the account of one pipeline of the system under test:
// its own set of arrived sequence numbers (so that a true duplicate within
// the pipeline is caught while the same item arriving once through each
// of several pipelines is not), and its per-phase counts. Its methods take
// the parent's lock.
type pipeArrivals struct {
	a       *Arrivals
	name    string
	arrived *SeqSet
	maxSeq  uint64
	phases  []*arrivalPhase
	// during and faulted count by the phase running when the items
	// arrived or were faulted; the last index is the drain.
	during  []atomic.Uint64
	faulted []atomic.Uint64
}

var _ pipebench.PipelineArrivals = (*Arrivals)(nil)

// Pipeline implements pipebench.PipelineArrivals: the recorder of the
// named pipeline, made on first use; nil once MaxPipelines are known.
func (a *Arrivals) Pipeline(name string) pipebench.Arrivals {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.pipes[name]; p != nil {
		return p
	}
	if len(a.pipes) >= MaxPipelines {
		return nil
	}
	if a.pipes == nil {
		a.pipes = map[string]*pipeArrivals{}
	}
	p := &pipeArrivals{a: a, name: name, arrived: NewSeqSet(), phases: make([]*arrivalPhase, len(a.phases)),
		during: make([]atomic.Uint64, len(a.during)), faulted: make([]atomic.Uint64, len(a.during))}
	for i := range p.phases {
		p.phases[i] = &arrivalPhase{e2e: newHist()}
	}
	a.pipes[name] = p
	return p
}

// Arrive records one item of the pipeline. The first copy of an item to
// arrive through any pipeline also counts in the totals (delivered,
// end-to-end latency, the live delivered counter); a copy the pipeline
// already delivered is a duplicate, of the pipeline and of the totals.
func (p *pipeArrivals) Arrive(seq uint64, sent, at time.Time) {
	a := p.a
	a.mu.Lock()
	i := a.phaseOf(seq)
	if p.arrived.Add(seq) {
		p.phases[i].duplicates++
		a.phases[i].duplicates++
		a.mu.Unlock()
		return
	}
	e2e := micros(at.Sub(sent))
	p.phases[i].deliver(seq < p.maxSeq, e2e, at)
	p.maxSeq = max(p.maxSeq, seq)
	first := !a.arrived.Add(seq)
	if first {
		a.phases[i].deliver(seq < a.maxSeq, e2e, at)
		a.maxSeq = max(a.maxSeq, seq)
		a.window.RecordValue(e2e)
	}
	a.mu.Unlock()
	r := int(a.now.Load())
	if r >= 0 && r < len(p.during) {
		p.during[r].Add(1)
	}
	if !first {
		return
	}
	if i < len(a.live) {
		a.live[i].Delivered.Add(1)
	}
	if r >= 0 && r < len(a.during) {
		a.during[r].Add(1)
	}
}

// Faulted records n items of the pipeline the sink faulted; they count in
// the totals too.
func (p *pipeArrivals) Faulted(n int) {
	p.a.Faulted(n)
	if r := int(p.a.now.Load()); r >= 0 && r < len(p.faulted) {
		p.faulted[r].Add(uint64(n))
	}
}

// Unmatched records n items without a sequence number (totals only).
func (p *pipeArrivals) Unmatched(n int) { p.a.Unmatched(n) }

// PipelineStats is what one pipeline delivered to the sink during a phase
// (or the whole run): Delivered, Own, Duplicates, Reordered, Lost, E2E and
// Last as in ArrivalStats, counted over the pipeline's own copies, and the
// items the sink faulted on it.
type PipelineStats struct {
	ArrivalStats
	Faulted uint64
}

// pipelineNames returns the pipelines' names, sorted. Call with mu held.
func (a *Arrivals) pipelineNames() []string {
	names := make([]string, 0, len(a.pipes))
	for n := range a.pipes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// pipelineStats returns each pipeline's statistics of phases [from, to)
// over the sequence numbers [lo, hi) (hi 0: no loss count); drain adds
// what arrived and was faulted during the drain. Call with mu held.
func (a *Arrivals) pipelineStats(from, to int, lo, hi uint64, drain bool) (map[string]PipelineStats, uint64) {
	if len(a.pipes) == 0 {
		return nil, 0
	}
	out := make(map[string]PipelineStats, len(a.pipes))
	var lost uint64
	for _, name := range a.pipelineNames() {
		p := a.pipes[name]
		st := PipelineStats{ArrivalStats: ArrivalStats{E2E: newHist()}}
		for i := from; i < to && i < len(p.phases); i++ {
			st.add(p.phases[i])
			st.Delivered += p.during[i].Load()
			st.Faulted += p.faulted[i].Load()
		}
		if drain {
			st.Delivered += p.during[len(p.during)-1].Load()
			st.Faulted += p.faulted[len(p.faulted)-1].Load()
		}
		if hi > lo {
			st.Lost = p.arrived.MissingFrom(a.accepted, lo, hi)
			lost += st.Lost
		}
		out[name] = st
	}
	return out, lost
}

// PipelinesDuring returns what each pipeline delivered, and had faulted by
// the sink, while phase i ran (i = the number of phases: during the drain
// after the last); nil when the sink tells no pipelines apart.
func (a *Arrivals) PipelinesDuring(i int) map[string]PipelineStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pipes) == 0 {
		return nil
	}
	out := make(map[string]PipelineStats, len(a.pipes))
	for name, p := range a.pipes {
		var st PipelineStats
		if i >= 0 && i < len(p.during) {
			st.Delivered = p.during[i].Load()
			st.Faulted = p.faulted[i].Load()
		}
		out[name] = st
	}
	return out
}

// outstandingPipelines returns how many accepted items some pipeline has
// not delivered yet, summed over the pipelines. Call with mu held.
func (a *Arrivals) outstandingPipelines() uint64 {
	var n uint64
	for _, p := range a.pipes {
		n += p.arrived.MissingFrom(a.accepted, 0, ^uint64(0))
	}
	return n
}

// PipelineKPIs returns the KPIs of each pipeline the sink told apart,
// labelled pipeline=NAME, over a window of secs seconds:
// pipeline_delivered_rate, pipeline_delivered, pipeline_lost,
// pipeline_duplicates, pipeline_faulted and pipeline_e2e_latency.p50/p99.
// They have names of their own so that sums over a KPI's labels (the
// totals of instances) never add them to the totals.
func PipelineKPIs(pipes map[string]PipelineStats, secs float64) []pipebench.KPI {
	names := make([]string, 0, len(pipes))
	for n := range pipes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []pipebench.KPI
	for _, n := range names {
		st := pipes[n]
		add := func(name string, v float64, u pipebench.Unit) {
			out = append(out, pipebench.KPI{Name: name, Labels: map[string]string{"pipeline": n}, Value: v, Unit: u})
		}
		if secs > 0 {
			add("pipeline_delivered_rate", float64(st.Delivered)/secs, pipebench.UnitPerSecond)
		}
		add("pipeline_delivered", float64(st.Delivered), pipebench.UnitCount)
		add("pipeline_lost", float64(st.Lost), pipebench.UnitCount)
		add("pipeline_duplicates", float64(st.Duplicates), pipebench.UnitCount)
		add("pipeline_faulted", float64(st.Faulted), pipebench.UnitCount)
		if st.E2E != nil && st.E2E.TotalCount() > 0 {
			add("pipeline_e2e_latency.p50", ms(st.E2E.ValueAtQuantile(50)), pipebench.UnitMillis)
			add("pipeline_e2e_latency.p99", ms(st.E2E.ValueAtQuantile(99)), pipebench.UnitMillis)
		}
	}
	return out
}

// byPipeline lists the pipelines whose KPI name is above 0, with their
// values ("p2 2,700, p3 100"), in pipeline order; "" when none is.
func byPipeline(p *pipebench.PhaseResult, name string) string {
	ks := p.All(name)
	sort.Slice(ks, func(i, j int) bool { return ks[i].Labels["pipeline"] < ks[j].Labels["pipeline"] })
	var parts []string
	for _, k := range ks {
		if k.Value > 0 {
			parts = append(parts, k.Labels["pipeline"]+" "+pipebench.FormatCount(k.Value))
		}
	}
	return strings.Join(parts, ", ")
}
