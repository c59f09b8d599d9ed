package pipebench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// ProfileKind names the shape of load in a phase.
type ProfileKind string

// The load shapes a phase can have.
const (
	ProfileConstant ProfileKind = "constant" // Rate for the whole phase
	ProfileRamp     ProfileKind = "ramp"     // linear from From to To over the phase
	ProfileSteps    ProfileKind = "steps"    // a list of (rate, duration), in order
	ProfileBurst    ProfileKind = "burst"    // Rate with spikes of Burst.Rate every Burst.Every for Burst.For
	ProfileBlast    ProfileKind = "blast"    // Count items as fast as Workers allow (closed model)
	// ProfileProducers is Count producers each sending one batch every
	// Every, aligned, staggered or jittered within it.
	ProfileProducers ProfileKind = "producers"
)

// The alignments of a producers profile: when, within each Every, each
// producer sends.
const (
	AlignAligned   = "aligned"   // every producer at the same moment (a fleet restarted together)
	AlignStaggered = "staggered" // producer i at i·Every/Count: evenly spread
	AlignJittered  = "jittered"  // each at a moment of its own, drawn at random once (the same in every run)
)

// Alignments lists the alignments of a producers profile.
var Alignments = []string{AlignAligned, AlignStaggered, AlignJittered}

// Step is one stretch of a steps profile.
type Step struct {
	// Rate is the step's constant rate of items per second.
	Rate Rate `json:"rate" yaml:"rate" jsonschema:"required" example:"500/s"`
	// Duration is how long the step lasts.
	Duration Duration `json:"duration" yaml:"duration" jsonschema:"required" example:"1m"`
}

// Burst describes the spikes of a burst profile: during each period of length
// Every, the rate is Rate for the first For, and the phase's base rate for the
// rest.
type Burst struct {
	// Rate is the rate during a spike, above the phase's base rate.
	Rate Rate `json:"rate" yaml:"rate" jsonschema:"required" example:"2000/s"`
	// For is how long each spike lasts, less than every.
	For Duration `json:"for" yaml:"for" jsonschema:"required" example:"10s"`
	// Every is the period of the spikes: one starts at the beginning of
	// each.
	Every Duration `json:"every" yaml:"every" jsonschema:"required" example:"1m"`
}

// Profile is the load shape of one phase. Rates are in items per second
// (events, spans, metric points, log records); the runner sends
// rate/BatchSize batches per second.
type Profile struct {
	Kind  ProfileKind `json:"kind"`
	Rate  Rate        `json:"rate,omitempty"`  // constant, burst (base rate)
	From  Rate        `json:"from,omitempty"`  // ramp
	To    Rate        `json:"to,omitempty"`    // ramp
	Steps []Step      `json:"steps,omitempty"` // steps
	Burst *Burst      `json:"burst,omitempty"` // burst
	// Count and Workers describe a blast: Count items sent by Workers
	// concurrent senders as fast as they go (the closed model of the
	// reference's "50-worker pool" tests). For a producers profile, Count
	// is the number of producers.
	Count   uint64 `json:"count,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// Every and Align describe a producers profile: Count producers each
	// send one batch every Every (a service's health check every 30 s),
	// Align says when within it (AlignAligned, AlignStaggered,
	// AlignJittered). Seed varies the jittered moments (a shard's are its
	// own). The item rate is Count × batch size / Every. Sends go to the
	// driver in turn, so a driver that spreads them over its connections
	// in turn, with as many connections as producers, gives each producer
	// a connection of its own.
	Every Duration `json:"every,omitempty"`
	Align string   `json:"align,omitempty"`
	Seed  uint64   `json:"seed,omitempty"`
}

// PlanPhase is one phase of a Plan, fully resolved: every default applied,
// every duration known. A steps phase of the scenario becomes one constant
// PlanPhase per step, each with the scenario phase's name as Group, so
// that every step is its own column (each rate is its own test).
type PlanPhase struct {
	Name string `json:"name"`
	// Group is the name of the scenario phase this one was made from when
	// it differs from Name (the steps of a steps phase); thresholds aimed
	// at the group apply to each of its phases.
	Group    string   `json:"group,omitempty"`
	Profile  Profile  `json:"profile"`
	Duration Duration `json:"duration"`
	// Stagger spreads the start of the phase: the rate rises linearly from
	// zero to the profile's rate over Stagger.
	Stagger Duration `json:"stagger,omitempty"`
	// MaxInFlight bounds sends in flight; a send due while the bound is
	// reached is counted as dropped instead of waiting.
	MaxInFlight int `json:"max_in_flight"`
	// MaxInFlightBytes bounds the bytes of the requests in flight (the
	// generator's memory for sends awaiting answers); a send due while
	// the bound is reached is dropped, as for MaxInFlight. 0: no bound.
	MaxInFlightBytes int64 `json:"max_in_flight_bytes,omitempty"`
	// Tick is the shortest time between two wake-ups of the pacer (0: its
	// own floor, 100µs): the sends due within a tick leave together.
	Tick Duration `json:"tick,omitempty"`
	// BatchSize is the number of items per send.
	BatchSize int `json:"batch_size"`
	// Faults is the fault policy the sink applies during this phase.
	Faults FaultPolicy `json:"faults,omitzero"`
	// Items is the number of items the phase is expected to send.
	Items uint64 `json:"items"`
}

// Blast reports whether the phase is closed-model: no target rate.
func (ph PlanPhase) Blast() bool { return ph.Profile.Kind == ProfileBlast }

// InGroup reports whether a threshold or filter naming name applies to
// this phase: its own name or its group's.
func (ph PlanPhase) InGroup(name string) bool { return ph.Name == name || ph.Group == name }

// PlannedRate is the phase's mean target rate in items per second, 0 for
// a blast.
func (ph PlanPhase) PlannedRate() float64 {
	if d := ph.Duration.D().Seconds(); d > 0 && !ph.Blast() {
		return float64(ph.Items) / d
	}
	return 0
}

// Component is a plug-in of the run as data: its registered type, a name
// (observers), an interval (observers) and the configuration the scenario
// decoder filled in (a pointer to the factory's configuration type; in a
// Result read back from JSON, a generic map).
type Component struct {
	Type     string   `json:"type"`
	Name     string   `json:"name,omitempty"`
	Interval Duration `json:"interval,omitempty"`
	Config   any      `json:"config,omitempty"`
}

// Operand is one side of a Threshold: a constant, or Factor × a KPI
// (optionally only the instances with Labels, optionally aggregated by
// Agg: max, min, sum, avg).
type Operand struct {
	Const  bool              `json:"const,omitempty"`
	Value  float64           `json:"value,omitempty"`
	Factor float64           `json:"factor,omitempty"`
	KPI    string            `json:"kpi,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Agg    string            `json:"agg,omitempty"`
}

// Threshold is a condition on a phase's KPIs, parsed once when the
// scenario is decoded: Left Op Right. Phase "" means every phase (a
// phase's group name selects all its steps).
type Threshold struct {
	Expr  string  `json:"expr"`
	Phase string  `json:"phase,omitempty"`
	Left  Operand `json:"left"`
	Op    string  `json:"op"`
	Right Operand `json:"right"`
}

// Shard says which slice of a plan a generator runs: Index of Count.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Plan is a run as data: what to start (target, workload, sink, system
// under test, observers, each with its decoded configuration), the phases
// with their pacers' parameters, the thresholds, the observation interval
// and the drain. scenario.Compile makes it; `pipebench plan` prints it; the
// runner executes it and nothing else; Result.Plan records it.
type Plan struct {
	Scenario    string            `json:"scenario"`
	Version     string            `json:"version,omitempty"`
	Case        string            `json:"case,omitempty"`
	Description string            `json:"description,omitempty"`
	File        string            `json:"file,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`

	Target    Component   `json:"target,omitzero"`
	Workload  Component   `json:"workload,omitzero"`
	SUT       *Component  `json:"sut,omitempty"`
	Sink      *Component  `json:"sink,omitempty"`
	Observers []Component `json:"observers,omitempty"`

	Phases     []PlanPhase `json:"phases"`
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Interval is how often observers and the run's own counters are
	// sampled.
	Interval Duration `json:"interval,omitempty"`
	// Drain is the longest the runner waits after the last phase for what
	// was accepted to arrive at the sink.
	Drain Duration `json:"drain"`

	// SeqStart is the first sequence number (1 when 0); shards of one plan
	// get disjoint ranges. StartAt, when set, is the shared moment every
	// shard starts its first phase. Shard is set on a shard's plan.
	SeqStart uint64    `json:"seq_start,omitempty"`
	StartAt  time.Time `json:"start_at,omitzero"`
	Shard    *Shard    `json:"shard,omitempty"`
	// Digest identifies the whole plan a shard was sliced from: shards
	// of different plans are never merged.
	Digest string `json:"digest,omitempty"`
	// ScaledFrom is the phases' total before Scale stretched or shrank
	// them (--duration; a suite entry's duration), 0 when they were not:
	// a report says the scale a run ran at.
	ScaledFrom Duration `json:"scaled_from,omitempty"`
}

// Duration returns the planned load time: the sum of the phases' durations,
// without the drain.
func (p *Plan) Duration() time.Duration {
	var d time.Duration
	for _, ph := range p.Phases {
		d += ph.Duration.D()
	}
	return d
}

// Items returns the number of items the plan sends in total.
func (p *Plan) Items() uint64 {
	var n uint64
	for _, ph := range p.Phases {
		n += ph.Items
	}
	return n
}

// FirstSeq is the plan's first sequence number.
func (p *Plan) FirstSeq() uint64 {
	if p.SeqStart == 0 {
		return 1
	}
	return p.SeqStart
}

// CountItems sets every phase's Items from its profile, exactly as the
// pacer will send them (whole batches).
func (p *Plan) CountItems() error {
	var total uint64
	for i := range p.Phases {
		ph := &p.Phases[i]
		c, err := ph.Curve()
		if err != nil {
			return fmt.Errorf("phase %s: %w", ph.Name, err)
		}
		ph.Items = c.Sends() * uint64(ph.batch())
		if ph.Blast() {
			ph.Items = ph.Profile.Count
		}
		if total += ph.Items; total > MaxItems || total < ph.Items {
			return fmt.Errorf("the phases up to %s: %w", ph.Name, tooManyItems(float64(total)))
		}
	}
	return nil
}

func (ph PlanPhase) batch() int {
	if ph.BatchSize < 1 {
		return 1
	}
	return ph.BatchSize
}

// Scale returns a copy of p whose phases are stretched or shrunk by one
// factor so that they add up to total: durations, steps, bursts, staggers
// and outage windows alike, and the times of every component whose
// configuration is a TimeScaler, so the shape is kept. It is how the
// references' 20-minute tests run in 2 minutes. A total of zero or less,
// or one so short that a paced phase would send nothing, is an error.
func (p Plan) Scale(total time.Duration) (Plan, error) {
	if total <= 0 {
		return p, fmt.Errorf("the total duration must be more than 0, not %s", total)
	}
	sum := p.Duration()
	if sum <= 0 {
		return p, fmt.Errorf("the phases have no duration to scale")
	}
	f := float64(total) / float64(sum)
	// Scaled durations are whole milliseconds; the last phase takes the
	// rounding, so that the phases add up to total exactly.
	scale := func(d Duration) Duration {
		return Duration(time.Duration(float64(d) * f).Round(time.Millisecond))
	}
	out := p
	if out.ScaledFrom == 0 {
		out.ScaledFrom = Duration(sum)
	}
	out.Phases = make([]PlanPhase, len(p.Phases))
	for i, ph := range p.Phases {
		ph.Duration = scale(ph.Duration)
		ph.Stagger = scale(ph.Stagger)
		if steps := ph.Profile.Steps; steps != nil {
			ph.Profile.Steps = make([]Step, len(steps))
			for j, st := range steps {
				ph.Profile.Steps[j] = Step{Rate: st.Rate, Duration: scale(st.Duration)}
			}
		}
		if b := ph.Profile.Burst; b != nil {
			nb := Burst{Rate: b.Rate, For: scale(b.For), Every: scale(b.Every)}
			ph.Profile.Burst = &nb
		}
		if o := ph.Faults.Outages; o != nil {
			ph.Faults.Outages = make([]Window, len(o))
			for j, w := range o {
				ph.Faults.Outages[j] = Window{Start: scale(w.Start), Duration: scale(w.Duration)}
			}
		}
		out.Phases[i] = ph
	}
	out.Target, out.Workload = scaleComponent(p.Target, f), scaleComponent(p.Workload, f)
	for _, c := range []**Component{&out.SUT, &out.Sink} {
		if *c != nil {
			sc := scaleComponent(**c, f)
			*c = &sc
		}
	}
	out.Observers = make([]Component, len(p.Observers))
	for i, o := range p.Observers {
		out.Observers[i] = scaleComponent(o, f)
	}
	if last := &out.Phases[len(out.Phases)-1]; last.Profile.Kind != ProfileSteps {
		if d := Duration(total) - Duration(out.Duration()); last.Duration+d > 0 {
			last.Duration += d
		}
	}
	for _, ph := range out.Phases {
		// Longer phases may make more bursts or items than a phase may
		// hold.
		if err := errors.Join(ph.checkGenerable()...); err != nil {
			return p, fmt.Errorf("at %s in total, phase %s: %w", FormatDuration(total), ph.Name, err)
		}
	}
	if err := out.CountItems(); err != nil {
		if errors.Is(err, ErrTooManyItems) {
			return p, fmt.Errorf("at %s in total, %w", FormatDuration(total), err)
		}
		return p, fmt.Errorf("at %s in total a phase would be too short to keep its shape (%v): give a longer duration", FormatDuration(total), err)
	}
	for i, ph := range out.Phases {
		c, _ := ph.Curve()
		if ph.Profile.Kind == ProfileConstant && ph.Profile.Rate == 0 {
			continue // a pause: nothing to send, by design
		}
		idle := p.Phases[i].Items == 0 // a phase of no load (a baseline) stays one
		if !ph.Blast() && !idle && (ph.Items == 0 || c.Expected() < 1-1e-9) {
			return p, fmt.Errorf("at %s in total, phase %s would last %s, too short to send one batch at its rate: give a longer duration", FormatDuration(total), ph.Name, ph.Duration)
		}
	}
	return out, nil
}

// FilePaths is the optional ability of a component's configuration whose
// keys name files (a collector's config_file, .proto files): the scenario
// decoder calls RelativeTo with the folder of the scenario file, before
// Validate, so that a relative path is read from beside the scenario, not
// from wherever pipebench was started. It is not called for scenarios
// without a folder (built-ins, stdin).
type FilePaths interface {
	RelativeTo(dir string)
}

// InDir returns path joined to dir when it is relative (and not empty);
// an absolute path or an empty one as it is. For FilePaths.
func InDir(dir, path string) string {
	if path == "" || dir == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// Resource is a named thing of a system under test a component uses: a
// Kafka topic. Key is the component's key naming it ("topic").
type Resource struct{ Kind, Name, Key string }

// ResourceHolder is the optional ability of an embedded system under
// test's configuration to list the resources of a kind it creates for the
// run (nil: it does not know, any name may do). `validate` then refuses a
// target or sink that uses one it does not create (ResourceUser), before
// anything runs: a Kafka driver aimed at a topic the embedded broker does
// not have would otherwise fail every send.
type ResourceHolder interface {
	Holds(kind string) []string
}

// ResourceUser is the optional ability of a driver's or a sink's
// configuration to name the resources of the embedded system under test
// it uses (none when it is aimed elsewhere).
type ResourceUser interface {
	Uses() []Resource
}

// TimeScaler is the optional ability of a component's configuration to keep
// its own times in step with the phases when Plan.Scale stretches or shrinks
// a run: a system under test's schedule of faults, a cap sized to be
// reached and drained in a share of the run. ScaleTime returns a copy of
// the configuration with those times (and what is sized by them) multiplied
// by f; it does not modify the receiver.
type TimeScaler interface {
	ScaleTime(f float64) any
}

// scaleComponent returns c with its configuration scaled by f when it is
// a TimeScaler.
func scaleComponent(c Component, f float64) Component {
	if ts, ok := c.Config.(TimeScaler); ok {
		c.Config = ts.ScaleTime(f)
	}
	return c
}

// Slice returns shard index (0-based) of n: every rate divided by n, a
// blast's count and workers and a producers profile's producers split, and
// the sequence numbers of the shard
// in a range of their own, so the shards of one plan, run together from a
// shared StartAt, send what the whole plan sends and a sink can tell their
// items apart.
func (p Plan) Slice(index, n int) (Plan, error) {
	if n < 1 || index < 0 || index >= n {
		return p, fmt.Errorf("shard %d/%d: want 1 <= N and 0 <= I < N", index+1, n)
	}
	if p.Shard != nil {
		return p, fmt.Errorf("the plan is already shard %d/%d", p.Shard.Index+1, p.Shard.Count)
	}
	out := p
	out.Shard = &Shard{Index: index, Count: n}
	out.Digest = p.digest()
	div := func(r Rate) Rate { return r / Rate(n) }
	// share splits a whole number so that the n shares add up to it.
	share := func(total uint64) uint64 {
		q, rem := total/uint64(n), total%uint64(n)
		if uint64(index) < rem {
			q++
		}
		return q
	}
	out.Phases = make([]PlanPhase, len(p.Phases))
	for i, ph := range p.Phases {
		pr := ph.Profile
		pr.Rate, pr.From, pr.To = div(pr.Rate), div(pr.From), div(pr.To)
		if pr.Steps != nil {
			pr.Steps = make([]Step, len(ph.Profile.Steps))
			for j, st := range ph.Profile.Steps {
				pr.Steps[j] = Step{Rate: div(st.Rate), Duration: st.Duration}
			}
		}
		if b := pr.Burst; b != nil {
			nb := *b
			nb.Rate = div(b.Rate)
			pr.Burst = &nb
		}
		if pr.Kind == ProfileBlast {
			pr.Count = share(pr.Count)
			pr.Workers = max(1, int(share(uint64(pr.Workers))))
		}
		if pr.Kind == ProfileProducers {
			pr.Count = max(1, share(pr.Count))
			pr.Seed = uint64(index)
		}
		ph.Profile = pr
		ph.MaxInFlight = max(1, int(share(uint64(ph.MaxInFlight))))
		out.Phases[i] = ph
	}
	if err := out.CountItems(); err != nil {
		return p, err
	}
	// Disjoint sequence ranges of one size for every shard, computed from
	// the whole plan: a shard's phase sends at most its share rounded up
	// to whole batches.
	var span uint64
	for _, ph := range p.Phases {
		span += (ph.Items+uint64(n)-1)/uint64(n) + 2*uint64(ph.batch())
	}
	out.SeqStart = p.FirstSeq() + uint64(index)*span
	return out, nil
}

// Probe returns a one-phase plan at a constant rate for dur, keeping p's
// components, the first phase's batch size, max_in_flight and sink fault
// policy (without its outage windows), the interval, the drain and the
// thresholds (those aimed at a named phase are dropped): what a limit
// search runs at each rate it tries. A rate no generator can pace (more
// than MaxSendRate sends a second) is an error.
func (p Plan) Probe(rate Rate, dur time.Duration) (Plan, error) {
	if rate <= 0 || dur <= 0 {
		return p, fmt.Errorf("a probe needs a rate and a duration above 0, not %s for %s", rate, dur)
	}
	if len(p.Phases) == 0 {
		return p, fmt.Errorf("the plan has no phase to take a batch size from")
	}
	base := p.Phases[0]
	ph := PlanPhase{
		Name:             "probe " + FormatCount(float64(rate)) + "/s",
		Profile:          Profile{Kind: ProfileConstant, Rate: rate},
		Duration:         Duration(dur),
		MaxInFlight:      base.MaxInFlight,
		BatchSize:        base.BatchSize,
		MaxInFlightBytes: base.MaxInFlightBytes,
		Faults:           base.Faults,
	}
	ph.Faults.Outages = nil
	if ph.Faults.ErrorRatio == 0 {
		ph.Faults.ErrorStatus = 0
	}
	if err := ph.Validate(); err != nil {
		return p, fmt.Errorf("a probe at %s: %w", rate, err)
	}
	out := p
	out.Phases = []PlanPhase{ph}
	out.Thresholds = nil
	for _, t := range p.Thresholds {
		if t.Phase == "" {
			out.Thresholds = append(out.Thresholds, t)
		}
	}
	if err := out.CountItems(); err != nil {
		return p, err
	}
	return out, nil
}

// digest is a short hash of the plan as data (its JSON, configurations
// redacted), the same in every process that compiled the same scenario.
func (p Plan) digest() string {
	q := p.Redacted()
	q.StartAt = time.Time{}
	b, err := json.Marshal(q)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
