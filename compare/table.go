package compare

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report/markdown"
)

// Judged are the KPIs compare and gate judge: those the table of the runs
// shows (a suite's own table: a blast suite's time to complete, peak queue
// and completion rate), and for runs outside a suite (suite false)
// DefaultKPIs too.
func Judged(runs []*pipebench.Result, table markdown.Options, suite bool) []Measure {
	var ms []Measure
	if !suite {
		ms = Measures(DefaultKPIs...)
	}
	reduce := map[markdown.Agg]Reduce{markdown.AggValue: ReduceValue, markdown.AggSum: ReduceSum,
		markdown.AggMax: ReduceMax, markdown.AggInstances: ReduceMax}
	for _, s := range markdown.ShownKPIs(runs, table) {
		phase := s.Phase
		if phase == markdown.TotalRow {
			phase = Total
		}
		ms = append(ms, Measure{KPI: s.KPI, Phase: phase, Reduce: reduce[s.Agg]})
	}
	return ms
}

// Write prints the report of candidate version cand against base: how the
// verdicts were reached, a row per verdict (regressions first, each change
// with its interval), then the notes (runs left out, erratic KPIs, too few
// runs).
func (r *Report) Write(w io.Writer, base, cand string) error {
	fmt.Fprintf(w, "\n%s against %s: %s\n", cand, base, r.Describe())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CASE\tPHASE\tKPI\tBASELINE\tCANDIDATE\tCHANGE\t%s INTERVAL\tVERDICT\n", Percent(r.Options.Confidence))
	vs := append([]Verdict(nil), r.Verdicts...)
	sort.SliceStable(vs, func(i, j int) bool {
		return vs[i].Judgement == Regressed && vs[j].Judgement != Regressed
	})
	scenarios := map[string]bool{}
	for _, v := range vs {
		scenarios[v.Scenario] = true
	}
	for _, v := range vs {
		if len(scenarios) > 1 {
			v.Case = v.Scenario + ": " + v.Case
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Case, v.Phase, v.KPI, FormatValue(v.Baseline), FormatValue(v.Candidate),
			v.FormatChange(), v.FormatInterval(), v.Text())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes() {
		if _, err := fmt.Fprintln(w, "note: "+n); err != nil {
			return err
		}
	}
	return nil
}

// Gate decides a gate from the report of cand against base, whose sides
// had nb and nc runs. It fails closed: nil only when every KPI was decided
// and none regressed; an error with pipebench.ExitThresholds naming the
// regressions; with pipebench.ExitUndecided when a KPI could not be
// decided (too few runs, too erratic, unclear), unless allowUndecided (then
// nil: Undecided says which); with pipebench.ExitInvalid when a side had no
// valid run; a usage error when the versions share nothing to compare.
func (r *Report) Gate(base, cand string, nb, nc int, allowUndecided bool) error {
	if len(r.Verdicts) == 0 {
		if r.Usable[0] == 0 || r.Usable[1] == 0 {
			return &pipebench.Error{Code: pipebench.ExitInvalid,
				Msg:  fmt.Sprintf("no valid runs to gate: baseline %q has %d of %d, candidate %q has %d of %d", base, r.Usable[0], nb, cand, r.Usable[1], nc),
				Hint: "the runs left out are listed above with their reasons; run the scenario again so that it is valid"}
		}
		return pipebench.UsageError(fmt.Sprintf("no runs to gate: %q and %q share no scenario and case", base, cand),
			"run the candidate's scenario with the baseline version too, or check --scenario", nil)
	}
	if bad := r.Regressions(); len(bad) > 0 {
		return &pipebench.Error{Code: pipebench.ExitThresholds,
			Msg: fmt.Sprintf("gate: %d KPI(s) regressed: their whole %s interval lies beyond ±%s", len(bad), Percent(r.Options.Confidence), Percent(r.Options.Tolerance))}
	}
	if u := r.Undecided(); u != "" && !allowUndecided {
		return &pipebench.Error{Code: pipebench.ExitUndecided,
			Msg: fmt.Sprintf("gate: not every KPI was decided (%s), so nothing shows that %s did not regress against %s (%d valid baseline run(s), %d candidate)",
				u, cand, base, r.Usable[0], r.Usable[1]),
			Hint: fmt.Sprintf("run each version %d times or more, interleaved, and look at why erratic KPIs vary (see the notes above); --allow-undecided lets undecided KPIs pass", MinRuns+1)}
	}
	return nil
}
