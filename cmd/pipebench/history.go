package main

import (
	"fmt"
	"math"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/compare"
	"github.com/pipebench/pipebench/store"
)

// openStore opens the history named by --store (default: store.DefaultPath).
func (a *app) openStore(ref string) (pipebench.Store, error) {
	s, err := store.Open(a.ctx, ref)
	if err != nil {
		var pe *pipebench.Error
		if asErr(err, &pe) {
			return nil, err
		}
		return nil, pipebench.UsageError("cannot open the results history", "check --store (a SQLite file path)", err)
	}
	return s, nil
}

func storeFlag(cmd *cobra.Command, ref *string) {
	cmd.Flags().StringVar(ref, "store", "", "results history: a SQLite file or postgres://USER:PASS@HOST:PORT/DB (default "+store.DefaultPath()+")")
}

func (a *app) historyCommands() []*cobra.Command {
	var ref, scenario, version string
	var limit int
	var since sinceFlag
	history := &cobra.Command{
		Use:   "history",
		Short: "List saved runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openStore(ref)
			if err != nil {
				return err
			}
			defer s.Close()
			f := pipebench.RunFilter{Scenario: scenario, Version: version, Limit: limit}
			if since > 0 {
				f.Since = time.Now().Add(-since.D())
			}
			runs, err := s.Runs(a.ctx, f)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSCENARIO\tVERSION\tSTATUS\tSTARTED\tDURATION")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Scenario, r.Version, r.Status,
					r.Started.Local().Format("2006-01-02 15:04:05"), r.Duration.Round(time.Second))
			}
			return tw.Flush()
		},
	}
	storeFlag(history, &ref)
	history.Flags().StringVar(&scenario, "scenario", "", "only runs of this scenario")
	history.Flags().StringVar(&version, "version", "", "only runs of this version of the system under test")
	history.Flags().IntVar(&limit, "limit", 50, "at most this many runs")
	history.Flags().Var(&since, "since", "only runs started within this long (e.g. 7d, 36h, 90m)")

	var showRef string
	show := &cobra.Command{
		Use:   "show RUN",
		Short: "Print a saved run's KPI table (RUN may be a unique prefix of its id)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := a.loadRun(showRef, args[0])
			if err != nil {
				return err
			}
			rep, err := a.reg.Reporter("text")
			if err != nil {
				return err
			}
			return rep.Report(a.stdout, res)
		},
	}
	storeFlag(show, &showRef)

	var cmpRef, cmpScenario, cmpSuite, baseline, candidate, format string
	cmp := &cobra.Command{
		Use:   "compare",
		Short: "One row per version, a column group per test case; differences flagged only outside the noise",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmpSuite != "" {
				// A suite is one table: versions × its cases.
				all, err := a.selectSuite(cmpRef, cmpSuite, cmpScenario)
				if err != nil {
					return err
				}
				return a.compareOne(all, baseline, candidate)
			}
			all, err := a.loadAll(cmpRef, cmpScenario)
			if err != nil {
				return err
			}
			if len(all) == 0 {
				return pipebench.UsageError("the history has no runs to compare", "run a scenario first: pipebench run", nil)
			}
			// One table per scenario: runs of different scenarios never
			// share a table or a verdict.
			groups := byScenario(all)
			for i, g := range groups {
				if len(groups) > 1 {
					if i > 0 {
						fmt.Fprintln(a.stdout)
					}
					fmt.Fprintf(a.stdout, "## %s\n\n", g.name)
				}
				if err := a.compareOne(g.runs, baseline, candidate); err != nil {
					return err
				}
			}
			return nil
		},
	}
	storeFlag(cmp, &cmpRef)
	cmp.Flags().StringVar(&cmpScenario, "scenario", "", "only runs of this scenario")
	cmp.Flags().StringVar(&cmpSuite, "suite", "", "only runs of this suite (its name, file or builtin:NAME), as one versions × cases table")
	cmp.Flags().StringVar(&baseline, "baseline", "", "version to compare against (default: the second newest)")
	cmp.Flags().StringVar(&candidate, "candidate", "", "version to judge (default: the newest)")
	cmp.Flags().StringVar(&format, "format", "md", "table format (md)")

	var gateRef, gateScenario, gateSuite, gateBase, gateCand string
	var tolerance float64
	gate := &cobra.Command{
		Use:   "gate --baseline VERSION",
		Short: "Exit 99 when a KPI of the candidate version regressed past --tolerance (for CI)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if gateBase == "" {
				return pipebench.UsageError("gate needs --baseline VERSION", "the version to hold the candidate to, e.g. --baseline 0.99.0", nil)
			}
			var all []*pipebench.Result
			var err error
			if gateSuite != "" {
				all, err = a.selectSuite(gateRef, gateSuite, gateScenario)
			} else {
				all, err = a.loadAll(gateRef, gateScenario)
			}
			if err != nil {
				return err
			}
			base, cand := pickVersions(all, gateBase, gateCand)
			b, c := byVersion(all, base), byVersion(all, cand)
			if len(b) == 0 || len(c) == 0 || base == cand {
				return pipebench.UsageError(fmt.Sprintf("no runs to gate: baseline %q has %d, candidate %q has %d", base, len(b), cand, len(c)), "check the versions with: pipebench history", nil)
			}
			vs := compare.Diff(b, c, compare.Options{Tolerance: tolerance})
			if len(vs) == 0 {
				return pipebench.UsageError(fmt.Sprintf("no runs to gate: %q and %q share no scenario and case", base, cand),
					"run the candidate's scenario with the baseline version too, or check --scenario", nil)
			}
			printVerdicts(a, base, cand, vs)
			if ok, bad := compare.Gate(vs, tolerance); !ok {
				fmt.Fprintf(a.stderr, "gate: %d KPI(s) regressed beyond %.0f%%\n", len(bad), tolerance*100)
				return &silentExit{code: pipebench.ExitThresholds}
			}
			if note := tooFewNote(vs); note != "" {
				fmt.Fprintln(a.stdout, "gate: passed, but "+note)
				return nil
			}
			fmt.Fprintln(a.stdout, "gate: passed")
			return nil
		},
	}
	storeFlag(gate, &gateRef)
	gate.Flags().StringVar(&gateScenario, "scenario", "", "only runs of this scenario")
	gate.Flags().StringVar(&gateSuite, "suite", "", "only runs of this suite (its name, file or builtin:NAME)")
	gate.Flags().StringVar(&gateBase, "baseline", "", "version to hold the candidate to (required)")
	gate.Flags().StringVar(&gateCand, "candidate", "", "version to judge (default: the newest)")
	gate.Flags().Float64Var(&tolerance, "tolerance", 0.10, "relative change allowed before a regression fails the gate")
	return []*cobra.Command{history, show, cmp, gate}
}

// loadRun reads a saved run by id or prefix.
func (a *app) loadRun(ref, id string) (*pipebench.Result, error) {
	s, err := a.openStore(ref)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Run(a.ctx, pipebench.RunID(id))
}

// loadAll reads every run (of a scenario), oldest first.
func (a *app) loadAll(ref, scenario string) ([]*pipebench.Result, error) {
	s, err := a.openStore(ref)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	runs, err := s.Runs(a.ctx, pipebench.RunFilter{Scenario: scenario})
	if err != nil {
		return nil, err
	}
	var out []*pipebench.Result
	for i := len(runs) - 1; i >= 0; i-- {
		r, err := s.Run(a.ctx, runs[i].ID)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// pickVersions fills in the baseline (second newest) and candidate (newest)
// versions when they are not given.
func pickVersions(all []*pipebench.Result, base, cand string) (string, string) {
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

func byVersion(all []*pipebench.Result, v string) []*pipebench.Result {
	var out []*pipebench.Result
	for _, r := range all {
		if r.Manifest.Version == v {
			out = append(out, r)
		}
	}
	return out
}

func printVerdicts(a *app, base, cand string, vs []compare.Verdict) {
	fmt.Fprintf(a.stdout, "\n%s against %s:\n", cand, base)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tPHASE\tKPI\tBASELINE\tCANDIDATE\tCHANGE\tVERDICT")
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Regressed && !vs[j].Regressed })
	scenarios := map[string]bool{}
	for _, v := range vs {
		scenarios[v.Scenario] = true
	}
	for _, v := range vs {
		verdict := "same"
		if len(scenarios) > 1 {
			v.Case = v.Scenario + ": " + v.Case
		}
		switch {
		case v.TooFew() && (v.Regressed || v.Improved || v.Inconclusive):
			verdict = fmt.Sprintf("? too few runs to tell (%d/%d): %+.1f%%", v.Runs[0], v.Runs[1], 100*v.Change)
		case v.Regressed:
			verdict = "▼ worse: " + v.Reason
		case v.Improved:
			verdict = "▲ better: " + v.Reason
		case v.Inconclusive:
			verdict = "? " + v.Reason
		}
		change := fmt.Sprintf("%+.1f%%", 100*v.Change)
		if math.IsInf(v.Change, 0) {
			change = "new"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.4g\t%.4g\t%s\t%s\n", v.Case, v.Phase, v.KPI, v.Baseline, v.Candidate, change, verdict)
	}
	tw.Flush()
}
