package pipebench

import "time"

// ProfileKind names the shape of load in a phase.
type ProfileKind string

// The load shapes a phase can have.
const (
	ProfileConstant ProfileKind = "constant" // Rate for the whole phase
	ProfileRamp     ProfileKind = "ramp"     // linear from From to To over the phase
	ProfileSteps    ProfileKind = "steps"    // a list of (rate, duration), in order
	ProfileBurst    ProfileKind = "burst"    // Rate with spikes of Burst.Rate every Burst.Every for Burst.For
	ProfileBlast    ProfileKind = "blast"    // Count items as fast as Workers allow (closed model)
)

// Step is one stretch of a steps profile.
type Step struct {
	Rate     Rate     `json:"rate"`
	Duration Duration `json:"duration"`
}

// Burst describes the spikes of a burst profile: during each period of length
// Every, the rate is Rate for the first For, and the phase's base rate for the
// rest.
type Burst struct {
	Rate  Rate     `json:"rate"`
	For   Duration `json:"for"`
	Every Duration `json:"every"`
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
	// reference's "50-worker pool" tests).
	Count   uint64 `json:"count,omitempty"`
	Workers int    `json:"workers,omitempty"`
}

// PlanPhase is one phase of a Plan, fully resolved: every default applied,
// every duration known.
type PlanPhase struct {
	Name     string   `json:"name"`
	Profile  Profile  `json:"profile"`
	Duration Duration `json:"duration"`
	// Stagger spreads the start of the phase: the rate rises linearly from
	// zero to the profile's rate over Stagger.
	Stagger Duration `json:"stagger,omitempty"`
	// MaxInFlight bounds sends in flight; a send due while the bound is
	// reached is counted as dropped instead of waiting.
	MaxInFlight int `json:"max_in_flight"`
	// BatchSize is the number of items per send.
	BatchSize int `json:"batch_size"`
	// Faults is the fault policy the sink applies during this phase.
	Faults FaultPolicy `json:"faults,omitzero"`
	// Items is the number of items the phase is expected to send.
	Items uint64 `json:"items"`
}

// Plan is a compiled scenario: data only, printed by `pipebench plan`
// before anything is sent.
type Plan struct {
	Scenario string      `json:"scenario"`
	Version  string      `json:"version,omitempty"`
	Phases   []PlanPhase `json:"phases"`
	// Drain is the longest the runner waits after the last phase for what
	// was accepted to arrive at the sink.
	Drain Duration `json:"drain"`
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
