// Package schedule turns a phase of a plan into a send schedule. A Pacer is
// a pure function of elapsed time: it says when send n is due and how many
// are due by a given time, so it is tested in virtual time. Run drives one in
// real time without one sleep per send: at each wake-up it emits every send
// that has fallen due, each with its own scheduled time.
package schedule

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/pipebench/pipebench"
)

// segment is a stretch [t0, t1) seconds over which the send rate moves
// linearly from r0 to r1 sends per second; n0 is the number of sends due
// before t0 (a real number: the integral of the rate).
type segment struct {
	t0, t1 float64
	r0, r1 float64
	n0     float64
}

// area is the number of sends due within the segment.
func (s segment) area() float64 { return (s.r0 + s.r1) / 2 * (s.t1 - s.t0) }

// count returns the sends due from t0 to t (t within the segment).
func (s segment) count(t float64) float64 {
	x := t - s.t0
	if x <= 0 {
		return 0
	}
	slope := 0.0
	if s.t1 > s.t0 {
		slope = (s.r1 - s.r0) / (s.t1 - s.t0)
	}
	return s.r0*x + slope*x*x/2
}

// solve returns the offset x from t0 at which d sends have fallen due in
// this segment: the root of slope/2·x² + r0·x − d = 0, written in the form
// that stays exact when the slope or r0 is zero.
func (s segment) solve(d float64) float64 {
	if d <= 0 {
		return 0
	}
	slope := 0.0
	if s.t1 > s.t0 {
		slope = (s.r1 - s.r0) / (s.t1 - s.t0)
	}
	den := s.r0 + math.Sqrt(math.Max(0, s.r0*s.r0+2*slope*d))
	if den <= 0 {
		return s.t1 - s.t0
	}
	return 2 * d / den
}

// Pacer is the send schedule of one phase. It is immutable after New and
// safe for concurrent use.
type Pacer struct {
	segs     []segment
	dur      float64 // seconds
	sends    uint64
	batch    float64
	blast    bool
	duration time.Duration
}

// staggerPieces is how many linear pieces approximate the start-up ramp of
// a staggered phase whose profile is itself a ramp.
const staggerPieces = 64

// New builds the pacer of a phase. The send rate is the profile's item rate
// divided by the phase's batch size.
//
// Profiles: constant (Rate), ramp (From to To, linear), steps (in order),
// burst (Rate, with a spike of Burst.Rate lasting Burst.For at the start of
// every Burst.Every), blast (Count items, all due at once: the runner's
// Workers send them closed-model). Stagger multiplies the rate by t/Stagger
// during the first Stagger of the phase.
func New(ph pipebench.PlanPhase) (*Pacer, error) {
	batch := ph.BatchSize
	if batch < 1 {
		batch = 1
	}
	p := &Pacer{batch: float64(batch), duration: ph.Duration.D(), dur: ph.Duration.D().Seconds()}
	pr := ph.Profile
	if pr.Kind == pipebench.ProfileBlast {
		p.blast = true
		p.sends = (pr.Count + uint64(batch) - 1) / uint64(batch)
		return p, nil
	}
	b := p.batch
	var pieces []segment // rates in items/s first, divided by batch below
	switch pr.Kind {
	case pipebench.ProfileConstant, "":
		pieces = []segment{{t0: 0, t1: p.dur, r0: float64(pr.Rate), r1: float64(pr.Rate)}}
	case pipebench.ProfileRamp:
		pieces = []segment{{t0: 0, t1: p.dur, r0: float64(pr.From), r1: float64(pr.To)}}
	case pipebench.ProfileSteps:
		t := 0.0
		for _, st := range pr.Steps {
			d := st.Duration.D().Seconds()
			pieces = append(pieces, segment{t0: t, t1: t + d, r0: float64(st.Rate), r1: float64(st.Rate)})
			t += d
		}
		if p.dur == 0 {
			p.dur, p.duration = t, time.Duration(t*float64(time.Second))
		}
	case pipebench.ProfileBurst:
		if pr.Burst == nil || pr.Burst.Every.D() <= 0 {
			return nil, fmt.Errorf("burst profile needs burst.every > 0")
		}
		every, spike := pr.Burst.Every.D().Seconds(), pr.Burst.For.D().Seconds()
		for t := 0.0; t < p.dur; t += every {
			end := math.Min(t+spike, p.dur)
			pieces = append(pieces, segment{t0: t, t1: end, r0: float64(pr.Burst.Rate), r1: float64(pr.Burst.Rate)})
			if next := math.Min(t+every, p.dur); next > end {
				pieces = append(pieces, segment{t0: end, t1: next, r0: float64(pr.Rate), r1: float64(pr.Rate)})
			}
		}
	default:
		return nil, fmt.Errorf("unknown profile %q", pr.Kind)
	}
	for _, s := range pieces {
		if s.r0 < 0 || s.r1 < 0 || math.IsNaN(s.r0) || math.IsNaN(s.r1) || math.IsInf(s.r0, 0) || math.IsInf(s.r1, 0) {
			return nil, fmt.Errorf("rate must be a finite number >= 0")
		}
	}
	if st := ph.Stagger.D().Seconds(); st > 0 {
		pieces = stagger(pieces, math.Min(st, p.dur))
	}
	n := 0.0
	for _, s := range pieces {
		if s.t1 <= s.t0 {
			continue
		}
		s.r0, s.r1, s.n0 = s.r0/b, s.r1/b, n
		p.segs = append(p.segs, s)
		n += s.area()
	}
	// Send k is due when the integral reaches k, so sends 0..ceil(N)-1
	// fall within the phase (a tolerance keeps 2000.0000001 at 2000).
	p.sends = uint64(math.Ceil(n - 1e-9))
	if n < 1e-9 {
		p.sends = 0
	}
	return p, nil
}

// stagger scales the rate by t/st over [0, st), splitting segments at st and
// approximating the product by linear pieces.
func stagger(in []segment, st float64) []segment {
	var out []segment
	for _, s := range in {
		if s.t0 >= st {
			out = append(out, s)
			continue
		}
		end := math.Min(s.t1, st)
		rateAt := func(t float64) float64 {
			r := s.r0
			if s.t1 > s.t0 {
				r += (s.r1 - s.r0) * (t - s.t0) / (s.t1 - s.t0)
			}
			return r * t / st
		}
		pieces := 1
		if s.r0 != s.r1 {
			pieces = staggerPieces
		}
		for i := 0; i < pieces; i++ {
			a := s.t0 + (end-s.t0)*float64(i)/float64(pieces)
			z := s.t0 + (end-s.t0)*float64(i+1)/float64(pieces)
			out = append(out, segment{t0: a, t1: z, r0: rateAt(a), r1: rateAt(z)})
		}
		if s.t1 > st {
			r := s.r0
			if s.t1 > s.t0 {
				r += (s.r1 - s.r0) * (st - s.t0) / (s.t1 - s.t0)
			}
			out = append(out, segment{t0: st, t1: s.t1, r0: r, r1: s.r1})
		}
	}
	return out
}

// Sends returns the number of sends in the phase.
func (p *Pacer) Sends() uint64 { return p.sends }

// Duration returns the phase's length.
func (p *Pacer) Duration() time.Duration { return p.duration }

// At returns when send n (0-based) is due, as an offset from the phase
// start, and false when n is past the phase's last send.
func (p *Pacer) At(n uint64) (time.Duration, bool) {
	if n >= p.sends {
		return 0, false
	}
	if p.blast {
		return 0, true
	}
	k := float64(n)
	// The first segment whose sends reach past k holds send k; zero-rate
	// segments have no area and are never chosen.
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].n0+p.segs[i].area() > k })
	if i >= len(p.segs) {
		i = len(p.segs) - 1
	}
	s := p.segs[i]
	t := s.t0 + s.solve(k-s.n0)
	if t > s.t1 {
		t = s.t1
	}
	return time.Duration(math.Round(t * float64(time.Second))), true
}

// Due returns how many sends are due by elapsed (those whose At <= elapsed).
func (p *Pacer) Due(elapsed time.Duration) uint64 {
	if elapsed < 0 || p.sends == 0 {
		return 0
	}
	if p.blast {
		return p.sends
	}
	// Count by search over At, so Due and At always agree.
	return uint64(sort.Search(int(p.sends), func(i int) bool {
		at, _ := p.At(uint64(i))
		return at > elapsed
	}))
}

// RateAt returns the target rate in items per second at elapsed.
func (p *Pacer) RateAt(elapsed time.Duration) float64 {
	if p.blast {
		return 0
	}
	t := elapsed.Seconds()
	for _, s := range p.segs {
		if t >= s.t0 && t < s.t1 {
			r := s.r0
			if s.t1 > s.t0 {
				r += (s.r1 - s.r0) * (t - s.t0) / (s.t1 - s.t0)
			}
			return r * p.batch
		}
	}
	return 0
}

// Run drives p in real time (or in a testing/synctest bubble's virtual time)
// from start. It calls due(n, scheduled) for every send in order once it has
// fallen due. When it wakes up late it emits every overdue send at once, each
// with its own scheduled time, so a timer's granularity never caps the rate.
// It returns when every send was emitted, due returned false, or ctx is
// done, and reports how many sends it emitted.
func Run(ctx context.Context, p *Pacer, start time.Time, due func(n uint64, at time.Time) bool) uint64 {
	var n uint64
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for n < p.sends {
		if ctx.Err() != nil {
			return n
		}
		now := time.Since(start)
		for n < p.sends {
			at, _ := p.At(n)
			if at > now {
				break
			}
			n++
			if !due(n-1, start.Add(at)) {
				return n
			}
		}
		if n >= p.sends {
			break
		}
		next, _ := p.At(n)
		wait := next - time.Since(start)
		if wait <= 0 {
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return n
		case <-timer.C:
		}
	}
	return n
}
