package pipebench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
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

func (s segment) slope() float64 {
	if s.t1 > s.t0 {
		return (s.r1 - s.r0) / (s.t1 - s.t0)
	}
	return 0
}

// solve returns the offset x from t0 at which d sends have fallen due in
// this segment: the root of slope/2·x² + r0·x − d = 0, written in the form
// that stays exact when the slope or r0 is zero.
func (s segment) solve(d float64) float64 {
	if d <= 0 {
		return 0
	}
	den := s.r0 + math.Sqrt(math.Max(0, s.r0*s.r0+2*s.slope()*d))
	if den <= 0 {
		return s.t1 - s.t0
	}
	return 2 * d / den
}

// Curve is the send schedule of one phase as a pure function of elapsed
// time: the rate is piecewise linear, and send k is due when the integral
// of the send rate reaches k. It is immutable and safe for concurrent use;
// the schedule package drives one in real time.
type Curve struct {
	segs     []segment
	expected float64 // the integral of the send rate over the phase
	sends    uint64
	batch    float64
	blast    bool
	duration time.Duration
	// prod is the schedule of a producers profile (nil for the others).
	prod *producers
}

// producers is the send schedule of Count producers each sending every
// every seconds: in each period, producer j (in order of its moment)
// sends at offsets[j], sorted.
type producers struct {
	every   float64
	offsets []float64
}

// newProducers lays out the moments of a producers profile's producers
// within one period.
func newProducers(pr Profile) *producers {
	n := int(pr.Count)
	p := &producers{every: pr.Every.D().Seconds(), offsets: make([]float64, n)}
	switch pr.Align {
	case AlignStaggered:
		for j := range p.offsets {
			p.offsets[j] = p.every * float64(j) / float64(n)
		}
	case AlignJittered:
		// A small generator of our own (splitmix64), so the moments are
		// the same in every run and every process that compiles the plan.
		x := pr.Seed*0x9E3779B97F4A7C15 + uint64(n)
		for j := range p.offsets {
			x += 0x9E3779B97F4A7C15
			z := x
			z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
			z = (z ^ z>>27) * 0x94D049BB133111EB
			z ^= z >> 31
			p.offsets[j] = p.every * float64(z>>11) / (1 << 53)
		}
		sort.Float64s(p.offsets)
	}
	return p
}

// staggerPieces is how many linear pieces approximate the start-up ramp of
// a staggered phase whose profile is itself a ramp.
const staggerPieces = 64

// Curve builds the phase's send schedule. The send rate is the profile's
// item rate divided by the batch size.
//
// Profiles: constant (Rate), ramp (From to To, linear), steps (in order),
// burst (Rate, with a spike of Burst.Rate lasting Burst.For at the start of
// every Burst.Every), blast (Count items, all due at once: Workers send them
// closed-model), producers (Count producers, each one send every Every, at
// its moment within it: send n is producer n mod Count's in the order of
// their moments). Stagger multiplies the rate by t/Stagger during the first
// Stagger of the phase.
func (ph PlanPhase) Curve() (*Curve, error) {
	if err := ph.Profile.Validate(); err != nil {
		return nil, err
	}
	b := float64(ph.batch())
	c := &Curve{batch: b, duration: ph.Duration.D()}
	pr := ph.Profile
	if pr.Kind == ProfileBlast {
		c.blast = true
		c.sends = (pr.Count + uint64(b) - 1) / uint64(b)
		return c, nil
	}
	dur := ph.Duration.D().Seconds()
	if pr.Kind == ProfileProducers {
		c.prod = newProducers(pr)
		n := uint64(len(c.prod.offsets))
		full := math.Floor(dur / c.prod.every)
		if !(full*float64(n)*b <= MaxItems) {
			return nil, tooManyItems(full * float64(n) * b)
		}
		rest := dur - full*c.prod.every
		c.sends = uint64(full) * n
		for _, o := range c.prod.offsets {
			if o < rest-1e-12 {
				c.sends++
			}
		}
		c.expected = float64(c.sends)
		return c, nil
	}
	var pieces []segment // rates in items/s first, divided by batch below
	switch pr.Kind {
	case ProfileConstant, "":
		pieces = []segment{{t0: 0, t1: dur, r0: float64(pr.Rate), r1: float64(pr.Rate)}}
	case ProfileRamp:
		pieces = []segment{{t0: 0, t1: dur, r0: float64(pr.From), r1: float64(pr.To)}}
	case ProfileSteps:
		t := 0.0
		for _, st := range pr.Steps {
			d := st.Duration.D().Seconds()
			pieces = append(pieces, segment{t0: t, t1: t + d, r0: float64(st.Rate), r1: float64(st.Rate)})
			t += d
		}
		if dur == 0 {
			dur, c.duration = t, time.Duration(t*float64(time.Second))
		}
	case ProfileBurst:
		every, spike := pr.Burst.Every.D().Seconds(), pr.Burst.For.D().Seconds()
		if math.Ceil(dur/every) > MaxBurstPeriods {
			return nil, fmt.Errorf("burst.every: %s makes more than %s bursts in %s: make every longer", pr.Burst.Every, FormatCount(MaxBurstPeriods), ph.Duration)
		}
		for t := 0.0; t < dur; t += every {
			end := math.Min(t+spike, dur)
			pieces = append(pieces, segment{t0: t, t1: end, r0: float64(pr.Burst.Rate), r1: float64(pr.Burst.Rate)})
			if next := math.Min(t+every, dur); next > end {
				pieces = append(pieces, segment{t0: end, t1: next, r0: float64(pr.Rate), r1: float64(pr.Rate)})
			}
		}
	}
	if st := ph.Stagger.D().Seconds(); st > 0 {
		pieces = stagger(pieces, math.Min(st, dur))
	}
	n := 0.0
	for _, s := range pieces {
		if s.t1 <= s.t0 {
			continue
		}
		s.r0, s.r1, s.n0 = s.r0/b, s.r1/b, n
		c.segs = append(c.segs, s)
		n += s.area()
	}
	// Send k is due when the integral reaches k, so sends 0..ceil(N)-1
	// fall within the phase (a tolerance keeps 2000.0000001 at 2000).
	if !(n*b <= MaxItems) { // NaN too
		return nil, tooManyItems(n * b)
	}
	c.expected = n
	c.sends = uint64(math.Ceil(n - 1e-9))
	if n < 1e-9 {
		c.sends = 0
	}
	return c, nil
}

// ErrTooManyItems marks a plan of more than MaxItems items.
var ErrTooManyItems = errors.New("more items than a count holds exactly")

// tooManyItems is the error of a phase of more than MaxItems items.
func tooManyItems(items float64) error {
	return fmt.Errorf("%s items, %w (%s): give a lower rate or a shorter phase",
		FormatCount(items), ErrTooManyItems, FormatCount(MaxItems))
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
			return (s.r0 + s.slope()*(t-s.t0)) * t / st
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
			out = append(out, segment{t0: st, t1: s.t1, r0: s.r0 + s.slope()*(st-s.t0), r1: s.r1})
		}
	}
	return out
}

// Sends returns the number of sends in the phase.
func (c *Curve) Sends() uint64 { return c.sends }

// Expected returns the number of sends the rate adds up to over the phase,
// before rounding up to whole sends: below 1, the phase is too short for
// its rate.
func (c *Curve) Expected() float64 { return c.expected }

// Duration returns the phase's length.
func (c *Curve) Duration() time.Duration { return c.duration }

// Blast reports whether every send is due at once (a closed-model phase).
func (c *Curve) Blast() bool { return c.blast }

// At returns when send n (0-based) is due, as an offset from the phase
// start, and false when n is past the phase's last send.
func (c *Curve) At(n uint64) (time.Duration, bool) {
	if n >= c.sends {
		return 0, false
	}
	if c.blast {
		return 0, true
	}
	if p := c.prod; p != nil {
		per := uint64(len(p.offsets))
		t := float64(n/per)*p.every + p.offsets[n%per]
		return time.Duration(math.Round(t * float64(time.Second))), true
	}
	k := float64(n)
	// The first segment whose sends reach past k holds send k; zero-rate
	// segments have no area and are never chosen.
	i := sort.Search(len(c.segs), func(i int) bool { return c.segs[i].n0+c.segs[i].area() > k })
	if i >= len(c.segs) {
		i = len(c.segs) - 1
	}
	s := c.segs[i]
	t := min(s.t0+s.solve(k-s.n0), s.t1)
	return time.Duration(math.Round(t * float64(time.Second))), true
}

// Due returns how many sends are due by elapsed (those whose At <= elapsed).
func (c *Curve) Due(elapsed time.Duration) uint64 {
	if elapsed < 0 || c.sends == 0 {
		return 0
	}
	if c.blast {
		return c.sends
	}
	// Count by search over At, so Due and At always agree.
	return uint64(sort.Search(int(c.sends), func(i int) bool {
		at, _ := c.At(uint64(i))
		return at > elapsed
	}))
}

// RateAt returns the target rate in items per second at elapsed (for
// producers, their mean rate: Count × batch / Every).
func (c *Curve) RateAt(elapsed time.Duration) float64 {
	if c.blast {
		return 0
	}
	if p := c.prod; p != nil {
		if elapsed < 0 || elapsed >= c.duration {
			return 0
		}
		return float64(len(p.offsets)) * c.batch / p.every
	}
	t := elapsed.Seconds()
	for _, s := range c.segs {
		if t >= s.t0 && t < s.t1 {
			return (s.r0 + s.slope()*(t-s.t0)) * c.batch
		}
	}
	return 0
}

// Validate checks a profile on its own: rates finite and not negative, a
// burst's spikes shorter than their period and above the base rate, steps
// and blasts not empty, a blast's workers within 1..MaxWorkers. Each line
// of the error starts with the key it is about (burst.for: ...).
func (p Profile) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	finite := func(key string, r Rate) {
		if r < 0 || math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
			add("%s: must be a finite rate of 0/s or more", key)
		}
	}
	switch p.Kind {
	case ProfileConstant, "":
		finite("rate", p.Rate)
	case ProfileRamp:
		finite("ramp.from", p.From)
		finite("ramp.to", p.To)
	case ProfileSteps:
		if len(p.Steps) == 0 {
			add("steps: is empty: give a list of {rate, duration}")
		}
		for i, st := range p.Steps {
			finite(fmt.Sprintf("steps[%d].rate", i), st.Rate)
			if st.Duration <= 0 {
				add("steps[%d].duration: must be more than 0", i)
			}
		}
	case ProfileBurst:
		finite("rate", p.Rate)
		if p.Burst == nil {
			add("burst: missing: a burst needs rate, for and every, like {rate: 2000/s, for: 10s, every: 1m}")
			break
		}
		finite("burst.rate", p.Burst.Rate)
		if p.Burst.Every <= 0 {
			add("burst.every: must be more than 0")
		} else if p.Burst.For <= 0 || p.Burst.For >= p.Burst.Every {
			add("burst.for: %s must be more than 0 and less than every (%s)", p.Burst.For, p.Burst.Every)
		}
		if p.Burst.Rate <= p.Rate {
			add("burst.rate: %s must be above the base rate %s", p.Burst.Rate, p.Rate)
		}
	case ProfileBlast:
		if p.Count == 0 || p.Count > MaxItems {
			add("blast.count: %s is outside 1..%s", FormatCount(float64(p.Count)), FormatCount(MaxItems))
		}
		if p.Workers < 1 || p.Workers > MaxWorkers {
			add("blast.workers: %d is outside 1..%s: each worker is a sender of its own for the whole phase", p.Workers, FormatCount(MaxWorkers))
		}
	case ProfileProducers:
		if p.Count == 0 || p.Count > MaxProducers {
			add("producers.count: %d is outside 1..%s", p.Count, FormatCount(MaxProducers))
		}
		if p.Every <= 0 {
			add("producers.every: must be more than 0: how often each one sends, like 30s")
		}
		if !slices.Contains(Alignments, p.Align) {
			add("producers.align: %q is not one of %s%s", p.Align, strings.Join(Alignments, ", "), DidYouMean(p.Align, Alignments))
		}
	default:
		add("unknown profile %q", p.Kind)
	}
	return errors.Join(errs...)
}

// MaxProducers bounds a producers profile's count.
const MaxProducers = 10_000_000

// Validate checks a phase as the runner will pace it: its profile, a
// stagger no longer than the phase (and none with producers, which have
// align), max_in_flight within its bounds,
// max_in_flight_bytes not below 1KiB (0: the default), its fault policy (outage windows
// inside the phase), and a load a generator can pace (MaxSendRate,
// MaxBurstPeriods). Each line of the error starts with the key it is about,
// as the scenario writes it (stagger: ..., faults.outages[0]: ...).
func (ph PlanPhase) Validate() error {
	var errs []error
	if err := ph.Profile.Validate(); err != nil {
		errs = append(errs, err)
	}
	if ph.Profile.Kind == ProfileProducers && ph.Stagger > 0 {
		errs = append(errs, fmt.Errorf("stagger: does not apply to producers: give align: staggered to spread them"))
	}
	if !ph.Blast() && ph.Stagger > ph.Duration && ph.Duration > 0 {
		errs = append(errs, fmt.Errorf("stagger: %s is longer than the phase (%s): the rate would never reach its target", ph.Stagger, ph.Duration))
	}
	if ph.MaxInFlight < 1 || ph.MaxInFlight > MaxInFlightLimit {
		errs = append(errs, fmt.Errorf("max_in_flight: %d is outside 1..%s: each send in flight holds a goroutine or a request's bytes", ph.MaxInFlight, FormatCount(MaxInFlightLimit)))
	}
	if ph.MaxInFlightBytes != 0 && ph.MaxInFlightBytes < MinMaxInFlightBytes {
		errs = append(errs, fmt.Errorf("max_in_flight_bytes: %s is below 1KiB: give the most bytes of requests awaiting answers, like 512MiB", FormatBytes(ph.MaxInFlightBytes)))
	}
	errs = append(errs, Prefixed("faults", ph.Faults.Validate(ph.Duration))...)
	errs = append(errs, ph.checkGenerable()...)
	return errors.Join(errs...)
}
