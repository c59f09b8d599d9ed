package command

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/compare"
	"github.com/pipebench/pipebench/internal/cli/cliflag"
	"github.com/pipebench/pipebench/report/markdown"
)

// diffFlags are the flags compare and gate share.
type diffFlags struct {
	store, scenario, suite, baseline, candidate string
	tolerance, confidence, maxCV                float64
	allowUndecided                              bool // gate only
}

func diffFlagsOn(cmd *cobra.Command, f *diffFlags, tolerance float64, toleranceDoc string) {
	storeFlag(cmd, &f.store)
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", "", "only runs of this scenario")
	fl.StringVar(&f.suite, "suite", "", "only runs of this suite (its name, file or builtin:NAME); judges the KPIs its table shows")
	fl.StringVar(&f.candidate, "candidate", "", "version to judge (default: the newest)")
	fl.Var(cliflag.NonNegative(&f.tolerance, tolerance), "tolerance", toleranceDoc)
	fl.Var(cliflag.NonNegative(&f.confidence, compare.DefaultConfidence).Positive().Below(1), "confidence", "level of each change's interval")
	fl.Var(cliflag.NonNegative(&f.maxCV, compare.DefaultMaxCV).Positive(), "max-cv", "a KPI whose runs on a side spread more than this (standard deviation over mean) is too erratic to judge")
}

// options are the comparison's options: the KPIs the runs' table shows
// (see compare.Judged) and the flags.
func (f *diffFlags) options(runs []*pipebench.Result, table markdown.Options) compare.Options {
	return compare.Options{Measures: compare.Judged(runs, table, f.suite != ""), Tolerance: f.tolerance, Confidence: f.confidence, MaxCV: f.maxCV}
}

// diffRuns reads the runs compare and gate work on (a suite's, or every
// run of --scenario), and the table options they are shown with.
func (a *app) diffRuns(f *diffFlags) ([]*pipebench.Result, markdown.Options, error) {
	if f.suite == "" {
		runs, err := a.loadAll(f.store, f.scenario)
		return runs, markdown.Options{}, err
	}
	runs, err := a.selectSuite(f.store, f.suite, f.scenario)
	if err != nil {
		return nil, markdown.Options{}, err
	}
	return runs, a.suiteTable(f.suite), nil
}

// suiteTable is the table a suite asks for when --suite names its file or
// builtin:NAME; a suite known only by name gets the default table.
func (a *app) suiteTable(ref string) markdown.Options {
	if fi, err := os.Stat(ref); strings.HasPrefix(ref, "builtin:") || err == nil && !fi.IsDir() {
		if s, err := a.loadSuite(ref); err == nil {
			return s.TableOptions()
		}
	}
	return markdown.Options{}
}

func (a *app) compareCommand() *cobra.Command {
	var f diffFlags
	var format string
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "One row per version, a column group per test case; differences flagged only when their interval lies beyond the noise and the tolerance",
		Long: `compare prints the table of the runs in the history (one row per version, a column group per
case) and judges the newest version against the one before: for each KPI the table shows (and,
outside a suite, ` + strings.Join(compare.DefaultKPIs, ", ") + `), the relative change of
the means over each version's runs and its confidence interval (a bootstrap of the runs). A
change is flagged only when its whole interval lies beyond --tolerance; a KPI whose runs spread
more than --max-cv is named erratic instead of judged. Invalid, aborted and still-running runs
are struck out in the table and left out of the verdicts, with the reason.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "md" {
				if err := checkFormat(format); err != nil {
					return pipebench.UsageError(fmt.Sprintf("unknown --format %q", format), "valid formats: md (or text), json", nil)
				}
			}
			all, table, err := a.diffRuns(&f)
			if err != nil {
				return err
			}
			if len(all) == 0 {
				return pipebench.UsageError("the history has no runs to compare", "run a scenario first: pipebench run", nil)
			}
			var out *compareJSON
			if format == "json" {
				out = &compareJSON{Kind: "compare", Format: jsonFormat, Groups: []compareGroup{}}
			}
			if f.suite != "" {
				// A suite is one table: versions × its cases.
				if err := a.compareOne(all, table, &f, "", out); err != nil {
					return err
				}
			} else {
				// One table per scenario: runs of different scenarios
				// never share a table or a verdict.
				groups := compare.ByScenario(all)
				for i, g := range groups {
					if len(groups) > 1 && out == nil {
						if i > 0 {
							fmt.Fprintln(a.stdout)
						}
						fmt.Fprintf(a.stdout, "## %s\n\n", g.Scenario)
					}
					if err := a.compareOne(g.Runs, table, &f, g.Scenario, out); err != nil {
						return err
					}
				}
			}
			if out != nil {
				return writeJSON(a.stdout, out)
			}
			return nil
		},
	}
	diffFlagsOn(cmd, &f, compare.DefaultTolerance, "relative change that does not count (0.05 = ±5%)")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "version to compare against (default: the second newest)")
	cmd.Flags().StringVar(&format, "format", "md", "output: md (the table and the verdicts, for people; text is the same) or json (one JSON object, its shape documented and stable)")
	cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"md", "json"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// compareOne prints the table of one scenario's (or suite's) runs and the
// verdicts of its candidate version against its baseline; with out, it
// adds them to out instead.
func (a *app) compareOne(runs []*pipebench.Result, table markdown.Options, f *diffFlags, scen string, out *compareJSON) error {
	grid := markdown.Table(runs, table)
	if out == nil {
		if err := markdown.Render(a.stdout, grid); err != nil {
			return err
		}
	}
	base, cand := compare.PickVersions(runs, f.baseline, f.candidate)
	b, c := compare.OfVersion(runs, base), compare.OfVersion(runs, cand)
	if base == "" || cand == "" || base == cand || len(b) == 0 || len(c) == 0 {
		if out != nil {
			out.Groups = append(out.Groups, compareGroup{Scenario: scen, Table: tableOf(grid)})
			return nil
		}
		fmt.Fprintln(a.stdout, "\n(one version of this scenario in the history: nothing to diff)")
		return nil
	}
	rep, err := compare.Diff(b, c, f.options(runs, table))
	if err != nil {
		return err
	}
	if out != nil {
		out.Groups = append(out.Groups, compareGroup{Scenario: scen, Table: tableOf(grid), Diff: diffOf(rep, base, cand)})
		return nil
	}
	return rep.Write(a.stdout, base, cand)
}

func (a *app) gateCommand() *cobra.Command {
	var f diffFlags
	var format string
	cmd := &cobra.Command{
		Use:   "gate --baseline VERSION",
		Short: "Exit 99 when a KPI of the candidate version regressed, 97 when one could not be decided (for CI)",
		Long: `gate judges the candidate version (default: the newest) against --baseline as compare does,
from repeated runs of each (at least ` + fmt.Sprint(compare.MinRuns) + ` a side; more narrow the intervals), and fails closed:

  0   every KPI was decided, and none regressed
  99  a KPI regressed: the whole confidence interval of its change lies beyond --tolerance
      on the worse side
  97  a KPI could not be decided (too few runs, too erratic, an interval reaching past
      --tolerance): nothing shows the candidate did not regress; --allow-undecided passes it
  98  a side has no valid run left

Run each version 3 times or more, interleaved: with 2, a noisy KPI's interval is wide. Invalid,
aborted and still-running runs, and runs the history holds damaged, are left out and named, with
the reason.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if f.baseline == "" {
				return pipebench.UsageError("gate needs --baseline VERSION", "the version to hold the candidate to, e.g. --baseline 0.99.0", nil)
			}
			all, table, err := a.diffRuns(&f)
			if err != nil {
				return err
			}
			base, cand := compare.PickVersions(all, f.baseline, f.candidate)
			b, c := compare.OfVersion(all, base), compare.OfVersion(all, cand)
			if len(b) == 0 || len(c) == 0 || base == cand {
				return pipebench.UsageError(fmt.Sprintf("no runs to gate: baseline %q has %d, candidate %q has %d", base, len(b), cand, len(c)), "check the versions with: pipebench history", nil)
			}
			rep, err := compare.Diff(b, c, f.options(all, table))
			if err != nil {
				return err
			}
			if format == "json" {
				gerr := rep.Gate(base, cand, len(b), len(c), f.allowUndecided)
				out := gateJSON{Kind: "gate", Format: jsonFormat, Passed: gerr == nil, ExitCode: pipebench.ExitCode(gerr), Undecided: rep.Undecided(), diffJSON: diffOf(rep, base, cand)}
				if gerr != nil {
					out.Message, _ = errorParts(gerr)
				}
				if err := writeJSON(a.stdout, out); err != nil {
					return err
				}
				if gerr != nil {
					return &silentExit{code: pipebench.ExitCode(gerr)}
				}
				return nil
			}
			if err := rep.Write(a.stdout, base, cand); err != nil {
				return err
			}
			if err := rep.Gate(base, cand, len(b), len(c), f.allowUndecided); err != nil {
				return err
			}
			if u := rep.Undecided(); u != "" {
				fmt.Fprintf(a.stdout, "gate: passed, though not every KPI was decided (--allow-undecided): %s (see above)\n", u)
				return nil
			}
			fmt.Fprintln(a.stdout, "gate: passed")
			return nil
		},
	}
	diffFlagsOn(cmd, &f, 0.10, "relative change allowed: a KPI fails the gate only when its whole interval lies beyond it (0.10 = ±10%)")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "version to hold the candidate to (required)")
	cmd.Flags().BoolVar(&f.allowUndecided, "allow-undecided", false, "pass when no KPI regressed though some could not be decided (default: exit 97)")
	formatFlag(cmd, &format)
	return cmd
}
