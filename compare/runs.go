package compare

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pipebench/pipebench"
)

// Excluded is a run left out of a comparison, and why.
type Excluded struct {
	RunID, Scenario, Version, Case string
	Status                         pipebench.Status
	// Reason is the run's first reason ("phase load: the generator
	// started 40 of 200 planned items ..."), or its status in words.
	Reason string
}

// Usable reports whether a run's numbers describe the system under test
// over its whole plan: passed, completed and failed runs are; invalid runs
// (the generator could not hold the plan, or nothing reached the target),
// runs stopped by a signal, checkpoints of runs still going and runs in
// which pipebench itself failed are not.
func Usable(r *pipebench.Result) bool {
	switch r.Manifest.Status {
	case pipebench.StatusInvalid, pipebench.StatusAborted, pipebench.StatusRunning, pipebench.StatusError:
		return false
	}
	return true
}

// Split separates the usable runs from the others, keeping the order of
// each, and says why each other run was left out.
func Split(runs []*pipebench.Result) (usable []*pipebench.Result, excluded []Excluded) {
	for _, r := range runs {
		if Usable(r) {
			usable = append(usable, r)
			continue
		}
		m := r.Manifest
		why := string(m.Status)
		if len(m.Reasons) > 0 {
			why = m.Reasons[0]
		}
		excluded = append(excluded, Excluded{RunID: m.RunID, Scenario: m.Scenario, Version: m.Version, Case: caseOf(r), Status: m.Status, Reason: why})
	}
	return usable, excluded
}

// ExcludedNotes says in words how many runs were left out and why: a
// count by status, then one line per run.
func ExcludedNotes(ex []Excluded) []string {
	if len(ex) == 0 {
		return nil
	}
	count := map[pipebench.Status]int{}
	var order []pipebench.Status
	for _, e := range ex {
		if count[e.Status] == 0 {
			order = append(order, e.Status)
		}
		count[e.Status]++
	}
	var parts []string
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
	}
	out := []string{fmt.Sprintf("left out of the comparison: %d run(s) whose numbers do not describe the system under test (%s)", len(ex), strings.Join(parts, ", "))}
	for _, e := range ex {
		out = append(out, fmt.Sprintf("  %s %s, run %s: %s: %s", e.Version, e.Case, e.RunID, e.Status, e.Reason))
	}
	return out
}

func caseOf(r *pipebench.Result) string {
	if r.Manifest.Case != "" {
		return r.Manifest.Case
	}
	return r.Manifest.Scenario
}

// Group is the runs of one scenario, in the order given.
type Group struct {
	Scenario string
	Runs     []*pipebench.Result
}

// ByScenario splits runs by scenario, names sorted: runs of different
// scenarios never share a table or a verdict.
func ByScenario(all []*pipebench.Result) []Group {
	idx := map[string]int{}
	var out []Group
	for _, r := range all {
		i, ok := idx[r.Manifest.Scenario]
		if !ok {
			i = len(out)
			idx[r.Manifest.Scenario] = i
			out = append(out, Group{Scenario: r.Manifest.Scenario})
		}
		out[i].Runs = append(out[i].Runs, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scenario < out[j].Scenario })
	return out
}

// PickVersions fills in the baseline (the second newest version) and the
// candidate (the newest) when they are "", from runs ordered oldest first.
func PickVersions(all []*pipebench.Result, base, cand string) (string, string) {
	var order []string
	seen := map[string]bool{}
	for i := len(all) - 1; i >= 0; i-- {
		v := all[i].Manifest.Version
		if !seen[v] {
			seen[v] = true
			order = append(order, v)
		}
	}
	if cand == "" && len(order) > 0 {
		cand = order[0]
	}
	if base == "" {
		for _, v := range order {
			if v != cand {
				base = v
				break
			}
		}
	}
	return base, cand
}

// OfVersion returns the runs of version v, in the order given.
func OfVersion(all []*pipebench.Result, v string) []*pipebench.Result {
	var out []*pipebench.Result
	for _, r := range all {
		if r.Manifest.Version == v {
			out = append(out, r)
		}
	}
	return out
}
