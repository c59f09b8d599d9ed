package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// The gate's error rates, measured on simulated replicates: each run's
// p99 is 100 ms × (1 + shift) × (1 + cv·N(0,1)), or with skew × exp(cv·N(0,1)
// - cv²/2) (lognormal: a long tail of slow runs), a fresh noise seed per
// trial. With no shift every flagged regression is a false positive; with
// one, the share flagged is the detection rate.
type trial struct {
	runs      int     // runs on each side
	shift, cv float64 // the candidate's true change, the runs' spread
	tolerance float64
	skew      bool
}

type rates struct {
	flagged, covered, old float64 // share flagged, share of intervals holding the true change, share the previous rule flagged
}

func calibrate(tr trial, seeds, resamples int) rates {
	var flagged, covered, old int
	o := Options{Tolerance: tr.tolerance, Resamples: resamples, Measures: Measures("latency.p99")}
	for s := range seeds {
		rng := rand.New(rand.NewPCG(uint64(s), 0xca11b8a7e))
		side := func(v string, m float64) ([]*pipebench.Result, []float64) {
			var rs []*pipebench.Result
			var xs []float64
			for range tr.runs {
				x := m * (1 + tr.cv*rng.NormFloat64())
				if tr.skew {
					x = m * math.Exp(tr.cv*rng.NormFloat64()-tr.cv*tr.cv/2)
				}
				xs = append(xs, x)
				rs = append(rs, &pipebench.Result{Manifest: pipebench.Manifest{Version: v, Case: "c", Status: pipebench.StatusPassed},
					Phases: []pipebench.PhaseResult{{Name: "load", KPIs: []pipebench.KPI{{Name: "latency.p99", Value: x}}}}})
			}
			return rs, xs
		}
		b, bx := side("1", 100)
		c, cx := side("2", 100*(1+tr.shift))
		rep, err := Diff(b, c, o)
		if err != nil || len(rep.Verdicts) != 1 {
			panic(fmt.Sprint(err, rep))
		}
		v := rep.Verdicts[0]
		if len(rep.Regressions()) > 0 {
			flagged++
		}
		if v.Low <= tr.shift && tr.shift <= v.High {
			covered++
		}
		if previousRule(bx, cx, tr.tolerance) {
			old++
		}
	}
	n := float64(seeds)
	return rates{float64(flagged) / n, float64(covered) / n, float64(old) / n}
}

// previousRule is how the gate decided before intervals, for comparison:
// a change beyond the tolerance and beyond three times the larger relative
// standard deviation of the two sides.
func previousRule(b, c []float64, tol float64) bool {
	change := (mean(c) - mean(b)) / math.Abs(mean(b))
	rel := func(v []float64) float64 { return math.Sqrt(variance(v)) / math.Abs(mean(v)) }
	return change > math.Max(tol, 3*math.Max(rel(b), rel(c)))
}

// The gate's false-positive rate on noise alone stays below the one-sided
// level (5% at 90% confidence, and far below with a tolerance), its
// intervals hold the true change about as often as they claim, and it
// finds a regression of twice the tolerance. Small counts here (the full
// measurement is BenchmarkGateCalibration).
func TestGateCalibration(t *testing.T) {
	const seeds, resamples = 300, 2000
	for _, n := range []int{2, 3, 5, 10} {
		noise := calibrate(trial{runs: n, cv: 0.05, tolerance: 0}, seeds, resamples)
		if noise.flagged > 0.09 {
			t.Errorf("%d runs, tolerance 0: %.1f%% false positives, want about 5%% or less", n, 100*noise.flagged)
		}
		if noise.covered < 0.84 {
			t.Errorf("%d runs: the 90%% interval held the true change in %.1f%% of trials", n, 100*noise.covered)
		}
		if tol := calibrate(trial{runs: n, cv: 0.05, tolerance: 0.10}, seeds, resamples); tol.flagged > 0.01 {
			t.Errorf("%d runs, tolerance 10%%: %.1f%% false positives", n, 100*tol.flagged)
		}
	}
	for _, n := range []int{3, 10} {
		// Runs far more erratic than MaxCV: the interval widens with them.
		if tail := calibrate(trial{runs: n, cv: 0.6, tolerance: 0.10, skew: true}, seeds, resamples); tail.flagged > 0.06 {
			t.Errorf("%d runs, lognormal spread 0.6: %.1f%% false positives", n, 100*tail.flagged)
		}
	}
	if shift := calibrate(trial{runs: 5, shift: 0.20, cv: 0.05, tolerance: 0.10}, seeds, resamples); shift.flagged < 0.6 {
		t.Errorf("5 runs, +20%% with 5%% spread, tolerance 10%%: found in %.1f%% of trials", 100*shift.flagged)
	}
}

// BenchmarkGateCalibration prints the gate's false-positive rate on noise
// alone and its detection rate of known shifts, with the default 10,000
// resamples over 1,000 noise seeds per row, beside what the previous rule
// (change beyond max(tolerance, 3 × relative sd)) flagged:
//
//	go test ./compare -run XXX -bench GateCalibration -benchtime 1x
func BenchmarkGateCalibration(b *testing.B) {
	const seeds = 1000
	var out strings.Builder
	for b.Loop() {
		out.Reset()
		fmt.Fprintf(&out, "\n%-5s %-6s %-9s %-9s %-10s %-10s %-10s\n", "runs", "shift", "cv", "tolerance", "flagged", "covered", "previous")
		for _, tr := range []trial{
			{3, 0, 0.05, 0, false}, {5, 0, 0.05, 0, false}, {10, 0, 0.05, 0, false},
			{3, 0, 0.05, 0.10, false}, {5, 0, 0.05, 0.10, false}, {10, 0, 0.05, 0.10, false},
			{3, 0, 0.10, 0.10, false}, {5, 0, 0.10, 0.10, false}, {10, 0, 0.10, 0.10, false},
			{3, 0.20, 0.05, 0.10, false}, {5, 0.20, 0.05, 0.10, false}, {10, 0.20, 0.05, 0.10, false},
			{3, 0.30, 0.10, 0.10, false}, {5, 0.30, 0.10, 0.10, false}, {10, 0.30, 0.10, 0.10, false},
			{3, 0, 0.6, 0.10, true}, {5, 0, 0.6, 0.10, true}, {10, 0, 0.6, 0.10, true},
			{3, 1, 0.6, 0.10, true}, {5, 1, 0.6, 0.10, true}, {10, 1, 0.6, 0.10, true},
		} {
			r := calibrate(tr, seeds, DefaultResamples)
			cv := fmt.Sprintf("%.2f", tr.cv)
			if tr.skew {
				cv += " log"
			}
			fmt.Fprintf(&out, "%-5d %-6s %-9s %-9s %-10s %-10s %-10s\n", tr.runs, Percent(tr.shift), cv, Percent(tr.tolerance),
				Percent(r.flagged), Percent(r.covered), Percent(r.old))
		}
	}
	fmt.Print(out.String()) // b.Log would cut the table at ten lines
}

// BenchmarkDiff30Runs20KPIs times one comparison of 30 runs a side on 20
// KPIs (each KPI its own 10,000-resample bootstrap), and prints it.
func BenchmarkDiff30Runs20KPIs(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("kpi_%02d", i))
	}
	side := func(v string, m float64) []*pipebench.Result {
		var rs []*pipebench.Result
		for range 30 {
			p := pipebench.PhaseResult{Name: "load"}
			for _, n := range names {
				p.KPIs = append(p.KPIs, pipebench.KPI{Name: n, Value: m * (1 + 0.05*rng.NormFloat64())})
			}
			rs = append(rs, &pipebench.Result{Manifest: pipebench.Manifest{Version: v, Case: "c", Status: pipebench.StatusPassed}, Phases: []pipebench.PhaseResult{p}})
		}
		return rs
	}
	base, cand := side("1", 100), side("2", 103)
	o := Options{Measures: Measures(names...), Tolerance: 0.1}
	start := time.Now()
	n := 0
	for b.Loop() {
		if _, err := Diff(base, cand, o); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.Logf("30 runs a side × 20 KPIs, %d resamples each: %v per comparison", DefaultResamples, time.Since(start)/time.Duration(n))
}
