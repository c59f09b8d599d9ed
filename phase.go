package pipebench

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// What a plan may ask of the machine. A plan beyond them is refused when
// it is decoded and compiled, before anything is allocated for it: each
// bounds something pipebench holds in memory or does per unit of time.
const (
	// MaxSendRate is the most sends per second a phase may ask for (its
	// rate divided by the batch size, at its peak). One generator process
	// sends some 10^5 a second per core; ten million is more than a fleet
	// of shards is asked for here, and refuses plans like 10^9/s that no
	// machine generates (the pacer would spend the run counting them
	// dropped).
	MaxSendRate = 10_000_000
	// MaxItems is the most items a plan may send in all: a count in a
	// Result is a float64, exact up to 2^53; a plan beyond it would print
	// and compare counts it cannot hold (--rate 1e308 made 2^63).
	MaxItems = 1 << 53
	// MaxBurstPeriods is the most burst periods (every) a phase may hold:
	// the pacer keeps two pieces of its rate curve per period.
	MaxBurstPeriods = 100_000
	// MaxWorkers is the most concurrent senders of a blast: each is a
	// goroutine for the whole phase.
	MaxWorkers = 10_000
	// MaxInFlightLimit is the highest max_in_flight: sends awaiting their
	// answer each hold a goroutine or a request buffer.
	MaxInFlightLimit = 100_000
	// MinTick and MaxTick bound a phase's tick: the pacer never wakes up
	// more often than every 100µs, and a tick past 100ms would make the
	// sends of a tick a burst of its own.
	MinTick = 100 * time.Microsecond
	MaxTick = 100 * time.Millisecond
	// MinInterval is the shortest observation interval. Process CPU time
	// advances in 10 ms ticks and a collector's batch processor sends every
	// 200 ms by default: over shorter intervals, rates read as stalls and
	// shortfalls that did not happen (a 20 ms interval gave 60 false
	// stall detections in a 16 s run against the embedded collector).
	MinInterval = Duration(100 * time.Millisecond)
	// MinMaxInFlightBytes is the smallest max_in_flight_bytes.
	MinMaxInFlightBytes = 1 << 10
)

// Defaults of a phase's settings.
const (
	// DefaultMaxInFlight bounds the sends in flight when a scenario does
	// not.
	DefaultMaxInFlight = 10000
	// DefaultMaxInFlightBytes bounds the generator's memory for requests
	// awaiting answers: a run that falls behind drops sends (and says so)
	// instead of growing without end.
	DefaultMaxInFlightBytes = 512 << 20
	// DefaultBlastWorkers is a blast's concurrent senders when not given.
	DefaultBlastWorkers = 50
	// DefaultBlastLimit is a blast's longest time when not given.
	DefaultBlastLimit = Duration(600 * time.Second)
)

// CheckInterval checks an observation interval (0: not set): not below
// MinInterval.
func CheckInterval(d Duration) error {
	if d != 0 && d < MinInterval {
		return fmt.Errorf("%s is below %s: observers and the run's own counters are read every interval, and over shorter ones rates read as stalls that did not happen; give 100ms or more (1s is the default)", d, MinInterval)
	}
	return nil
}

// PhaseSpec is one phase as a scenario file writes it: the scenario
// decoder fills it by its yaml tags (strictly, every key located), the
// schema is reflected from it, and Validate holds its rules. One of rate,
// ramp, steps or blast gives the load profile; burst adds spikes to a rate.
type PhaseSpec struct {
	// Name names the phase in the table, the thresholds and the Result;
	// no two phases of a scenario share one.
	Name string `yaml:"name" jsonschema:"required" example:"load"`
	// Duration is how long the phase lasts: 90s, 10m, 48h. A steps phase
	// lasts as long as its steps (give none); for a blast it is the
	// longest the phase may take (10m when not given).
	Duration *Duration `yaml:"duration"`
	// Rate is a constant rate of items per second: 500/s, 30000/min,
	// 2/ms.
	Rate *Rate `yaml:"rate"`
	// Ramp moves the rate linearly from one value to another over the
	// phase.
	Ramp *Ramp `yaml:"ramp"`
	// Steps are rates held one after the other, each for its duration;
	// each step is a column of its own in the table.
	Steps []Step `yaml:"steps"`
	// Burst adds spikes to rate: burst.rate for burst.for at the start of
	// every burst.every.
	Burst *Burst `yaml:"burst"`
	// Blast sends count items as fast as workers concurrent senders go,
	// each starting its next send when its last one returned (the closed
	// model): the phase reports time to complete and peak backlog.
	Blast *Blast `yaml:"blast"`
	// Producers is a fleet of senders, each sending one batch every
	// interval (a service's health check every 30 s): count producers,
	// aligned (all at the same moment), staggered (evenly spread, the
	// default) or jittered (each at a moment of its own) within every.
	// The rate is count × batch / every.
	Producers *Producers `yaml:"producers"`
	// PhaseSettings are the keys that defaults: may set for every phase.
	PhaseSettings `yaml:",inline"`
}

// PhaseSettings are the settings of a phase that a scenario's defaults
// key may give every phase; a phase's own value wins.
type PhaseSettings struct {
	// Stagger spreads the start of the phase: the rate rises linearly
	// from zero over this long.
	Stagger *Duration `yaml:"stagger"`
	// MaxInFlight bounds the sends awaiting their answer; a send due while
	// it is reached is counted dropped instead of waiting (10000 by
	// default, at most 100000).
	MaxInFlight *int `yaml:"max_in_flight"`
	// MaxInFlightBytes bounds the bytes of the requests awaiting answers
	// (the generator's memory for them): 512MiB by default, at least 1KiB;
	// a send due while it is reached is dropped.
	MaxInFlightBytes *ByteSize `yaml:"max_in_flight_bytes"`
	// Tick is the shortest time between two wake-ups of the pacer: the
	// sends that fall due within one tick leave together at its end, up
	// to a tick late (shown as schedule lag, and in latencies, which run
	// from the scheduled time). 100µs by default, at most 100ms; 1ms is
	// the timer resolution of wrk and wrk2, and at 10,000-40,000 HTTP
	// requests a second it halves the CPU a request costs pipebench.
	Tick *Duration `yaml:"tick" example:"1ms"`
	// Faults is what the sink does to the requests it receives during the
	// phase: errors, latency, rate limits, outages.
	Faults *FaultPolicy `yaml:"faults"`
}

// Ramp is a rate that moves linearly over a phase.
type Ramp struct {
	// From is the rate at the start of the phase.
	From Rate `yaml:"from" jsonschema:"required" example:"100/s"`
	// To is the rate at the end of the phase.
	To Rate `yaml:"to" jsonschema:"required" example:"1000/s"`
}

// Blast is a closed-model phase's load: Count items sent by Workers
// concurrent senders as fast as they go.
type Blast struct {
	// Count is how many items to send.
	Count uint64 `yaml:"count" jsonschema:"required" example:"750"`
	// Workers is how many senders send at once (50 by default, at most
	// 10000).
	Workers int `yaml:"workers"`
}

// Producers is a producers phase's fleet.
type Producers struct {
	// Count is how many producers send (at most 10,000,000).
	Count uint64 `yaml:"count" jsonschema:"required" example:"18000"`
	// Every is how often each producer sends one batch.
	Every Duration `yaml:"every" jsonschema:"required" example:"30s"`
	// Align is when each sends within every: aligned (all at once),
	// staggered (evenly spread) or jittered (each at a moment of its own,
	// the same in every run).
	Align string `yaml:"align"`
}

// SetDefaults staggers producers unless align says otherwise.
func (p *Producers) SetDefaults() { p.Align = AlignStaggered }

// SetDefaults gives a blast its default workers (the scenario decoder
// calls it before filling the mapping in).
func (b *Blast) SetDefaults() { b.Workers = DefaultBlastWorkers }

// Over returns the settings s with o's set values put over them.
func (s PhaseSettings) Over(o PhaseSettings) PhaseSettings {
	if o.Stagger != nil {
		s.Stagger = o.Stagger
	}
	if o.MaxInFlight != nil {
		s.MaxInFlight = o.MaxInFlight
	}
	if o.MaxInFlightBytes != nil {
		s.MaxInFlightBytes = o.MaxInFlightBytes
	}
	if o.Tick != nil {
		s.Tick = o.Tick
	}
	if o.Faults != nil {
		s.Faults = o.Faults
	}
	return s
}

// Validate checks the settings on their own; each line of the error starts
// with its key. The fault policy's outage windows are checked against the
// phase by PlanPhase.Validate.
func (s PhaseSettings) Validate() error {
	var errs []error
	if s.MaxInFlight != nil && (*s.MaxInFlight < 1 || *s.MaxInFlight > MaxInFlightLimit) {
		errs = append(errs, fmt.Errorf("max_in_flight: %d is outside 1..%s: each send in flight holds a goroutine or a request's bytes", *s.MaxInFlight, FormatCount(MaxInFlightLimit)))
	}
	if s.MaxInFlightBytes != nil && *s.MaxInFlightBytes < MinMaxInFlightBytes {
		errs = append(errs, fmt.Errorf("max_in_flight_bytes: %s is below 1KiB: give the most bytes of requests awaiting answers, like 512MiB", FormatBytes(int64(*s.MaxInFlightBytes))))
	}
	if s.Tick != nil && (time.Duration(*s.Tick) < MinTick || time.Duration(*s.Tick) > MaxTick) {
		errs = append(errs, fmt.Errorf("tick: %s is outside %s..%s: give the shortest time between two wake-ups of the pacer, like 1ms", time.Duration(*s.Tick), MinTick, MaxTick))
	}
	if s.Faults != nil {
		errs = append(errs, Prefixed("faults", s.Faults.Validate(0))...)
	}
	return errors.Join(errs...)
}

// profileKeys are the keys that choose a phase's load profile.
var profileKeys = []string{"rate", "ramp", "steps", "blast", "producers"}

// chosen lists the profile keys s sets, in profileKeys order.
func (s PhaseSpec) chosen() []string {
	set := map[string]bool{"rate": s.Rate != nil, "ramp": s.Ramp != nil, "steps": s.Steps != nil, "blast": s.Blast != nil, "producers": s.Producers != nil}
	var out []string
	for _, k := range profileKeys {
		if set[k] {
			out = append(out, k)
		}
	}
	return out
}

// Validate checks the phase's shape: a name, one load profile, a burst
// only with a rate, a duration where one is needed and none on a steps
// phase. Each line of the error starts with the key it is about (none when
// it is about the whole phase). The profile's values, the settings and
// what depends on the batch size and the defaults are checked by
// PlanPhase.Validate on the phase they make.
func (s PhaseSpec) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Name == "" {
		add("name: missing: every phase needs a name")
	}
	chosen := s.chosen()
	switch {
	case len(chosen) == 0 && s.Burst != nil:
		add(`has "burst" without "rate": burst spikes rise above a base rate`)
	case len(chosen) == 0:
		add("has no load profile: give one of rate, ramp, steps, blast or producers")
	case len(chosen) > 1:
		add("has both %q and %q: give one profile per phase", chosen[0], chosen[1])
	}
	if s.Burst != nil && len(chosen) == 1 && chosen[0] != "rate" {
		add("burst: burst goes with rate, not with %s", chosen[0])
	}
	if s.Duration != nil && *s.Duration <= 0 {
		add("duration: must be more than 0")
	}
	if len(chosen) == 1 {
		switch chosen[0] {
		case "steps":
			if s.Duration != nil {
				add("duration: a steps phase lasts as long as its steps: remove duration")
			}
		case "blast":
		default:
			if s.Duration == nil {
				add("duration: missing: how long the phase lasts, like `duration: 10m`")
			}
		}
	}
	return errors.Join(errs...)
}

// Profile returns the load profile the phase gives, and its duration: the
// steps' sum for a steps phase, DefaultBlastLimit for a blast without one.
func (s PhaseSpec) Profile() (Profile, Duration) {
	var p Profile
	var d Duration
	if s.Duration != nil {
		d = *s.Duration
	}
	switch {
	case s.Rate != nil && s.Burst != nil:
		p = Profile{Kind: ProfileBurst, Rate: *s.Rate, Burst: s.Burst}
	case s.Rate != nil:
		p = Profile{Kind: ProfileConstant, Rate: *s.Rate}
	case s.Ramp != nil:
		p = Profile{Kind: ProfileRamp, From: s.Ramp.From, To: s.Ramp.To}
	case s.Steps != nil:
		p = Profile{Kind: ProfileSteps, Steps: s.Steps}
		d = 0
		for _, st := range s.Steps {
			d += st.Duration
		}
	case s.Blast != nil:
		p = Profile{Kind: ProfileBlast, Count: s.Blast.Count, Workers: s.Blast.Workers}
		if s.Duration == nil {
			d = DefaultBlastLimit
		}
	case s.Producers != nil:
		p = Profile{Kind: ProfileProducers, Count: s.Producers.Count, Every: s.Producers.Every, Align: s.Producers.Align}
	}
	return p, d
}

// peakKey returns the key of the profile's highest rate (rate, ramp.to,
// steps[2].rate, burst.rate) and that rate in items per second (for
// producers: in sends a second, count / every).
func (p Profile) peakKey() (string, float64) {
	switch p.Kind {
	case ProfileRamp:
		if p.From > p.To {
			return "ramp.from", float64(p.From)
		}
		return "ramp.to", float64(p.To)
	case ProfileSteps:
		key, peak := "steps", 0.0
		for i, st := range p.Steps {
			if float64(st.Rate) > peak {
				key, peak = fmt.Sprintf("steps[%d].rate", i), float64(st.Rate)
			}
		}
		return key, peak
	case ProfileBurst:
		if p.Burst != nil {
			return "burst.rate", float64(max(p.Burst.Rate, p.Rate))
		}
	case ProfileBlast:
		return "", 0
	case ProfileProducers:
		if p.Every > 0 {
			return "producers.count", float64(p.Count) / p.Every.D().Seconds()
		}
		return "", 0
	}
	return "rate", float64(p.Rate)
}

// checkGenerable refuses a phase no generator can pace: a peak above
// MaxSendRate sends a second, or more than MaxBurstPeriods bursts. Each
// line starts with the key it is about.
func (ph PlanPhase) checkGenerable() []error {
	var errs []error
	key, peak := ph.Profile.peakKey()
	if ph.Profile.Kind == ProfileProducers {
		peak *= float64(ph.batch()) // each producer sends a batch
	}
	if sends := peak / float64(ph.batch()); sends > MaxSendRate {
		errs = append(errs, fmt.Errorf("%s: %s/s in sends of %d item(s) is %s sends a second; a plan may ask at most %s (one generator sends some 100,000 a second per core): give a lower rate, or a larger workload.batch",
			key, FormatCount(peak), ph.batch(), FormatCount(sends), FormatCount(MaxSendRate)))
	}
	if b := ph.Profile.Burst; ph.Profile.Kind == ProfileBurst && b != nil && b.Every > 0 {
		if n := math.Ceil(float64(ph.Duration) / float64(b.Every)); n > MaxBurstPeriods {
			least := Duration(math.Ceil(float64(ph.Duration) / MaxBurstPeriods))
			errs = append(errs, fmt.Errorf("burst.every: %s makes %s bursts in %s; a phase may hold at most %s: make every %s or longer",
				b.Every, FormatCount(n), ph.Duration, FormatCount(MaxBurstPeriods), least))
		}
	}
	return errs
}
