package kpi

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Merged percentiles are those of the union of the shards' samples, to
// the histograms' precision: shard 1 saw 1..1000 µs, shard 2 1001..3000.
func TestMergeHistogramsAreTheUnion(t *testing.T) {
	t0 := time.Unix(1000, 0)
	shard := func(i int, from, to int64) *pipebench.Result {
		s := SendStats{Details: map[string]uint64{}, Latency: newHist(), Service: newHist(), Lag: newHist()}
		for v := from; v <= to; v++ {
			s.Latency.RecordValue(v)
			s.Service.RecordValue(v)
			s.Lag.RecordValue(1)
		}
		s.Items[pipebench.ClassOK] = uint64(to - from + 1)
		in := PhaseInput{Name: "p", Started: t0, Ended: t0.Add(time.Second), Sends: s}
		pr := Build(in, nil)
		pr.Histograms = encodeHistograms(in)
		return &pipebench.Result{Plan: pipebench.Plan{Scenario: "m", Digest: "d", Shard: &pipebench.Shard{Index: i, Count: 2},
			Phases: []pipebench.PlanPhase{{Name: "p", Duration: pipebench.Duration(time.Second), Items: uint64(to - from + 1), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: pipebench.Rate(to - from + 1)}}}},
			Manifest: pipebench.Manifest{RunID: "r" + string(rune('0'+i))}, Phases: []pipebench.PhaseResult{pr}}
	}
	m, err := Merge([]*pipebench.Result{shard(1, 1001, 3000), shard(0, 1, 1000)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	union := newHist()
	for v := int64(1); v <= 3000; v++ {
		union.RecordValue(v)
	}
	for _, q := range Quantiles {
		got, _ := m.Phases[0].Get("latency." + q.Suffix)
		if want := ms(union.ValueAtQuantile(q.Q)); got != want {
			t.Errorf("latency.%s = %v, want the union's %v", q.Suffix, got, want)
		}
	}
	if acc, _ := m.Phases[0].Get("accepted"); acc != 3000 {
		t.Errorf("accepted %v", acc)
	}
	if rate, _ := m.Phases[0].Get("accepted_rate"); rate != 3000 {
		t.Errorf("accepted_rate %v over the shared second", rate)
	}
	if m.Plan.Phases[0].Profile.Rate != 2000 || m.Plan.Phases[0].Items != 3000 || m.Plan.Shard != nil {
		t.Errorf("whole plan: %+v", m.Plan.Phases[0])
	}
}
