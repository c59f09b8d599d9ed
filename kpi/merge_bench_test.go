package kpi

import (
	"runtime"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// BenchmarkMerge64Shards merges 64 shard Results of a 10-minute run (two
// phases; each shard with full latency histograms and 16 series of one
// point a second) and reports the time and the memory one merge takes.
func BenchmarkMerge64Shards(b *testing.B) {
	const shards = 64
	t0 := time.Unix(1_700_000_000, 0)
	results := make([]*pipebench.Result, shards)
	for i := range results {
		r := &pipebench.Result{Manifest: pipebench.Manifest{RunID: "shard"}, Plan: pipebench.Plan{Scenario: "bench", Digest: "d", Shard: &pipebench.Shard{Index: i, Count: shards}}}
		for ph := 0; ph < 2; ph++ {
			s := SendStats{Details: map[string]uint64{}, Latency: newHist(), Service: newHist(), Lag: newHist()}
			for v := int64(1); v < 20000; v += 7 {
				s.Latency.RecordValue(v + int64(i))
				s.Service.RecordValue(v)
				s.Lag.RecordValue(v % 500)
			}
			s.Items[pipebench.ClassOK] = 150_000
			in := PhaseInput{Name: []string{"a", "b"}[ph], Started: t0.Add(time.Duration(ph) * 5 * time.Minute), Ended: t0.Add(time.Duration(ph+1) * 5 * time.Minute), TargetRate: 500, Sends: s}
			pr := Build(in, nil)
			pr.Histograms = encodeHistograms(in)
			r.Phases = append(r.Phases, pr)
			r.Plan.Phases = append(r.Plan.Phases, pipebench.PlanPhase{Name: in.Name, Duration: pipebench.Duration(5 * time.Minute), Items: 150_000,
				Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 500}})
		}
		for k := 0; k < 16; k++ {
			se := pipebench.Series{Name: "series", Labels: map[string]string{"k": string(rune('a' + k))}}
			for p := 0; p < 600; p++ {
				se.Points = append(se.Points, pipebench.TimeValue{T: t0.Add(time.Duration(p) * time.Second), V: float64(p)})
			}
			r.Series = append(r.Series, se)
		}
		results[i] = r
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Merge(results, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MB/merge")
}
