package command

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/scenario"
	"github.com/pipebench/pipebench/suite"
)

type suiteFlags struct {
	sutVersion  string
	builds      []string
	duration    time.Duration
	durationSet bool
	rate        string
	store       string
	noStore     bool
	quiet       bool
	verbose     bool
	outDir      string
	checkpoint  time.Duration
	kubeconfig  string
	live        liveFlags
}

// suiteCommand is `pipebench suite`: run, list and validate suites.
func (a *app) suiteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suite",
		Short: "Run a suite of scenarios under one version label and print the versions × cases table",
		Long: `A suite names scenarios that together make one table of a reference report: one row per
version of the system under test, a column group per case. pipebench suite run runs them one
after the other under one version label, saves each run in the history as pipebench run does,
and prints the table of this version and every earlier version of the same suite.

A suite file:

  name: my-suite
  version: 1.2.0                         # optional; --sut-version overrides it
  scenarios:
    - scenario: builtin:kyma-traces-single  # or a file, relative to the suite file
      case: Single Pipeline                  # optional: the column group's title
      duration: 2m                           # optional: scales the scenario as run --duration
  table:                                     # optional: another shape of table
    rows: run                                # a row per case run (default: version)
    columns:                                 # the first labels the row
      - {title: Test, value: "@case"}        # a run value: @case @version @duration @status @failure @crashed @label:KEY
      - {title: Sent/s, value: sent_rate}    # a KPI of the run's total
      - {title: P99 ms, value: latency.p99, phase: burst}   # a KPI of one phase

Compare or gate two versions of a suite with: pipebench compare --suite NAME, pipebench gate --suite NAME.`,
	}
	var f suiteFlags
	run := &cobra.Command{
		Use:   "run SUITE.yaml | builtin:NAME",
		Short: "Run every scenario of a suite in turn and print the versions × cases table",
		Example: `  pipebench suite run builtin:kyma-traces --sut-version otelcol-0.162.0
  pipebench suite run builtin:kyma-traces --duration 1m     # every case 1 minute
  pipebench suite run my-suite.yaml --store results.db
  pipebench suite run builtin:kyma-logs --out results/ --dashboard`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.durationSet = cmd.Flags().Changed("duration")
			if f.kubeconfig != "" {
				// Scenarios read it as ${PIPEBENCH_KUBECONFIG} (the nvsentinel ones).
				a.env = withVar(a.env, "PIPEBENCH_KUBECONFIG", f.kubeconfig)
			}
			return a.runSuite(args[0], f)
		},
	}
	fl := run.Flags()
	fl.StringVar(&f.sutVersion, "sut-version", "", "version label of every run (overrides the suite's and the scenarios' `version`)")
	fl.StringArrayVar(&f.builds, "build", nil, "VERSION=COMMAND: run every case on this build of the system under test (its program, such as a collector binary), labelled VERSION; repeat it for a row per version (replaces the suite's builds:)")
	fl.DurationVar(&f.duration, "duration", 0, "scale every scenario to last this long (overrides the entries' duration)")
	fl.StringVar(&f.rate, "rate", "", "scale every scenario's rates so its highest is this, like 2000/s (keeps the shape)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress display")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log what the runner does to stderr")
	storeFlag(run, &f.store)
	fl.BoolVar(&f.noStore, "no-store", false, "do not save the runs in the results history (the table then holds this run's version only)")
	fl.StringVarP(&f.outDir, "out", "o", "", "write each case's Result (JSON) into this folder as it ends, named NN-CASE.json")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "a test cluster's kubeconfig for scenarios that use an API server (sets PIPEBENCH_KUBECONFIG; the nvsentinel suites create and delete labelled Nodes there)")
	fl.DurationVar(&f.checkpoint, "checkpoint", 0, "with --out, write the running case's Result so far to its file this often (status running); 0: off")
	liveFlagsOn(fl, &f.live, "suite")

	var listFormat, validateFormat string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in suites",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(listFormat); err != nil {
				return err
			}
			if listFormat == "json" {
				out := suitesJSON{Kind: "suites", Format: jsonFormat, Suites: []namedItem{}}
				for _, d := range builtins.DescribeSuites() {
					out.Suites = append(out.Suites, namedItem{Name: d.Name, Description: d.Description})
				}
				return writeJSON(a.stdout, out)
			}
			for _, d := range builtins.DescribeSuites() {
				fmt.Fprintf(a.stdout, "%-28s %s\n", d.Name, d.Description)
			}
			return nil
		},
	}
	var vf suiteFlags
	validate := &cobra.Command{
		Use:   "validate SUITE.yaml | builtin:NAME",
		Short: "Check a suite and every scenario it names without running anything",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(validateFormat); err != nil {
				return err
			}
			vf.durationSet = cmd.Flags().Changed("duration")
			s, plans, err := a.planSuite(args[0], vf)
			if err != nil {
				return err
			}
			if validateFormat == "json" {
				out := suiteValidateJSON{Kind: "suite-validate", Format: jsonFormat, Suite: s.Name, Cases: []suiteCase{}}
				for _, p := range plans {
					out.Cases = append(out.Cases, suiteCase{Case: p.Case, Scenario: p.Scenario, Version: p.Version, Seconds: num(p.Duration().Seconds())})
				}
				return writeJSON(a.stdout, out)
			}
			for _, p := range plans {
				fmt.Fprintf(a.stdout, "%-32s %-36s %s %s\n", p.Case, p.Scenario, p.Version, pipebench.FormatDuration(p.Duration()))
			}
			fmt.Fprintf(a.stdout, "ok: suite %s, %d case(s)\n", s.Name, len(plans))
			return nil
		},
	}
	validate.Flags().StringVar(&vf.sutVersion, "sut-version", "", "version label, as for run")
	validate.Flags().StringArrayVar(&vf.builds, "build", nil, "VERSION=COMMAND, as for run")
	validate.Flags().DurationVar(&vf.duration, "duration", 0, "scale every scenario, as for run")
	formatFlag(list, &listFormat)
	formatFlag(validate, &validateFormat)
	cmd.AddCommand(run, list, validate)
	return cmd
}

// loadSuite reads a suite from a file or builtin:NAME.
func (a *app) loadSuite(ref string) (*suite.Suite, error) { return builtins.SuiteContext(a.ctx, ref) }

// planSuite loads a suite and compiles every scenario it names (see
// builtins.SuitePlans).
func (a *app) planSuite(ref string, f suiteFlags) (*suite.Suite, []pipebench.Plan, error) {
	var builds []suite.Build
	for _, b := range f.builds {
		bd, err := suite.ParseBuild(b)
		if err != nil {
			return nil, nil, err
		}
		builds = append(builds, bd)
	}
	return builtins.SuiteBuildPlans(ref, a.params(), scenario.Overrides{Version: f.sutVersion, Duration: f.duration, DurationSet: f.durationSet, Rate: f.rate}, builds,
		func(note string) { fmt.Fprintln(a.stderr, note) })
}

// runSuite runs a suite's plans in turn, each kept as a run is (its file
// in --out, the history). A suite stopped halfway (Ctrl-C) keeps the cases
// it finished; the table at the end holds what the history has of the
// suite. The exit code is the highest of the cases'.
func (a *app) runSuite(ref string, f suiteFlags) error {
	s, plans, err := a.planSuite(ref, f)
	if err != nil {
		return err
	}
	outs, err := suite.CaseFiles(f.outDir, plans)
	if err != nil {
		return err
	}
	p := a.execParams(f.verbose, execute.Keep{Store: f.store, NoStore: f.noStore, Quiet: true})
	p.Keep.Out, p.Checkpoint = outs[0], f.checkpoint
	if err := p.Validate(a.ctx); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "pipebench %s: suite %s, %d case(s), %s, %s\n", version, s.Name, len(plans),
		suite.LoadSummary(plans), suite.VersionsOf(plans))
	lv, err := execute.StartLive(a.ctx, f.live.options(a.stderr, !f.quiet), plans[0])
	if err != nil {
		return err
	}
	// A signal between two cases stops the suite and prints its table.
	defer execute.Hold(a.ctx)()
	_, code := s.Run(a.ctx, plans, suite.RunParams{Exec: p, Outs: outs, Live: lv, Cut: a.cut, Log: a.stderr, Table: a.stdout,
		Problem: func(err error) { printError(a.stderr, err) }})
	return &silentExit{code: code}
}

// suiteName turns compare's and gate's --suite into the suite's name: a
// suite file or builtin:NAME is read for its name; anything else is the
// name itself.
func (a *app) suiteName(ref string) (string, error) {
	fi, err := os.Stat(ref)
	if strings.HasPrefix(ref, builtins.Prefix) || (err == nil && !fi.IsDir()) {
		s, err := a.loadSuite(ref)
		if err != nil {
			return "", err
		}
		return s.Name, nil
	}
	return ref, nil
}

// selectSuite reads the runs compare and gate work on when --suite is
// given: the suite's runs, of one scenario when scenario is not "".
func (a *app) selectSuite(ref, suiteRef, scenario string) ([]*pipebench.Result, error) {
	name, err := a.suiteName(suiteRef)
	if err != nil {
		return nil, err
	}
	var scenarios []string
	if scenario != "" {
		scenarios = []string{scenario}
	}
	runs, err := suite.ReadHistory(a.ctx, ref, name, scenarios)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, pipebench.UsageError(fmt.Sprintf("the history has no runs of suite %q", name), "run it first: pipebench suite run SUITE, or check --store", nil)
	}
	return runs, nil
}

// withVar returns env (the process's environment when nil) with name set
// to value.
func withVar(env func(string) (string, bool), name, value string) func(string) (string, bool) {
	if env == nil {
		env = os.LookupEnv
	}
	return func(k string) (string, bool) {
		if k == name {
			return value, true
		}
		return env(k)
	}
}
