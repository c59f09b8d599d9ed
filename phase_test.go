package pipebench_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

func dur(s float64) *pipebench.Duration { d := pipebench.Duration(s * 1e9); return &d }
func rate(r float64) *pipebench.Rate    { x := pipebench.Rate(r); return &x }

// Each rule of a phase's shape, one case each: the line names its key.
func TestPhaseSpecRules(t *testing.T) {
	for _, c := range []struct {
		spec pipebench.PhaseSpec
		want string // "" for valid
	}{
		{pipebench.PhaseSpec{Name: "a", Rate: rate(1), Duration: dur(1)}, ""},
		{pipebench.PhaseSpec{Name: "a", Steps: []pipebench.Step{{Rate: 1, Duration: 1e9}}}, ""},
		{pipebench.PhaseSpec{Name: "a", Blast: &pipebench.Blast{Count: 1, Workers: 1}}, ""},
		{pipebench.PhaseSpec{Rate: rate(1), Duration: dur(1)}, "name: missing"},
		{pipebench.PhaseSpec{Name: "a", Duration: dur(1)}, "has no load profile"},
		{pipebench.PhaseSpec{Name: "a", Rate: rate(1), Ramp: &pipebench.Ramp{}, Duration: dur(1)}, `has both "rate" and "ramp"`},
		{pipebench.PhaseSpec{Name: "a", Burst: &pipebench.Burst{}, Duration: dur(1)}, `has "burst" without "rate"`},
		{pipebench.PhaseSpec{Name: "a", Ramp: &pipebench.Ramp{}, Burst: &pipebench.Burst{}, Duration: dur(1)}, "burst: burst goes with rate, not with ramp"},
		{pipebench.PhaseSpec{Name: "a", Rate: rate(1), Duration: dur(0)}, "duration: must be more than 0"},
		{pipebench.PhaseSpec{Name: "a", Rate: rate(1)}, "duration: missing"},
		{pipebench.PhaseSpec{Name: "a", Steps: []pipebench.Step{{Rate: 1, Duration: 1e9}}, Duration: dur(1)}, "duration: a steps phase lasts as long as its steps"},
	} {
		err := c.spec.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
}

// A phase no generator can pace is refused before its curve is built: too
// many sends a second, too many bursts, too many workers or sends in
// flight; each line names the key.
func TestPlanPhaseRefusesWhatNoMachineGenerates(t *testing.T) {
	base := pipebench.PlanPhase{Name: "p", Duration: pipebench.Duration(10 * time.Second), MaxInFlight: 1, BatchSize: 1,
		Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1000}}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*pipebench.PlanPhase)
		want   string
	}{
		{func(p *pipebench.PlanPhase) { p.Profile.Rate = 1e9 }, "rate: 1,000,000,000/s in sends of 1 item(s)"},
		{func(p *pipebench.PlanPhase) { p.Profile.Rate, p.BatchSize = 1e9, 1000 }, ""}, // a million sends a second: allowed
		{func(p *pipebench.PlanPhase) {
			p.Profile = pipebench.Profile{Kind: pipebench.ProfileRamp, From: 1, To: 2e7}
		}, "ramp.to: "},
		{func(p *pipebench.PlanPhase) {
			p.Profile = pipebench.Profile{Kind: pipebench.ProfileSteps, Steps: []pipebench.Step{{Rate: 1, Duration: 1e9}, {Rate: 5e7, Duration: 1e9}}}
		}, "steps[1].rate: "},
		{func(p *pipebench.PlanPhase) {
			p.Duration = pipebench.Duration(time.Hour)
			p.Profile = pipebench.Profile{Kind: pipebench.ProfileBurst, Rate: 1, Burst: &pipebench.Burst{Rate: 2, For: 1, Every: 2}}
		}, "burst.every: 2ns makes 1,800,000,000,000 bursts in 1h"},
		{func(p *pipebench.PlanPhase) {
			p.Profile = pipebench.Profile{Kind: pipebench.ProfileBlast, Count: 1, Workers: 1e6}
		}, "blast.workers: 1000000 is outside 1..10,000"},
		{func(p *pipebench.PlanPhase) { p.MaxInFlight = 1e7 }, "max_in_flight: 10000000 is outside"},
		{func(p *pipebench.PlanPhase) { p.MaxInFlightBytes = 100 }, "max_in_flight_bytes: 100 B is below 1KiB"},
		{func(p *pipebench.PlanPhase) { p.Stagger = pipebench.Duration(time.Minute) }, "stagger: 1m is longer than the phase"},
		{func(p *pipebench.PlanPhase) {
			p.Faults = pipebench.FaultPolicy{Outages: []pipebench.Window{{Start: pipebench.Duration(5 * time.Second), Duration: pipebench.Duration(10 * time.Second)}}}
		}, "faults.outages[0]: ends at 15s, after the phase (10s)"},
	} {
		ph := base
		c.change(&ph)
		err := ph.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", ph, err, c.want)
		}
	}
	// The curve itself refuses a burst it would need too many pieces for,
	// whoever calls it (Scale, Slice, Probe): the cap holds memory, not
	// only the decoder.
	burst := base
	burst.Duration = pipebench.Duration(time.Hour)
	burst.Profile = pipebench.Profile{Kind: pipebench.ProfileBurst, Rate: 1, Burst: &pipebench.Burst{Rate: 2, For: 1, Every: 2}}
	if _, err := burst.Curve(); err == nil || !strings.Contains(err.Error(), "burst.every") {
		t.Errorf("curve of 1.8e12 bursts: %v", err)
	}
}

func TestCheckInterval(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {time.Nanosecond, false}, {99 * time.Millisecond, false}, {100 * time.Millisecond, true}, {time.Second, true}} {
		if err := pipebench.CheckInterval(pipebench.Duration(c.d)); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.d, err)
		}
	}
}

// The short text forms of a latency and a window read as their mapping
// forms do, and a Result's JSON (the mapping form) reads back unchanged.
func TestFaultTextForms(t *testing.T) {
	ms := func(n float64) pipebench.Duration { return pipebench.Duration(n * 1e6) }
	for text, want := range map[string]pipebench.LatencyDist{
		"5ms":              {Kind: "fixed", Fixed: ms(5)},
		"uniform:1ms:20ms": {Kind: "uniform", Min: ms(1), Max: ms(20)},
		"normal:10ms:2ms":  {Kind: "normal", Mean: ms(10), StdDev: ms(2)},
		"exponential:10ms": {Kind: "exponential", Mean: ms(10)},
	} {
		var got pipebench.LatencyDist
		if err := got.UnmarshalText([]byte(text)); err != nil || got != want {
			t.Errorf("%s: %+v %v", text, got, err)
		}
		if got.String() != text {
			t.Errorf("%+v prints as %s, want %s", got, got.String(), text)
		}
	}
	for _, bad := range []string{"pareto:1ms", "uniform:1ms", "fast", "normal:x:1ms"} {
		var l pipebench.LatencyDist
		if err := l.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%s: accepted as %+v", bad, l)
		}
	}
	var w pipebench.Window
	if err := w.UnmarshalText([]byte("30s:20s")); err != nil || w.Start != pipebench.Duration(30e9) || w.Duration != pipebench.Duration(20e9) || w.String() != "30s:20s" {
		t.Errorf("window %+v %v", w, err)
	}
	p := pipebench.FaultPolicy{ErrorRatio: 0.5, ErrorStatus: 503, Latency: &pipebench.LatencyDist{Kind: "uniform", Min: ms(1), Max: ms(2)},
		RateLimit: 3000, RequestRateLimit: 5, Outages: []pipebench.Window{{Start: 1e9, Duration: 2e9}}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back pipebench.FaultPolicy
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, p) {
		t.Errorf("JSON round trip: %s -> %+v %v", b, back, err)
	}
	if s := p.String(); s != "50% answered 503; +uniform:1ms:2ms latency; limit 3000/s items; limit 5/s requests; outage at 1s for 2s" {
		t.Errorf("String() = %q", s)
	}
}

func TestPrefixedAndSplitKey(t *testing.T) {
	p := pipebench.Prefixed("faults", pipebench.FaultPolicy{ErrorRatio: 2, Latency: &pipebench.LatencyDist{Kind: "bogus"}}.Validate(0))
	var lines []string
	for _, e := range p {
		lines = append(lines, e.Error())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"faults.error_ratio: 2 is outside", `faults.latency.kind: unknown latency kind "bogus"`} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if k, m := pipebench.SplitKey("has both \"rate\" and \"ramp\": give one"); k != "" || !strings.HasPrefix(m, "has both") {
		t.Errorf("a line naming no key split as %q, %q", k, m)
	}
	if k, _ := pipebench.SplitKey("steps[2].duration: must be more than 0"); k != "steps[2].duration" {
		t.Errorf("key %q", k)
	}
}
