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
