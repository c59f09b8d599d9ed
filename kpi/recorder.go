package kpi

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
)

// Latency histograms hold microseconds from 1 µs to 1 hour with 3
// significant digits.
const (
	histMin    = 1
	histMax    = int64(time.Hour / time.Microsecond)
	histDigits = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

func micros(d time.Duration) int64 {
	us := d.Microseconds()
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	return us
}

// Live holds counters of one phase that can be read while the run goes on.
// All fields are updated atomically.
type Live struct {
	// Sent counts the items of the sends handed to the driver; those that
	// came back without having left pipebench are Unsent too, so what
	// left so far is Sent less Unsent (SentNow).
	Sent     atomic.Uint64
	Unsent   atomic.Uint64
	Accepted atomic.Uint64 // items answered ok
	Failed   atomic.Uint64 // items answered with any failure class
	Dropped  atomic.Uint64 // items never started (max_in_flight or max_in_flight_bytes reached)
	// HeldBack counts the items the system under test held back: Dropped
	// and the sends that came back unsent through its doing
	// (Outcome.Unsent OwnerSystem). Missed counts pipebench's own share.
	HeldBack atomic.Uint64
	Missed   atomic.Uint64
	InFlight atomic.Int64 // sends started, not yet answered
	// InFlightBytes are the bytes of the requests of the sends in flight
	// (counted once the generator made them).
	InFlightBytes atomic.Int64
	// DroppedForBytes are the dropped items that were dropped because
	// InFlightBytes had reached max_in_flight_bytes (Dropped holds them
	// too).
	DroppedForBytes atomic.Uint64
	MaxLagUS        atomic.Int64  // largest schedule lag seen since the last reset, µs
	Delivered       atomic.Uint64 // unique items arrived at the sink
	// FailedBy counts the Failed items by outcome class, for the
	// failures-over-time charts.
	FailedBy [pipebench.NumClasses]atomic.Uint64
}

// SentNow returns the items whose request left pipebench so far.
func (l *Live) SentNow() uint64 {
	sent, unsent := l.Sent.Load(), l.Unsent.Load()
	if unsent > sent {
		return 0
	}
	return sent - unsent
}

// The reasons for which the runner itself holds a due send back (the
// system under test's answers outstanding); a send the driver gave back
// unsent is held back for the driver's Detail ("no free connection").
const (
	HeldMaxInFlight      = "max_in_flight"
	HeldMaxInFlightBytes = "max_in_flight_bytes"
)

// SendStats is what a phase's sends added up to.
type SendStats struct {
	Batches [pipebench.NumClasses]uint64 // sends by outcome class
	Items   [pipebench.NumClasses]uint64 // items by outcome class
	Bytes   uint64
	// AcceptedBytes are the bytes of the accepted sends' bodies.
	AcceptedBytes uint64
	Details       map[string]uint64 // failure details ("503", "timeout")
	// Unreached counts the sent items of sends that failed before the
	// target answered at all (Outcome.Unreached; those that never left
	// are held back or missed instead).
	Unreached uint64
	// Abandoned counts the items of sends that started but had not
	// returned when the run was cut short (a second interrupt): they are
	// in sent, with no outcome.
	Abandoned uint64
	// DroppedForBytes are the dropped items that max_in_flight_bytes
	// dropped (the rest of the dropped items were max_in_flight's).
	DroppedForBytes uint64
	// HeldBack counts the items the system under test did not let
	// pipebench send, by reason: HeldMaxInFlight and HeldMaxInFlightBytes
	// (dropped at their due time: Items[ClassDropped] holds them too),
	// and the Detail of each send a driver gave back unsent through the
	// system's doing ("no free connection", "connection refused"). They
	// are not sent: a result about the system, not a failure of
	// pipebench's.
	HeldBack map[string]uint64
	// FirstHeld is the due time of the first item held back.
	FirstHeld time.Time
	// Missed counts the items pipebench itself did not send: due sends
	// its pacer had not made when the phase's grace ran out (it fell
	// behind), and sends a driver gave back unsent through pipebench's
	// own limits (Outcome.Unsent OwnerPipebench).
	Missed uint64
	// LastEnded is when the phase's last send returned.
	LastEnded time.Time
	// Latency is measured from the scheduled time, as wrk2 does
	// (coordinated-omission corrected: a send waits for nobody): the
	// generator's lateness in starting it (Lag), its wait for a
	// connection or window slot (Wait) and the service (Service), so
	// Latency = Lag + Wait + Service. Wait is from the start of the send
	// to the write of the request, Service from that write to the
	// answer, Lag from scheduled to start; all in µs. Wait holds only the
	// sends whose driver reported Outcome.Written; for the others Service
	// counts from the start. Service ends when the answer reached the
	// machine where the driver reports it (Outcome.Answered), else when
	// the send returned; ReadLag holds the time in between (the answer
	// waiting for the generator to read it), for the sends whose driver
	// reported it: it is pipebench's, and not in Latency. Sends held back
	// (never sent) have no latency.
	Latency, Service, Wait, Lag, ReadLag *hdrhistogram.Histogram
}

// HeldBackItems returns the items the system under test held back.
func (s *SendStats) HeldBackItems() uint64 {
	var n uint64
	for _, v := range s.HeldBack {
		n += v
	}
	return n
}

// slotReasons are the reasons for holding an item back that mean every
// connection or in-flight slot was busy: who kept them busy, the system
// answering or pipebench acting late, is a question (Validity). A refused
// or unreachable connection, a producer's full buffer, are the system's
// whatever pipebench's pace.
var slotReasons = []string{HeldMaxInFlight, HeldMaxInFlightBytes, "no free connection", "pipeline full"}

// HeldForSlots returns the items held back because every connection or
// in-flight slot was busy.
func (s *SendStats) HeldForSlots() uint64 {
	var n uint64
	for _, r := range slotReasons {
		n += s.HeldBack[r]
	}
	return n
}

// SentItems returns the items whose request left pipebench: every
// outcome class but dropped, and the sends abandoned in flight.
func (s *SendStats) SentItems() uint64 {
	var n uint64
	for c := pipebench.ClassOK; c < pipebench.ClassDropped; c++ {
		n += s.Items[c]
	}
	return n + s.Abandoned
}

// Recorder collects the samples of one run, phase by phase. Record is safe
// for concurrent use. Phases are numbered from 0 in plan order.
type Recorder struct {
	mu     sync.Mutex
	phases []*SendStats
	live   []*Live
	window *hdrhistogram.Histogram // latency since the last TakeWindow, all phases
	// messages keeps the first few distinct failure messages of each
	// class, for the Result's notes.
	messages [pipebench.NumClasses][]string
}

// MaxMessages is how many distinct failure messages of each class a
// Recorder keeps.
const MaxMessages = 3

// NewRecorder returns a recorder for n phases.
func NewRecorder(n int) *Recorder {
	r := &Recorder{phases: make([]*SendStats, n), live: make([]*Live, n), window: newHist()}
	for i := range r.phases {
		r.phases[i] = &SendStats{
			Details: map[string]uint64{}, HeldBack: map[string]uint64{},
			Latency: newHist(), Service: newHist(), Wait: newHist(), Lag: newHist(), ReadLag: newHist(),
		}
		r.live[i] = &Live{}
	}
	return r
}

// Live returns the live counters of phase i.
func (r *Recorder) Live(i int) *Live { return r.live[i] }

// Started notes that a send of n items of phase i starts now, lag after it
// was due.
func (r *Recorder) Started(i, n int, lag time.Duration) {
	l := r.live[i]
	l.Sent.Add(uint64(n))
	l.InFlight.Add(1)
	us := lag.Microseconds()
	for {
		cur := l.MaxLagUS.Load()
		if us <= cur || l.MaxLagUS.CompareAndSwap(cur, us) {
			break
		}
	}
}

// Record adds a finished send of phase i. Call Started first. A send the
// driver gave back unsent (Outcome.Unsent) is held back or missed, not
// sent: it has no latency and no outcome class.
func (r *Recorder) Record(i int, s pipebench.Sample) {
	l := r.live[i]
	l.InFlight.Add(-1)
	if owner := s.Outcome.Unsent; owner != pipebench.OwnerNone {
		r.unsent(i, s, owner)
		return
	}
	if s.Outcome.Class == pipebench.ClassOK {
		l.Accepted.Add(uint64(s.Count))
	} else {
		l.Failed.Add(uint64(s.Count))
		l.FailedBy[s.Outcome.Class].Add(uint64(s.Count))
	}
	r.mu.Lock()
	p := r.phases[i]
	c := s.Outcome.Class
	p.Batches[c]++
	p.Items[c] += uint64(s.Count)
	p.Bytes += uint64(s.Bytes)
	if c == pipebench.ClassOK {
		p.AcceptedBytes += uint64(s.Bytes)
	}
	if c != pipebench.ClassOK && s.Outcome.Detail != "" && len(p.Details) < 64 {
		p.Details[s.Outcome.Detail]++
	}
	if c != pipebench.ClassOK {
		r.keepMessage(c, s.Outcome)
	}
	if s.Outcome.Unreached {
		p.Unreached += uint64(s.Count)
	}
	if s.Ended.After(p.LastEnded) {
		p.LastEnded = s.Ended
	}
	lat, svc, wait, lag, readLag, answered := split(s)
	p.Latency.RecordValue(micros(lat))
	r.window.RecordValue(micros(lat))
	p.Service.RecordValue(micros(svc))
	if !s.Outcome.Written.IsZero() {
		p.Wait.RecordValue(micros(wait))
	}
	p.Lag.RecordValue(micros(lag))
	if answered {
		p.ReadLag.RecordValue(micros(readLag))
	}
	r.mu.Unlock()
}

// unsent records a send that never left pipebench: held back by the
// system under test (its Detail is the reason) or missed by pipebench.
func (r *Recorder) unsent(i int, s pipebench.Sample, owner pipebench.Owner) {
	l := r.live[i]
	n := uint64(s.Count)
	l.Unsent.Add(n)
	if owner == pipebench.OwnerSystem {
		l.HeldBack.Add(n)
	} else {
		l.Missed.Add(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.phases[i]
	if owner == pipebench.OwnerSystem {
		reason := s.Outcome.Detail
		if reason == "" {
			reason = s.Outcome.Class.String()
		}
		if _, ok := p.HeldBack[reason]; ok || len(p.HeldBack) < 64 {
			p.HeldBack[reason] += n
		} else {
			p.HeldBack["other"] += n
		}
		if at := s.Scheduled; !at.IsZero() && (p.FirstHeld.IsZero() || at.Before(p.FirstHeld)) {
			p.FirstHeld = at
		}
	} else {
		p.Missed += n
	}
	r.keepMessage(s.Outcome.Class, s.Outcome)
	if s.Ended.After(p.LastEnded) {
		p.LastEnded = s.Ended
	}
}

// split divides a send into latency (lag + wait + service: from the
// scheduled time to the answer), service (write to answer), wait (start
// to write), lag (scheduled to start) and read lag (the answer's arrival
// to the send's end); answered says whether the driver told when the
// answer arrived. Lag and read lag are the generator's own lateness:
// latency includes lag (the user waited for it as for the system, as
// wrk2 counts) but not read lag (the answer had arrived).
func split(s pipebench.Sample) (lat, svc, wait, lag, readLag time.Duration, answered bool) {
	written := s.Outcome.Written
	if written.IsZero() || written.Before(s.Started) || written.After(s.Ended) {
		written = s.Started
	}
	end := s.Ended
	if a := s.Outcome.Answered; !a.IsZero() && !a.Before(written) && !a.After(s.Ended) {
		end, answered = a, true
	}
	wait, svc = written.Sub(s.Started), end.Sub(written)
	lag = 0
	if !s.Scheduled.IsZero() {
		lag = max(s.Started.Sub(s.Scheduled), 0)
	}
	return lag + wait + svc, svc, wait, lag, s.Ended.Sub(end), answered
}

func (r *Recorder) keepMessage(c pipebench.Class, o pipebench.Outcome) {
	msg := o.Message
	if msg == "" {
		msg = o.Detail
	}
	if msg == "" || len(r.messages[c]) >= MaxMessages {
		return
	}
	for _, m := range r.messages[c] {
		if m == msg {
			return
		}
	}
	r.messages[c] = append(r.messages[c], msg)
}

// Messages returns the first distinct failure messages of each class that
// had any, keyed by class label ("refused", "timeout").
func (r *Recorder) Messages() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for c, ms := range r.messages {
		if len(ms) > 0 {
			out[pipebench.Class(c).String()] = append([]string(nil), ms...)
		}
	}
	return out
}

// WindowQuantiles are latency quantiles over one observation interval.
type WindowQuantiles struct {
	Count         int64
	P50, P90, P99 time.Duration
}

// TakeWindow returns the latency quantiles of the sends finished since the
// last call (from the scheduled time, like the phase histograms) and starts
// a new window. It gives the latency-over-time charts.
func (r *Recorder) TakeWindow() WindowQuantiles {
	r.mu.Lock()
	defer r.mu.Unlock()
	return takeWindow(r.window)
}

// takeWindow returns w's quantiles and resets it.
func takeWindow(w *hdrhistogram.Histogram) WindowQuantiles {
	q := WindowQuantiles{Count: w.TotalCount()}
	if q.Count > 0 {
		q.P50 = time.Duration(w.ValueAtQuantile(50)) * time.Microsecond
		q.P90 = time.Duration(w.ValueAtQuantile(90)) * time.Microsecond
		q.P99 = time.Duration(w.ValueAtQuantile(99)) * time.Microsecond
	}
	w.Reset()
	return q
}

// Dropped counts a send of n items of phase i, due at at, that the
// runner held back for reason (HeldMaxInFlight, HeldMaxInFlightBytes):
// the system under test had that many answers outstanding.
func (r *Recorder) Dropped(i, n int, reason string, at time.Time) {
	l := r.live[i]
	l.Dropped.Add(uint64(n))
	l.HeldBack.Add(uint64(n))
	if reason == HeldMaxInFlightBytes {
		l.DroppedForBytes.Add(uint64(n))
	}
	r.mu.Lock()
	p := r.phases[i]
	p.Batches[pipebench.ClassDropped]++
	p.Items[pipebench.ClassDropped] += uint64(n)
	p.HeldBack[reason] += uint64(n)
	if p.FirstHeld.IsZero() || at.Before(p.FirstHeld) {
		p.FirstHeld = at
	}
	r.mu.Unlock()
}

// Missed counts n items of phase i that pipebench did not send: due sends
// its pacer had not made when the phase's grace ran out.
func (r *Recorder) Missed(i int, n uint64) {
	r.live[i].Missed.Add(n)
	r.mu.Lock()
	r.phases[i].Missed += n
	r.mu.Unlock()
}

// Stats returns a copy of phase i's statistics so far.
func (r *Recorder) Stats(i int) SendStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.phases[i]
	out := *p
	out.Details = make(map[string]uint64, len(p.Details))
	for k, v := range p.Details {
		out.Details[k] = v
	}
	out.HeldBack = make(map[string]uint64, len(p.HeldBack))
	for k, v := range p.HeldBack {
		out.HeldBack[k] = v
	}
	out.Latency = hdrhistogram.Import(p.Latency.Export())
	out.Service = hdrhistogram.Import(p.Service.Export())
	out.Wait = hdrhistogram.Import(p.Wait.Export())
	out.Lag = hdrhistogram.Import(p.Lag.Export())
	out.ReadLag = hdrhistogram.Import(p.ReadLag.Export())
	out.DroppedForBytes = r.live[i].DroppedForBytes.Load()
	return out
}

// Arrivals records what reached the sink and which sends were accepted, and
// matches the two: end-to-end latency, duplicates, reordering and, at the
// end, loss. It implements pipebench.Arrivals and is safe for concurrent
// use. Memory is bounded by SeqSet's chunking and the histograms, never one
// entry per item.
type Arrivals struct {
	mu        sync.Mutex
	starts    []uint64 // first sequence number of each phase, ascending
	phases    []*arrivalPhase
	accepted  *SeqSet
	arrived   *SeqSet
	maxSeq    uint64
	faulted   atomic.Uint64
	unmatched atomic.Uint64
	// during counts unique arrivals by the phase running when they
	// arrived; index len(phases) is the drain after the last phase.
	during []atomic.Uint64
	now    atomic.Int32
	// OnDeliver, if set, is called with the phase of each unique arrival.
	live []*Live
	// pipes are the pipelines told apart (Pipeline), by name.
	pipes map[string]*pipeArrivals
	// window holds the end-to-end latency of the unique arrivals since
	// the last TakeWindow.
	window *hdrhistogram.Histogram
}

type arrivalPhase struct {
	delivered  uint64
	duplicates uint64
	reordered  uint64
	e2e        *hdrhistogram.Histogram
	last       time.Time
}

// deliver counts the first arrival of an item at at, its end-to-end
// latency e2e (µs), and whether it came late (reordered).
func (p *arrivalPhase) deliver(late bool, e2e int64, at time.Time) {
	p.delivered++
	if late {
		p.reordered++
	}
	p.e2e.RecordValue(e2e)
	if at.After(p.last) {
		p.last = at
	}
}

// add counts the arrivals of phase p in st: its own items, duplicates,
// reordered items, end-to-end latencies and last arrival.
func (st *ArrivalStats) add(p *arrivalPhase) {
	st.Own += p.delivered
	st.Duplicates += p.duplicates
	st.Reordered += p.reordered
	st.E2E.Merge(p.e2e)
	if p.last.After(st.Last) {
		st.Last = p.last
	}
}

var (
	_ pipebench.Arrivals        = (*Arrivals)(nil)
	_ pipebench.OrderedArrivals = (*Arrivals)(nil)
)

// NewArrivals returns an arrival recorder for n phases; live, if not nil,
// gets each phase's Delivered counter updated.
func NewArrivals(n int, live func(i int) *Live) *Arrivals {
	a := &Arrivals{accepted: NewSeqSet(), arrived: NewSeqSet(), phases: make([]*arrivalPhase, n), during: make([]atomic.Uint64, n+1), window: newHist()}
	for i := range a.phases {
		a.phases[i] = &arrivalPhase{e2e: newHist()}
	}
	if live != nil {
		for i := 0; i < n; i++ {
			a.live = append(a.live, live(i))
		}
	}
	return a
}

// StartPhase declares that phase i's sequence numbers begin at first. Call
// it before the phase's first send, in phase order.
func (a *Arrivals) StartPhase(i int, first uint64) {
	a.mu.Lock()
	for len(a.starts) <= i {
		a.starts = append(a.starts, first)
	}
	a.starts[i] = first
	a.mu.Unlock()
}

// SetRunning declares that phase i is running from now on (len(phases) for
// the drain): arrivals from now on count as delivered during it.
func (a *Arrivals) SetRunning(i int) { a.now.Store(int32(i)) }

// DeliveredDuring returns the unique items that arrived while phase i was
// running (i = number of phases: during the drain).
func (a *Arrivals) DeliveredDuring(i int) uint64 {
	if i < 0 || i >= len(a.during) {
		return 0
	}
	return a.during[i].Load()
}

// phaseOf returns the phase seq was sent in. Call with mu held.
func (a *Arrivals) phaseOf(seq uint64) int {
	i := sort.Search(len(a.starts), func(i int) bool { return a.starts[i] > seq }) - 1
	if i < 0 {
		i = 0
	}
	return i
}

// Accept records that the send of seq..seq+n-1 was answered ok.
func (a *Arrivals) Accept(seq uint64, n int) {
	a.mu.Lock()
	a.accepted.AddRange(seq, n)
	a.mu.Unlock()
}

// Arrive implements pipebench.Arrivals: an item that arrives after one
// with a higher sequence number counts as reordered.
func (a *Arrivals) Arrive(seq uint64, sent, at time.Time) { a.arrive(seq, sent, at, orderBySeq) }

// ArriveOrdered implements pipebench.OrderedArrivals: the sink says
// whether the item is reordered.
func (a *Arrivals) ArriveOrdered(seq uint64, sent, at time.Time, reordered bool) {
	o := inOrder
	if reordered {
		o = outOfOrder
	}
	a.arrive(seq, sent, at, o)
}

// How an arrival's order is judged.
const (
	orderBySeq = iota // against the highest sequence number arrived
	inOrder           // the sink says it is in order
	outOfOrder        // the sink says it is reordered
)

func (a *Arrivals) arrive(seq uint64, sent, at time.Time, order int) {
	a.mu.Lock()
	i := a.phaseOf(seq)
	p := a.phases[i]
	if a.arrived.Add(seq) {
		p.duplicates++
		a.mu.Unlock()
		return
	}
	p.deliver(seq < a.maxSeq && order == orderBySeq || order == outOfOrder, micros(at.Sub(sent)), at)
	a.maxSeq = max(a.maxSeq, seq)
	a.window.RecordValue(micros(at.Sub(sent)))
	a.mu.Unlock()
	if i < len(a.live) {
		a.live[i].Delivered.Add(1)
	}
	if r := int(a.now.Load()); r >= 0 && r < len(a.during) {
		a.during[r].Add(1)
	}
}

// TakeWindow returns the end-to-end latency quantiles of the unique
// arrivals since the last call and starts a new window. It gives the
// end-to-end latency-over-time charts.
func (a *Arrivals) TakeWindow() WindowQuantiles {
	a.mu.Lock()
	defer a.mu.Unlock()
	return takeWindow(a.window)
}

// Faulted implements pipebench.Arrivals.
func (a *Arrivals) Faulted(n int) { a.faulted.Add(uint64(n)) }

// Unmatched implements pipebench.Arrivals.
func (a *Arrivals) Unmatched(n int) { a.unmatched.Add(uint64(n)) }

// Outstanding returns how many accepted items have not arrived yet; with
// several pipelines told apart, how many copies, summed over the
// pipelines.
func (a *Arrivals) Outstanding() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pipes) > 0 {
		return a.outstandingPipelines()
	}
	return a.arrived.MissingFrom(a.accepted, 0, ^uint64(0))
}

// Delivered returns the number of unique items that arrived.
func (a *Arrivals) Delivered() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.arrived.Len()
}

// ArrivalStats is what reached the sink: Delivered counts the unique items
// that arrived while the phase ran (whenever they were sent); the other
// counts are about the phase's own sends.
type ArrivalStats struct {
	Delivered, Duplicates, Reordered uint64
	// Own counts the phase's own items that arrived, whenever they did
	// (a blast's completion).
	Own uint64
	// Lost counts items accepted by the pipeline that never arrived.
	Lost uint64
	// Stray counts items that arrived although their send was not
	// answered ok (a timeout that still got through, a refused batch the
	// pipeline delivered anyway).
	Stray uint64
	E2E   *hdrhistogram.Histogram // µs
	Last  time.Time               // last arrival
	// Pipelines holds each pipeline's own account when the sink told
	// several apart (nil otherwise). Delivered, Reordered and E2E above
	// then count each item once, at its first copy; Duplicates and Lost
	// are the pipelines' summed: an item one pipeline lost is lost even
	// though the others delivered it.
	Pipelines map[string]PipelineStats
}

// Stats returns phase i's arrival statistics; hi is the first sequence
// number after the phase (the next phase's first, or the run's next seq).
func (a *Arrivals) Stats(i int, hi uint64) ArrivalStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	var lo uint64
	if i < len(a.starts) {
		lo = a.starts[i]
	}
	p := a.phases[i]
	st := ArrivalStats{
		Delivered:  a.DeliveredDuring(i),
		Own:        p.delivered,
		Duplicates: p.duplicates,
		Reordered:  p.reordered,
		Lost:       a.arrived.MissingFrom(a.accepted, lo, hi),
		Stray:      a.accepted.MissingFrom(a.arrived, lo, hi),
		E2E:        hdrhistogram.Import(p.e2e.Export()),
		Last:       p.last,
	}
	if len(a.pipes) > 0 {
		var lost uint64
		st.Pipelines, lost = a.pipelineStats(i, i+1, lo, hi, false)
		if hi > lo {
			st.Lost = lost
		}
	}
	return st
}

// Totals returns the faulted and unmatched counts of the whole run.
func (a *Arrivals) Totals() (faulted, unmatched uint64) {
	return a.faulted.Load(), a.unmatched.Load()
}

// PhaseStart returns the first sequence number of phase i (0 if unknown).
func (a *Arrivals) PhaseStart(i int) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i < len(a.starts) {
		return a.starts[i]
	}
	return 0
}

// RunStats returns the arrival statistics of a whole run of n phases whose
// sequence numbers span [lo, hi): loss over the whole range, and the
// deliveries, duplicates, reorderings and end-to-end latencies of every
// phase plus those delivered during the drain.
func (a *Arrivals) RunStats(n int, lo, hi uint64) ArrivalStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := ArrivalStats{
		Lost:  a.arrived.MissingFrom(a.accepted, lo, hi),
		Stray: a.accepted.MissingFrom(a.arrived, lo, hi),
		E2E:   newHist(),
	}
	for i := 0; i < n && i < len(a.phases); i++ {
		st.add(a.phases[i])
	}
	for i := range a.during { // every phase, and the drain after the last
		st.Delivered += a.during[i].Load()
	}
	if len(a.pipes) > 0 {
		var lost uint64
		st.Pipelines, lost = a.pipelineStats(0, n, lo, hi, true)
		if hi > lo {
			st.Lost = lost
		}
	}
	return st
}
