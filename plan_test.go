package pipebench_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

func sec(n float64) pipebench.Duration { return pipebench.Duration(n * float64(time.Second)) }

// testPlan has one phase of each paced shape and a blast, batch 2.
func testPlan(t *testing.T) pipebench.Plan {
	t.Helper()
	p := pipebench.Plan{Scenario: "ops", Drain: sec(5), Phases: []pipebench.PlanPhase{
		{Name: "const", Duration: sec(10), BatchSize: 2, MaxInFlight: 100, Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1000}},
		{Name: "ramp", Duration: sec(10), BatchSize: 2, MaxInFlight: 100, Stagger: sec(2), Profile: pipebench.Profile{Kind: pipebench.ProfileRamp, From: 100, To: 300}},
		{Name: "burst", Duration: sec(20), BatchSize: 2, MaxInFlight: 100, Profile: pipebench.Profile{Kind: pipebench.ProfileBurst, Rate: 100, Burst: &pipebench.Burst{Rate: 1000, For: sec(2), Every: sec(10)}},
			Faults: pipebench.FaultPolicy{ErrorRatio: 0.5, ErrorStatus: 503, Outages: []pipebench.Window{{Start: sec(4), Duration: sec(2)}}}},
		{Name: "blast", Duration: sec(60), BatchSize: 2, MaxInFlight: 100, Profile: pipebench.Profile{Kind: pipebench.ProfileBlast, Count: 751, Workers: 50}},
	}, Thresholds: []pipebench.Threshold{{Expr: "lost == 0"}, {Expr: "latency.p99 < 5ms", Phase: "ramp"}}}
	if err := p.CountItems(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCountItems(t *testing.T) {
	p := testPlan(t)
	// const 10,000; ramp (100+300)/2*10 minus the stagger's half of its
	// first 2 s (~120, rounded up to whole batches); burst 2*(2*1000+8*100)
	// = 5,600; blast its count.
	want := map[string]uint64{"const": 10000, "burst": 5600, "blast": 751}
	for _, ph := range p.Phases {
		if w, ok := want[ph.Name]; ok && ph.Items != w {
			t.Errorf("%s: %d items, want %d", ph.Name, ph.Items, w)
		}
	}
	if r := p.Phases[1].Items; r < 1850 || r > 1900 {
		t.Errorf("ramp with stagger: %d items", r)
	}
}

func TestScaleKeepsTheShape(t *testing.T) {
	p := testPlan(t)
	s, err := p.Scale(10 * time.Second) // the paced phases' 40 s + the blast's 60 s, to a tenth
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Duration(); got != 10*time.Second {
		t.Errorf("scaled duration %s, want 10s", got)
	}
	b := s.Phases[2]
	if b.Duration != sec(2) || b.Profile.Burst.For != sec(0.2) || b.Profile.Burst.Every != sec(1) {
		t.Errorf("burst not scaled by one factor: %+v %+v", b, *b.Profile.Burst)
	}
	if o := b.Faults.Outages[0]; o.Start != sec(0.4) || o.Duration != sec(0.2) {
		t.Errorf("outage not scaled: %+v", o)
	}
	if s.Phases[1].Stagger != sec(0.2) {
		t.Errorf("stagger not scaled: %s", s.Phases[1].Stagger)
	}
	if s.Phases[0].Items != 1000 {
		t.Errorf("items not recounted: %d", s.Phases[0].Items)
	}
	if p.Phases[0].Duration != sec(10) || p.Phases[2].Profile.Burst.For != sec(2) {
		t.Error("Scale changed the plan it was called on")
	}
}

func TestScaleRefuses(t *testing.T) {
	p := testPlan(t)
	for _, total := range []time.Duration{0, -time.Second, time.Millisecond} {
		if _, err := p.Scale(total); err == nil {
			t.Errorf("Scale(%s) = nil error", total)
		}
	}
	_, err := p.Scale(time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("too short: %v", err)
	}
}

// The shards of a plan send, together, what the plan sends; each has its
// own sequence range.
func TestSliceAddsUp(t *testing.T) {
	p := testPlan(t)
	const n = 3
	var items [4]uint64
	var ranges [][2]uint64
	for i := 0; i < n; i++ {
		s, err := p.Slice(i, n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Shard == nil || s.Shard.Index != i || s.Shard.Count != n {
			t.Fatalf("shard %d: %+v", i, s.Shard)
		}
		for j, ph := range s.Phases {
			items[j] += ph.Items
		}
		if r := s.Phases[0].Profile.Rate; r < 333.3 || r > 333.4 {
			t.Errorf("shard %d: rate %v, want 1000/3", i, r)
		}
		ranges = append(ranges, [2]uint64{s.FirstSeq(), s.FirstSeq() + s.Items() + uint64(len(s.Phases))*2})
	}
	for j, ph := range p.Phases {
		// Whole batches per shard may round each shard up by one batch.
		if items[j] < ph.Items || items[j] > ph.Items+n*2 {
			t.Errorf("%s: shards send %d, the plan %d", ph.Name, items[j], ph.Items)
		}
	}
	if items[3] != 751 {
		t.Errorf("blast split into %d items, want 751", items[3])
	}
	for i := 1; i < n; i++ {
		if ranges[i][0] < ranges[i-1][1] {
			t.Errorf("shard %d's sequence range %v overlaps shard %d's %v", i, ranges[i], i-1, ranges[i-1])
		}
	}
	for _, bad := range [][2]int{{0, 0}, {3, 3}, {-1, 2}} {
		if _, err := p.Slice(bad[0], bad[1]); err == nil {
			t.Errorf("Slice(%d, %d) accepted", bad[0], bad[1])
		}
	}
	s, _ := p.Slice(0, 2)
	if _, err := s.Slice(0, 2); err == nil {
		t.Error("a shard was sliced again")
	}
}

func TestProbe(t *testing.T) {
	p := testPlan(t)
	pr, err := p.Probe(2000, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Phases) != 1 || pr.Phases[0].Items != 60000 || pr.Phases[0].BatchSize != 2 {
		t.Errorf("probe = %+v", pr.Phases)
	}
	if len(pr.Thresholds) != 1 || pr.Thresholds[0].Expr != "lost == 0" {
		t.Errorf("probe thresholds = %+v, want the run-wide one only", pr.Thresholds)
	}
	if pr.Drain != p.Drain || pr.Scenario != p.Scenario {
		t.Error("probe lost the plan's drain or name")
	}
	if _, err := p.Probe(0, time.Second); err == nil {
		t.Error("a probe at 0/s was accepted")
	}
}

func TestPhaseValidate(t *testing.T) {
	cases := map[string]struct {
		ph   pipebench.PlanPhase
		want string
	}{
		"stagger": {pipebench.PlanPhase{Duration: sec(10), Stagger: sec(20), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1}}, "longer than the phase"},
		"burst":   {pipebench.PlanPhase{Duration: sec(10), Profile: pipebench.Profile{Kind: pipebench.ProfileBurst, Rate: 10, Burst: &pipebench.Burst{Rate: 5, For: sec(1), Every: sec(2)}}}, "above the base rate"},
		"ratio":   {pipebench.PlanPhase{Duration: sec(10), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1}, Faults: pipebench.FaultPolicy{ErrorRatio: 2}}, "error_ratio: 2 is outside 0..1"},
		"status":  {pipebench.PlanPhase{Duration: sec(10), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1}, Faults: pipebench.FaultPolicy{ErrorStatus: 418}}, "error_status: 418 is not allowed: use 429, 500, 502, 503 or 504"},
		"latency": {pipebench.PlanPhase{Duration: sec(10), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1}, Faults: pipebench.FaultPolicy{Latency: &pipebench.LatencyDist{Kind: "gamma"}}}, "unknown latency kind"},
		"outage":  {pipebench.PlanPhase{Duration: sec(10), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1}, Faults: pipebench.FaultPolicy{Outages: []pipebench.Window{{Start: sec(8), Duration: sec(5)}}}}, "after the phase"},
	}
	for name, c := range cases {
		err := c.ph.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestFormatCount(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.6: "1,234,568", -4200: "-4,200"} {
		if got := pipebench.FormatCount(v); got != want {
			t.Errorf("FormatCount(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestScaleRateKeepsTheShape(t *testing.T) {
	p := pipebench.Plan{Phases: []pipebench.PlanPhase{
		{Name: "a", Duration: pipebench.Duration(10 * time.Second), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 1000}},
		{Name: "b", Duration: pipebench.Duration(10 * time.Second), Profile: pipebench.Profile{Kind: pipebench.ProfileRamp, From: 500, To: 2000}},
		{Name: "c", Duration: pipebench.Duration(10 * time.Second), Profile: pipebench.Profile{Kind: pipebench.ProfileBurst, Rate: 100, Burst: &pipebench.Burst{Rate: 4000, For: pipebench.Duration(time.Second), Every: pipebench.Duration(5 * time.Second)}}},
	}}
	if err := p.CountItems(); err != nil {
		t.Fatal(err)
	}
	q, err := p.ScaleRate(2000)
	if err != nil {
		t.Fatal(err)
	}
	if q.PeakRate() != 2000 || q.Phases[0].Profile.Rate != 500 || q.Phases[1].Profile.From != 250 || q.Phases[1].Profile.To != 1000 ||
		q.Phases[2].Profile.Rate != 50 || q.Phases[2].Profile.Burst.Rate != 2000 {
		t.Errorf("scaled: %+v", q.Phases)
	}
	if p.Phases[2].Profile.Burst.Rate != 4000 {
		t.Error("ScaleRate changed the plan it was called on")
	}
	if q.Phases[0].Items != p.Phases[0].Items/2 {
		t.Errorf("items %d, want %d", q.Phases[0].Items, p.Phases[0].Items/2)
	}
	for _, bad := range []pipebench.Rate{0, -1, pipebench.Rate(math.NaN()), pipebench.Rate(math.Inf(1))} {
		if _, err := p.ScaleRate(bad); err == nil {
			t.Errorf("ScaleRate(%v) took it", float64(bad))
		}
	}
}

// A probe no generator can pace is refused, as a scenario asking it is.
func TestProbeRefusesWhatNoMachineGenerates(t *testing.T) {
	p := testPlan(t)
	if _, err := p.Probe(1e9, time.Second); err == nil || !strings.Contains(err.Error(), "sends a second") {
		t.Errorf("a probe at 10^9/s in batches of 2: %v", err)
	}
	if _, err := p.Probe(1e6, time.Second); err != nil {
		t.Errorf("a probe at 10^6/s in batches of 2: %v", err)
	}
}

// producers returns a phase of n producers sending every `every` seconds.
func producers(n uint64, every float64, align string, dur float64) pipebench.PlanPhase {
	return pipebench.PlanPhase{Name: "health", Duration: sec(dur), BatchSize: 1, MaxInFlight: 100,
		Profile: pipebench.Profile{Kind: pipebench.ProfileProducers, Count: n, Every: sec(every), Align: align}}
}

// N producers each sending every interval: aligned all at once, staggered
// evenly, jittered at moments of their own (the same on every compile);
// each producer sends exactly once per interval, and the rate is N/every.
func TestProducers(t *testing.T) {
	for _, align := range pipebench.Alignments {
		ph := producers(4, 2, align, 10)
		c, err := ph.Curve()
		if err != nil {
			t.Fatal(err)
		}
		if c.Sends() != 20 || c.RateAt(time.Second) != 2 {
			t.Errorf("%s: %d sends at %v/s, want 20 at 2/s", align, c.Sends(), c.RateAt(time.Second))
		}
		var prev time.Duration
		for n := uint64(0); n < c.Sends(); n++ {
			at, ok := c.At(n)
			if !ok || at < prev || at >= 10*time.Second {
				t.Fatalf("%s: send %d at %s (after %s)", align, n, at, prev)
			}
			// Send n is producer n mod 4's, once in each 2 s.
			if first, _ := c.At(n % 4); at-first != time.Duration(n/4)*2*time.Second {
				t.Errorf("%s: send %d at %s, producer's first at %s", align, n, at, first)
			}
			prev = at
		}
		if _, ok := c.At(20); ok {
			t.Errorf("%s: a 21st send", align)
		}
		if got := c.Due(1999 * time.Millisecond); got != 4 {
			t.Errorf("%s: %d due in the first period", align, got)
		}
	}
	aligned, _ := producers(4, 2, pipebench.AlignAligned, 10).Curve()
	staggered, _ := producers(4, 2, pipebench.AlignStaggered, 10).Curve()
	if aligned.Due(0) != 4 || staggered.Due(0) != 1 || staggered.Due(1500*time.Millisecond) != 4 {
		t.Errorf("due at 0: aligned %d, staggered %d; staggered by 1.5 s %d", aligned.Due(0), staggered.Due(0), staggered.Due(1500*time.Millisecond))
	}
	j1, _ := producers(1000, 30, pipebench.AlignJittered, 30).Curve()
	j2, _ := producers(1000, 30, pipebench.AlignJittered, 30).Curve()
	a, _ := j1.At(500)
	b, _ := j2.At(500)
	mid := j1.Due(15 * time.Second)
	if a != b || mid < 400 || mid > 600 {
		t.Errorf("jittered: not the same on every compile (%s, %s) or not spread (%d of 1,000 in the first half)", a, b, mid)
	}
	// A period cut short by the phase's end sends only the producers due
	// within it.
	short, _ := producers(4, 2, pipebench.AlignStaggered, 3).Curve()
	if short.Sends() != 6 {
		t.Errorf("staggered over 1.5 periods: %d sends, want 6", short.Sends())
	}
}

func TestProducersValidateSliceScale(t *testing.T) {
	for _, c := range []struct {
		ph   pipebench.PlanPhase
		want string
	}{
		{producers(0, 30, pipebench.AlignAligned, 60), "producers.count: 0 is outside 1..10,000,000"},
		{producers(10, 0, pipebench.AlignAligned, 60), "producers.every: must be more than 0"},
		{producers(10, 30, "sideways", 60), `producers.align: "sideways" is not one of`},
		{func() pipebench.PlanPhase {
			p := producers(10, 30, pipebench.AlignAligned, 60)
			p.Stagger = sec(5)
			return p
		}(), "stagger: does not apply to producers"},
	} {
		if err := c.ph.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ph.Profile, err, c.want)
		}
	}
	p := pipebench.Plan{Scenario: "chef", Phases: []pipebench.PlanPhase{producers(18000, 30, pipebench.AlignJittered, 60)}}
	if err := p.CountItems(); err != nil || p.Phases[0].Items != 36000 {
		t.Fatalf("items %d, %v", p.Phases[0].Items, err)
	}
	var sum uint64
	for i := 0; i < 3; i++ {
		s, err := p.Slice(i, 3)
		if err != nil {
			t.Fatal(err)
		}
		pr := s.Phases[0].Profile
		if pr.Count != 6000 || pr.Every != sec(30) || pr.Seed != uint64(i) {
			t.Errorf("shard %d: %+v", i, pr)
		}
		sum += s.Phases[0].Items
	}
	if sum != 36000 {
		t.Errorf("shards send %d, the whole plan 36,000", sum)
	}
	// Scaled, the producers keep their interval (and so the rate).
	s, err := p.Scale(6 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pr := s.Phases[0].Profile; pr.Every != sec(30) || s.Phases[0].PlannedRate() < 0 {
		t.Errorf("scaled: %+v", pr)
	}
}

// scaled is a component configuration that keeps a time of its own.
type scaled struct{ At time.Duration }

func (c *scaled) ScaleTime(f float64) any { return &scaled{At: time.Duration(float64(c.At) * f)} }

// Plan.Scale scales the times of TimeScaler configurations with the
// phases, and keeps a pause (rate 0) as it is.
func TestScaleTimeScalers(t *testing.T) {
	sut := &scaled{At: 30 * time.Second}
	p := pipebench.Plan{Scenario: "s", SUT: &pipebench.Component{Type: "x", Config: sut}, Observers: []pipebench.Component{{Type: "o", Config: &scaled{At: time.Minute}}},
		Phases: []pipebench.PlanPhase{
			{Name: "load", Duration: sec(60), BatchSize: 1, Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 100}},
			{Name: "pause", Duration: sec(60), BatchSize: 1, Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 0}},
		}}
	if err := p.CountItems(); err != nil {
		t.Fatal(err)
	}
	s, err := p.Scale(12 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.SUT.Config.(*scaled).At; got != 3*time.Second || sut.At != 30*time.Second {
		t.Errorf("scaled SUT time %s (the original now %s), want 3s (30s)", got, sut.At)
	}
	if got := s.Observers[0].Config.(*scaled).At; got != 6*time.Second {
		t.Errorf("scaled observer time %s", got)
	}
	if s.Phases[1].Duration != sec(6) || s.Phases[1].Items != 0 {
		t.Errorf("pause %+v", s.Phases[1])
	}
}
