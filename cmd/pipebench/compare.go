package main

import (
	"fmt"
	"sort"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/compare"
	"github.com/pipebench/pipebench/report/markdown"
)

// scenarioRuns are the runs of one scenario, oldest first.
type scenarioRuns struct {
	name string
	runs []*pipebench.Result
}

// byScenario splits runs by scenario, names sorted.
func byScenario(all []*pipebench.Result) []scenarioRuns {
	idx := map[string]int{}
	var out []scenarioRuns
	for _, r := range all {
		i, ok := idx[r.Manifest.Scenario]
		if !ok {
			i = len(out)
			idx[r.Manifest.Scenario] = i
			out = append(out, scenarioRuns{name: r.Manifest.Scenario})
		}
		out[i].runs = append(out[i].runs, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// compareOne prints the table of one scenario's runs and the verdicts of its
// candidate version against its baseline.
func (a *app) compareOne(runs []*pipebench.Result, baseline, candidate string) error {
	if err := markdown.Render(a.stdout, markdown.Build(runs, markdown.Options{})); err != nil {
		return err
	}
	base, cand := pickVersions(runs, baseline, candidate)
	b, c := byVersion(runs, base), byVersion(runs, cand)
	if base == "" || cand == "" || base == cand || len(b) == 0 || len(c) == 0 {
		fmt.Fprintln(a.stdout, "\n(one version of this scenario in the history: nothing to diff)")
		return nil
	}
	vs := compare.Diff(b, c, compare.Options{})
	printVerdicts(a, base, cand, vs)
	if note := tooFewNote(vs); note != "" {
		fmt.Fprintln(a.stdout, "note: "+note)
	}
	return nil
}

// tooFewNote says, when some KPIs had too few runs on a side to be judged,
// how many and what to do; "" otherwise.
func tooFewNote(vs []compare.Verdict) string {
	n, base, cand := 0, 0, 0
	for _, v := range vs {
		if v.TooFew() {
			n++
			base, cand = v.Runs[0], v.Runs[1]
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d KPI(s) had too few runs to tell a change from noise (%d baseline, %d candidate); repeat each side at least %d times",
		n, base, cand, compare.MinRuns)
}
