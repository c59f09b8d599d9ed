// Package compare lines runs of different versions up against each other
// and says which differences are real, the way continuous regression
// detectors for telemetry pipelines decide (Vector's soak tests and the
// regression detector Datadog runs on lading for Vector and its Agent):
// from replicated runs of each version, each KPI's change gets a
// confidence interval, a change counts only when its whole interval lies
// beyond a tolerance, and a KPI whose runs spread too widely to be judged
// is named erratic rather than judged.
//
// Only runs whose numbers describe the system under test are compared:
// invalid, aborted and still-running runs are left out, and the Report
// says which and why (see Usable).
package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pipebench/pipebench"
)

// DefaultKPIs are compared, in every phase, when the caller names no
// measures.
var DefaultKPIs = []string{"sent_rate", "delivered_rate", "receiver_accepted_rate", "exporter_sent_rate",
	"exporter_queue_size.max", "memory_mb", "cpu_cores", "latency.p99", "e2e_latency.p99", "lost"}

// The defaults of Options.
const (
	DefaultTolerance  = 0.05
	DefaultConfidence = 0.90
	// DefaultMaxCV is the coefficient of variation above which a KPI is
	// too erratic to judge: the bound Vector's soak analysis settled on.
	DefaultMaxCV     = 0.30
	DefaultResamples = 10000
)

// MinRuns is the fewest usable runs on each side for a KPI to be judged:
// with one, the run-to-run spread is unknown and any change may be noise.
const MinRuns = 2

// Total is the Phase of a Measure taken from each run's total row.
const Total = "total"

// Reduce says how a Measure reduces the KPIs of one name with different
// labels (instances, classes) to one number per run.
type Reduce string

// The reductions, as a table's columns aggregate.
const (
	ReduceAuto  Reduce = ""      // the sum of a rate or of errors, the largest of anything else
	ReduceSum   Reduce = "sum"   // the sum over labels
	ReduceMax   Reduce = "max"   // the largest over labels
	ReduceValue Reduce = "value" // the KPI without labels (else the first)
)

// Measure is one KPI compared, from every phase or from one.
type Measure struct {
	KPI string
	// Phase is the phase the KPI is taken from: "" for every phase of the
	// runs (each compared on its own), Total for the runs' total row.
	Phase  string
	Reduce Reduce
}

// Measures returns the KPIs named, each taken from every phase.
func Measures(kpis ...string) []Measure {
	out := make([]Measure, len(kpis))
	for i, k := range kpis {
		out[i] = Measure{KPI: k}
	}
	return out
}

// HigherIsWorse reports whether a rise of the KPI is a regression
// (latency, loss, memory, queues, time to complete) rather than an
// improvement (rates, and what was sent, accepted or delivered).
func HigherIsWorse(kpi string) bool {
	switch kpi {
	case "sent", "accepted", "delivered", "exported", "capacity", "burst_tolerance", "sustainable_rate", "first_unstable_rate":
		return false
	}
	bad := strings.Contains(kpi, "refused") || strings.Contains(kpi, "failed") || strings.Contains(kpi, "error")
	return !strings.HasSuffix(kpi, "_rate") || bad
}

// Judgement is what a comparison concluded about one KPI.
type Judgement string

// The judgements.
const (
	// Same: the whole interval lies within ±tolerance.
	Same Judgement = "same"
	// Regressed: the whole interval lies beyond the tolerance, on the
	// worse side.
	Regressed Judgement = "worse"
	// Improved: the whole interval lies beyond the tolerance, on the
	// better side.
	Improved Judgement = "better"
	// Unclear: the interval reaches past the tolerance but does not lie
	// wholly beyond it; more runs narrow it.
	Unclear Judgement = "unclear"
	// Erratic: a side's runs spread more than Options.MaxCV and the
	// interval cannot decide: too erratic to judge.
	Erratic Judgement = "erratic"
	// TooFew: a side has fewer than MinRuns runs; not judged.
	TooFew Judgement = "too few runs"
)

// Verdict is the comparison of one KPI in one scenario, case and phase.
type Verdict struct {
	KPI, Scenario, Case, Phase string
	// Baseline and Candidate are the means over each side's runs.
	Baseline, Candidate float64
	// Change is (candidate - baseline) / |baseline|, ±Inf when the
	// baseline is 0 and the candidate is not.
	Change float64
	// Low and High bound Change at Confidence; NaN when there are too
	// few runs or no relative interval (a baseline of 0).
	Low, High  float64
	Confidence float64
	Tolerance  float64
	// CV is each side's coefficient of variation (sd / |mean|).
	CV        [2]float64
	Runs      [2]int // runs on each side
	Judgement Judgement
	Reason    string
}

// Options tunes Diff. The zero value of a field is its default except for
// Tolerance, which is used as given.
type Options struct {
	// Measures are the KPIs compared (default: DefaultKPIs in every
	// phase).
	Measures []Measure
	// Tolerance is the relative change that does not count: a KPI
	// regressed only when its whole interval lies beyond it. 0 flags any
	// change the interval tells apart from none.
	Tolerance float64
	// Confidence is the interval's level, in (0, 1) (default 0.90).
	Confidence float64
	// MaxCV is the coefficient of variation of a side's runs above which
	// a KPI whose interval cannot decide is named erratic (default 0.30).
	MaxCV float64
	// Resamples is the bootstrap's number of resamples (default 10,000).
	Resamples int
}

// Validate refuses options that would make every interval meaningless:
// a tolerance, confidence or bound that is NaN, infinite or out of range.
// (A NaN tolerance passes every comparison; it must never reach one.)
func (o Options) Validate() error {
	var errs []error
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if bad(o.Tolerance) || o.Tolerance < 0 {
		errs = append(errs, fmt.Errorf("tolerance %v: must be a finite number, 0 or more", o.Tolerance))
	}
	if bad(o.Confidence) || o.Confidence < 0 || o.Confidence >= 1 {
		errs = append(errs, fmt.Errorf("confidence %v: must be more than 0 and less than 1", o.Confidence))
	}
	if bad(o.MaxCV) || o.MaxCV < 0 {
		errs = append(errs, fmt.Errorf("max CV %v: must be a finite number more than 0", o.MaxCV))
	}
	if o.Resamples < 0 || o.Resamples > 10_000_000 {
		errs = append(errs, fmt.Errorf("resamples %d: must be between 1 and 10,000,000", o.Resamples))
	}
	for _, m := range o.Measures {
		if m.KPI == "" {
			errs = append(errs, errors.New("a measure names no KPI"))
		}
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() {
	if len(o.Measures) == 0 {
		o.Measures = Measures(DefaultKPIs...)
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if o.MaxCV == 0 {
		o.MaxCV = DefaultMaxCV
	}
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
}

// Report is the outcome of Diff.
type Report struct {
	// Options are the options used, defaults filled in.
	Options Options
	// Verdicts are sorted by scenario, case, phase and KPI.
	Verdicts []Verdict
	// Excluded are the runs left out, of either side (see Usable).
	Excluded []Excluded
	// Usable counts the runs compared on each side.
	Usable [2]int
}

// Regressions returns the KPIs that regressed: those whose whole interval
// lies beyond the tolerance on the worse side. KPIs with too few runs,
// erratic or unclear KPIs are never among them.
func (r *Report) Regressions() []Verdict {
	var bad []Verdict
	for _, v := range r.Verdicts {
		if v.Judgement == Regressed {
			bad = append(bad, v)
		}
	}
	return bad
}

// Undecided says how many KPIs were neither judged the same nor changed,
// by judgement ("2 unclear, 1 erratic"), or "" when every KPI was decided.
func (r *Report) Undecided() string {
	var parts []string
	for _, j := range []Judgement{Unclear, Erratic, TooFew} {
		n := 0
		for _, v := range r.Verdicts {
			if v.Judgement == j {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, j))
		}
	}
	return strings.Join(parts, ", ")
}

// Describe says how the verdicts were reached, in one line.
func (r *Report) Describe() string {
	o := r.Options
	return fmt.Sprintf("%s intervals of each change (bootstrap of the means, %s resamples); a change counts when its interval lies wholly beyond ±%s; erratic above a run-to-run CV of %.2f",
		Percent(o.Confidence), pipebench.FormatCount(float64(o.Resamples)), Percent(o.Tolerance), o.MaxCV)
}

// Notes says what the verdicts alone do not: runs left out and why, KPIs
// too erratic to judge, and KPIs with too few runs.
func (r *Report) Notes() []string {
	out := ExcludedNotes(r.Excluded)
	var spread []string
	few, base, cand := 0, 0, 0
	for _, v := range r.Verdicts {
		switch v.Judgement {
		case Erratic:
			spread = append(spread, v.where())
		case TooFew:
			few++
			base, cand = v.Runs[0], v.Runs[1]
		}
	}
	if len(spread) > 0 {
		out = append(out, fmt.Sprintf("too erratic to judge (run-to-run CV above %.2f): %s; look at why their runs differ, or run each side more times", r.Options.MaxCV, strings.Join(spread, ", ")))
	}
	if few > 0 {
		out = append(out, fmt.Sprintf("%d KPI(s) had too few runs to tell a change from noise (%d baseline, %d candidate); repeat each side at least %d times",
			few, base, cand, MinRuns))
	}
	return out
}

// where names a verdict's KPI with its case and phase.
func (v Verdict) where() string {
	s := v.KPI + " (" + v.Case
	if v.Phase != "" && v.Phase != v.Case {
		s += " / " + v.Phase
	}
	return s + ")"
}

// FormatChange writes the change as a signed percentage ("+12.3%"), or
// "new"/"gone" when the baseline or the candidate is 0.
func (v Verdict) FormatChange() string {
	switch {
	case math.IsInf(v.Change, 0):
		return "new"
	case v.Change == -1 && v.Candidate == 0:
		return "gone"
	}
	return fmt.Sprintf("%+.1f%%", 100*v.Change)
}

// FormatInterval writes the interval ("[+8.1%, +16.0%]"), or "" when
// there is none.
func (v Verdict) FormatInterval() string {
	if math.IsNaN(v.Low) || math.IsNaN(v.High) {
		return ""
	}
	return "[" + signedPct(v.Low) + ", " + signedPct(v.High) + "]"
}

func signedPct(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+∞"
	case math.IsInf(x, -1):
		return "-∞"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

// FormatValue writes a KPI's mean for a person: thousands grouped and
// whole from 1,000 up ("20,025"), four significant digits below ("0.4461").
func FormatValue(x float64) string {
	if math.Abs(x) >= 1000 {
		return pipebench.FormatCount(x)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// Percent writes a ratio as a percentage without a needless decimal:
// 0.9 is "90%", 0.125 "12.5%".
func Percent(x float64) string {
	s := fmt.Sprintf("%.1f", 100*x)
	return strings.TrimSuffix(s, ".0") + "%"
}

// String is the whole verdict on one line: the KPI, where, its change
// and interval, and the judgement with its reason.
func (v Verdict) String() string {
	s := v.where() + ": " + v.FormatChange()
	if ci := v.FormatInterval(); ci != "" {
		s += " " + ci
	}
	return s + ": " + v.Text()
}

// Text is the judgement in a few words: a mark, the judgement and why
// (the change and its interval are FormatChange and FormatInterval).
func (v Verdict) Text() string {
	mark := map[Judgement]string{Same: "= ", Regressed: "▼ ", Improved: "▲ ", Unclear: "? ", Erratic: "~ ", TooFew: "? "}[v.Judgement]
	if v.Reason == "" {
		return mark + string(v.Judgement)
	}
	return mark + string(v.Judgement) + ": " + v.Reason
}

// Diff compares the candidate runs with the baseline runs, scenario by
// scenario, case by case and phase by phase: runs of different scenarios
// are never compared, even when their cases share a name. Runs that are
// not Usable are left out of both sides and listed in the Report.
//
// For each KPI with at least MinRuns usable runs on each side, Diff
// computes the relative change of the means and its interval (see
// interval), then judges it against the tolerance: Regressed or Improved
// when the whole interval lies beyond it, Same when the whole interval
// lies within it, Unclear otherwise, and Erratic rather than Unclear when a
// side's runs spread more than MaxCV. When every baseline run is 0 there is
// no relative interval: the change counts when every candidate run is on
// the same side of 0 and a rank test puts that beyond chance at the
// confidence level.
func Diff(baseline, candidate []*pipebench.Result, o Options) (*Report, error) {
	o.defaults()
	if err := o.Validate(); err != nil {
		return nil, pipebench.UsageError("cannot compare: "+err.Error(), "check the comparison's options", nil)
	}
	rep := &Report{Options: o}
	b, exB := Split(baseline)
	c, exC := Split(candidate)
	rep.Excluded = append(exB, exC...)
	rep.Usable = [2]int{len(b), len(c)}
	bv, cv := collect(b, o.Measures), collect(c, o.Measures)
	var keys []key
	for k := range cv {
		if _, ok := bv[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	for _, k := range keys {
		rep.Verdicts = append(rep.Verdicts, judge(k, bv[k], cv[k], o))
	}
	return rep, nil
}

type key struct{ scen, cs, phase, kpi string }

func (k key) less(o key) bool {
	if k.scen != o.scen {
		return k.scen < o.scen
	}
	if k.cs != o.cs {
		return k.cs < o.cs
	}
	if k.phase != o.phase {
		return k.phase < o.phase
	}
	return k.kpi < o.kpi
}

func (k key) String() string { return k.scen + "\x00" + k.cs + "\x00" + k.phase + "\x00" + k.kpi }

// collect reads each measure of each run: one value per run and key. A KPI
// two measures both name in a phase is read once, by the first.
func collect(runs []*pipebench.Result, ms []Measure) map[key][]float64 {
	out := map[key][]float64{}
	for _, r := range runs {
		seen := map[key]bool{}
		add := func(m Measure, p *pipebench.PhaseResult, phase string) {
			k := key{r.Manifest.Scenario, caseOf(r), phase, m.KPI}
			if p == nil || seen[k] {
				return
			}
			if v, ok := value(p, m); ok {
				seen[k] = true
				out[k] = append(out[k], v)
			}
		}
		for _, m := range ms {
			switch m.Phase {
			case "":
				for i := range r.Phases {
					add(m, &r.Phases[i], r.Phases[i].Name)
				}
			case Total:
				add(m, totalOf(r), Total)
			default:
				for i := range r.Phases {
					if r.Phases[i].Name == m.Phase {
						add(m, &r.Phases[i], m.Phase)
					}
				}
			}
		}
	}
	return out
}

// totalOf is the run's total row, or its one phase when it has no total
// (as the tables read it).
func totalOf(r *pipebench.Result) *pipebench.PhaseResult {
	if r.Total == nil && len(r.Phases) == 1 {
		return &r.Phases[0]
	}
	return r.Total
}

// value reduces the KPIs of a measure's name in a phase to one number.
func value(p *pipebench.PhaseResult, m Measure) (float64, bool) {
	ks := p.All(m.KPI)
	if len(ks) == 0 {
		return 0, false
	}
	how := m.Reduce
	if how == ReduceAuto {
		how = ReduceMax
		if strings.HasSuffix(m.KPI, "_rate") || m.KPI == "errors" {
			how = ReduceSum
		}
	}
	v := ks[0].Value
	switch how {
	case ReduceSum:
		v = 0
		for _, k := range ks {
			v += k.Value
		}
	case ReduceMax:
		for _, k := range ks {
			v = math.Max(v, k.Value)
		}
	case ReduceValue:
		for _, k := range ks {
			if len(k.Labels) == 0 {
				return k.Value, true
			}
		}
	}
	return v, true
}

// judge compares one KPI's runs.
func judge(k key, b, c []float64, o Options) Verdict {
	v := Verdict{KPI: k.kpi, Scenario: k.scen, Case: k.cs, Phase: k.phase,
		Baseline: mean(b), Candidate: mean(c), Low: math.NaN(), High: math.NaN(),
		Confidence: o.Confidence, Tolerance: o.Tolerance,
		CV: [2]float64{cv(b), cv(c)}, Runs: [2]int{len(b), len(c)}}
	v.Change = relChange(v.Baseline, v.Candidate)
	worseUp := HigherIsWorse(k.kpi)
	switch {
	case len(b) < MinRuns || len(c) < MinRuns:
		v.Judgement = TooFew
		v.Reason = fmt.Sprintf("%d/%d runs cannot tell a change from noise; repeat each side at least %d times", len(b), len(c), MinRuns)
	case v.Baseline == 0:
		judgeFromZero(&v, c, worseUp)
	default:
		// Sorted, so that the runs' order (the history's) cannot move
		// the interval.
		v.Change, v.Low, v.High = interval(slices.Sorted(slices.Values(b)), slices.Sorted(slices.Values(c)), o.Confidence, o.Resamples, seedFor(k.String()))
		judgeInterval(&v, worseUp)
		erratic(&v, o.MaxCV)
	}
	return v
}

// erratic names a KPI too erratic to judge: a side's runs spread more than
// maxCV and its interval cannot decide. The interval already holds the
// spread, so a change whose whole interval lies beyond the tolerance still
// counts, however erratic the runs (the calibration test measures the
// false positives this allows on skewed and bimodal noise: within the
// interval's level); only the undecided are named erratic rather than
// unclear, with the spread that made them so.
func erratic(v *Verdict, maxCV float64) {
	side, x := "baseline", v.CV[0]
	if v.CV[1] > x {
		side, x = "candidate", v.CV[1]
	}
	if x <= maxCV {
		return
	}
	spread := fmt.Sprintf("the %s's runs spread widely (CV %.2f, above %.2f)", side, x, maxCV)
	if v.Judgement == Unclear {
		v.Judgement = Erratic
		v.Reason = spread + ": too erratic to judge; find why the runs differ, or run each side more times"
		return
	}
	v.Reason += "; " + spread
}

// judgeInterval places the interval against the tolerance.
func judgeInterval(v *Verdict, worseUp bool) {
	tol := v.Tolerance
	switch {
	case v.Low > tol || v.High < -tol:
		up := v.Low > tol
		v.Judgement = Improved
		if up == worseUp {
			v.Judgement = Regressed
		}
		v.Reason = fmt.Sprintf("the whole interval lies beyond ±%s", Percent(tol))
	case v.Low >= -tol && v.High <= tol:
		v.Judgement = Same
		v.Reason = fmt.Sprintf("the whole interval lies within ±%s", Percent(tol))
	default:
		v.Judgement = Unclear
		v.Reason = fmt.Sprintf("the interval reaches past ±%s but does not lie wholly beyond it; more runs narrow it", Percent(tol))
	}
}

// judgeFromZero judges a KPI whose every baseline run is 0 (no loss, no
// queue): a relative change has no meaning, so the change counts when
// every candidate run lies on one side of 0 and that is beyond chance by
// the exact rank test (Mann-Whitney: one arrangement in C(n+m, n)).
func judgeFromZero(v *Verdict, c []float64, worseUp bool) {
	if v.Candidate == 0 && v.CV[1] == 0 {
		v.Change, v.Low, v.High = 0, 0, 0
		v.Judgement = Same
		v.Reason = "0 in every run on both sides"
		return
	}
	pos, neg := 0, 0
	for _, x := range c {
		if x > 0 {
			pos++
		} else if x < 0 {
			neg++
		}
	}
	p := separationP(v.Runs[0], v.Runs[1])
	alpha := (1 - v.Confidence) / 2
	if (pos == len(c) || neg == len(c)) && p <= alpha*(1+1e-9) {
		v.Judgement = Improved
		if (pos == len(c)) == worseUp {
			v.Judgement = Regressed
		}
		v.Reason = fmt.Sprintf("0 in every baseline run, %s in every candidate run (rank test: p = %.3f)", nonzero(pos == len(c)), p)
		return
	}
	v.Judgement = Unclear
	if pos == len(c) || neg == len(c) {
		v.Reason = fmt.Sprintf("0 in every baseline run, %s in every candidate run, but %d/%d runs cannot put that beyond chance at %s (p = %.3f); repeat the runs",
			nonzero(pos == len(c)), v.Runs[0], v.Runs[1], Percent(v.Confidence), p)
		return
	}
	v.Reason = fmt.Sprintf("0 in every baseline run, not 0 in %d of %d candidate runs; repeat the runs", pos+neg, len(c))
}

func nonzero(positive bool) string {
	if positive {
		return "above 0"
	}
	return "below 0"
}
