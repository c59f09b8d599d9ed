package effecthist

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
)

// Effects records the effects an observer saw: how many, the first and
// last, and the event-to-effect latency of those whose event's send time
// is known. The zero value is not ready: use NewEffects. Not safe for
// concurrent use: the observer's own lock guards it.
type Effects struct {
	buckets  *Buckets
	all      *hdrhistogram.Histogram
	count    int64
	first    time.Time
	last     time.Time
	noSent   int64
	negative int64
	records  []record // every effect, in the order added
}

// record is one effect: when it took effect and, if the send time was
// known, its latency (-1 when not).
type record struct {
	at  time.Time
	lat time.Duration
}

// NewEffects returns a recorder of no effects yet.
func NewEffects() *Effects {
	return &Effects{buckets: New(), all: newHistogram()}
}

func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, 3_600_000_000, 3) }

// Add records an effect taken at at, of an event sent at sent (zero:
// unknown, no latency). An effect stamped before its event was sent
// counts a latency of 0 (the least, 1 µs) and as clock skew.
func (e *Effects) Add(at, sent time.Time) {
	e.count++
	if e.first.IsZero() || at.Before(e.first) {
		e.first = at
	}
	if at.After(e.last) {
		e.last = at
	}
	if sent.IsZero() {
		e.noSent++
		e.records = append(e.records, record{at: at, lat: -1})
		return
	}
	us := at.Sub(sent).Microseconds()
	if us < 0 {
		e.negative++
		us = 0
	}
	us = max(us, 1)
	_ = e.all.RecordValue(us)
	e.buckets.Add(time.Duration(us) * time.Microsecond)
	e.records = append(e.records, record{at: at, lat: time.Duration(us) * time.Microsecond})
}

// Points are the effects counter ("effects") and the latency buckets at
// at.
func (e *Effects) Points(at time.Time) []pipebench.Point {
	pts := []pipebench.Point{{Name: "effects", Kind: pipebench.KindCounter, At: at, Value: float64(e.count)}}
	return append(pts, e.buckets.Points(at)...)
}

// Summary is a view of the effects.
type Summary struct {
	Count       int64         // effects seen
	First, Last time.Time     // times of the first and last effect
	P50, P90    time.Duration // event-to-effect latency quantiles
	P99, Max    time.Duration
	NoSentTime  int64 // effects without a readable send time (no latency)
	ClockSkew   int64 // effects stamped before their event was sent (counted as 0)
}

// Summary returns the numbers so far.
func (e *Effects) Summary() Summary {
	s := Summary{Count: e.count, First: e.first, Last: e.last, NoSentTime: e.noSent, ClockSkew: e.negative}
	s.quantiles(e.all)
	return s
}

// Between returns the numbers of the effects that took effect in
// [start, end): a phase's own latency quantiles, count and first and last
// effect.
func (e *Effects) Between(start, end time.Time) Summary {
	h := newHistogram()
	var s Summary
	for _, r := range e.records {
		if r.at.Before(start) || !r.at.Before(end) {
			continue
		}
		s.Count++
		if s.First.IsZero() || r.at.Before(s.First) {
			s.First = r.at
		}
		if r.at.After(s.Last) {
			s.Last = r.at
		}
		if r.lat < 0 {
			s.NoSentTime++
			continue
		}
		_ = h.RecordValue(max(r.lat.Microseconds(), 1))
	}
	s.quantiles(h)
	return s
}

// quantiles sets the latency quantiles from h, when it holds any.
func (s *Summary) quantiles(h *hdrhistogram.Histogram) {
	if h.TotalCount() > 0 {
		s.P50 = time.Duration(h.ValueAtQuantile(50)) * time.Microsecond
		s.P90 = time.Duration(h.ValueAtQuantile(90)) * time.Microsecond
		s.P99 = time.Duration(h.ValueAtQuantile(99)) * time.Microsecond
		s.Max = time.Duration(h.Max()) * time.Microsecond
	}
}
