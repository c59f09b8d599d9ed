// Package compare lines runs of different versions up against each other
// and says which differences are real: a change is flagged only when it is
// outside the run-to-run noise of the repeated runs.
package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pipebench/pipebench"
)

// DefaultKPIs are compared when the caller names none.
var DefaultKPIs = []string{"sent_rate", "delivered_rate", "receiver_accepted_rate", "exporter_sent_rate",
	"exporter_queue_size.max", "memory_mb", "cpu_cores", "latency.p99", "e2e_latency.p99", "lost"}

// HigherIsWorse reports whether a rise of the KPI is a regression (latency,
// loss, memory, queues) rather than an improvement (rates).
func HigherIsWorse(kpi string) bool {
	switch {
	case strings.HasSuffix(kpi, "_rate") && !strings.Contains(kpi, "refused") && !strings.Contains(kpi, "failed"):
		return false
	}
	return true
}

// Verdict is the comparison of one KPI in one scenario, case and phase.
type Verdict struct {
	KPI, Scenario, Case, Phase string
	// Baseline and Candidate are the means over each side's runs.
	Baseline, Candidate float64
	// Change is (candidate - baseline) / baseline.
	Change float64
	// Noise is the relative run-to-run spread the change is judged against.
	Noise                             float64
	Regressed, Improved, Inconclusive bool
	Reason                            string
	Runs                              [2]int // runs on each side
}

// Options tunes Diff.
type Options struct {
	KPIs []string
	// Tolerance is the smallest relative change worth flagging (default
	// 0.05). With one run per side, only changes beyond LargeChange
	// (default 0.25) are flagged; smaller ones are inconclusive.
	Tolerance, LargeChange float64
	// K multiplies the run-to-run spread to set the noise band (default 3).
	K float64
}

func (o *Options) defaults() {
	if len(o.KPIs) == 0 {
		o.KPIs = DefaultKPIs
	}
	if o.Tolerance == 0 {
		o.Tolerance = 0.05
	}
	if o.LargeChange == 0 {
		o.LargeChange = 0.25
	}
	if o.K == 0 {
		o.K = 3
	}
}

// value reduces a KPI over instances: the sum of rates, the max of levels.
func value(p *pipebench.PhaseResult, name string) (float64, bool) {
	ks := p.All(name)
	if len(ks) == 0 {
		return 0, false
	}
	v := 0.0
	for i, k := range ks {
		switch {
		case strings.HasSuffix(name, "_rate") || name == "errors":
			v += k.Value
		case i == 0 || k.Value > v:
			v = k.Value
		}
	}
	return v, true
}

// Diff compares the candidate runs with the baseline runs, scenario by
// scenario, case by case and phase by phase: runs of different scenarios
// are never compared, even when their cases share a name.
//
// The rule: with two or more runs on each side, the noise is K times the
// larger relative standard deviation of the two sides (at least Tolerance),
// and a change beyond it is flagged. With one run on a side the noise cannot
// be measured: changes beyond LargeChange are flagged, smaller ones are
// inconclusive, and the reason says to repeat the runs.
func Diff(baseline, candidate []*pipebench.Result, o Options) []Verdict {
	o.defaults()
	type key struct{ kpi, scen, cs, phase string }
	collect := func(rs []*pipebench.Result) map[key][]float64 {
		m := map[key][]float64{}
		for _, r := range rs {
			for i := range r.Phases {
				for _, kpi := range o.KPIs {
					if v, ok := value(&r.Phases[i], kpi); ok {
						k := key{kpi, r.Manifest.Scenario, r.Manifest.Case, r.Phases[i].Name}
						m[k] = append(m[k], v)
					}
				}
			}
		}
		return m
	}
	b, c := collect(baseline), collect(candidate)
	var keys []key
	for k := range c {
		if _, ok := b[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].scen != keys[j].scen {
			return keys[i].scen < keys[j].scen
		}
		if keys[i].cs != keys[j].cs {
			return keys[i].cs < keys[j].cs
		}
		if keys[i].phase != keys[j].phase {
			return keys[i].phase < keys[j].phase
		}
		return keys[i].kpi < keys[j].kpi
	})
	var out []Verdict
	for _, k := range keys {
		bv, cv := b[k], c[k]
		bm, cm := mean(bv), mean(cv)
		v := Verdict{KPI: k.kpi, Scenario: k.scen, Case: k.cs, Phase: k.phase, Baseline: bm, Candidate: cm, Runs: [2]int{len(bv), len(cv)}}
		switch {
		case bm == 0 && cm == 0:
			v.Change = 0
		case bm == 0:
			v.Change = math.Inf(1)
		default:
			v.Change = (cm - bm) / math.Abs(bm)
		}
		worse := v.Change > 0
		if !HigherIsWorse(k.kpi) {
			worse = v.Change < 0
		}
		mag := math.Abs(v.Change)
		if len(bv) >= 2 && len(cv) >= 2 {
			v.Noise = math.Max(o.Tolerance, o.K*math.Max(relStd(bv), relStd(cv)))
			if mag > v.Noise {
				v.Regressed, v.Improved = worse, !worse
				v.Reason = fmt.Sprintf("%+.1f%% is outside the run-to-run noise of ±%.1f%%", 100*v.Change, 100*v.Noise)
			}
		} else {
			v.Noise = o.LargeChange
			switch {
			case mag > o.LargeChange:
				v.Regressed, v.Improved = worse, !worse
				v.Reason = fmt.Sprintf("%+.1f%% with %d/%d runs: large enough to flag without knowing the noise", 100*v.Change, len(bv), len(cv))
			case mag > o.Tolerance:
				v.Inconclusive = true
				v.Reason = fmt.Sprintf("%+.1f%% with %d/%d runs: cannot tell noise from change; repeat each side at least twice", 100*v.Change, len(bv), len(cv))
			}
		}
		out = append(out, v)
	}
	return out
}

// MinRuns is the fewest runs on each side for the gate to judge a KPI:
// with fewer, the run-to-run noise is unknown and any change may be noise.
const MinRuns = 2

// TooFew tells whether either side of the verdict has fewer than MinRuns
// runs: too few to tell a change from noise.
func (v Verdict) TooFew() bool { return v.Runs[0] < MinRuns || v.Runs[1] < MinRuns }

// Gate returns false and the regressions when any KPI regressed beyond
// tolerance and beyond the noise, as Diff judged it on at least MinRuns runs
// on each side. A verdict with fewer runs never fails the gate (see TooFew):
// one run against one run cannot tell a regression from noise.
func Gate(vs []Verdict, tolerance float64) (bool, []Verdict) {
	var bad []Verdict
	for _, v := range vs {
		if v.Regressed && !v.TooFew() && math.Abs(v.Change) > tolerance {
			bad = append(bad, v)
		}
	}
	return len(bad) == 0, bad
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// relStd is the sample standard deviation relative to the mean.
func relStd(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	sd := math.Sqrt(s / float64(len(v)-1))
	if m == 0 {
		return 0
	}
	return sd / math.Abs(m)
}
