package command

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/limit"
	"github.com/pipebench/pipebench/scenario"
)

type limitFlags struct {
	start, max, burst string
	probe, budget     time.Duration
	precision, tol    float64
	out, format       string
	store, sutVersion string
	noStore, quiet    bool
}

func (a *app) limitCommand() *cobra.Command {
	var f limitFlags
	cmd := &cobra.Command{
		Use:   "limit [scenario.yaml | builtin:NAME]",
		Short: "Find the highest rate the system under test sustains (or, with --burst, the longest burst it absorbs)",
		Long: `limit runs probes of the scenario's target, workload, sink and system under test at one rate
each: it doubles the rate until a probe is unstable (refusals, loss, delivery falling behind, a
growing backlog or exporter queue, failed thresholds), then bisects to --precision, or stops at
--budget. When pipebench itself cannot produce a rate, it says so: the answer is then a lower
bound, never the system's limit. Every probe is a row of the table; the answer is saved in the
history like any run, so compare lines up the limits of two versions.`,
		Example: `  pipebench limit builtin:kyma-traces-single --budget 10m
  pipebench limit scenario.yaml --start 1000/s --probe 20s --precision 0.02
  pipebench limit scenario.yaml --burst 4000/s --probe 10s    # longest burst at 4,000/s`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := defaultScenario
			if len(args) == 1 {
				ref = args[0]
			}
			return a.limit(ref, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.start, "start", "", "first rate tried (default: the first phase's rate)")
	fl.StringVar(&f.max, "max", "", "highest rate tried (default: none)")
	fl.StringVar(&f.burst, "burst", "", "search the longest burst at this rate instead of the highest rate")
	fl.DurationVar(&f.probe, "probe", 10*time.Second, "how long each probe sends (with --burst: the shortest burst tried)")
	fl.DurationVar(&f.budget, "budget", 10*time.Minute, "stop when the next probe would not fit in this time (0: no budget)")
	fl.Float64Var(&f.precision, "precision", 0.05, "stop when the bracket is this narrow (0.05 = ±5%)")
	fl.Float64Var(&f.tol, "tolerance", 0.001, "share of items that may fail or be lost at a stable rate")
	fl.StringVarP(&f.out, "out", "o", "", "write the answer's Result (JSON) to this file")
	fl.StringVarP(&f.format, "format", "f", "text", "report printed at the end")
	fl.StringVar(&f.sutVersion, "sut-version", "", "version label of the system under test")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no line per probe")
	storeFlag(cmd, &f.store)
	fl.BoolVar(&f.noStore, "no-store", false, "do not save the answer in the results history")
	return cmd
}

func (a *app) limit(ref string, f limitFlags) error {
	rep, err := a.reporter(f.format)
	if err != nil {
		return err
	}
	p := limit.Params{Probe: f.probe, Budget: f.budget, Precision: f.precision, Tolerance: f.tol}
	if p.Start, err = scenario.RateFlag("start", f.start); err != nil {
		return err
	}
	if p.Max, err = scenario.RateFlag("max", f.max); err != nil {
		return err
	}
	if p.Burst, err = scenario.RateFlag("burst", f.burst); err != nil {
		return err
	}
	sc, err := a.loadScenario(ref)
	if err != nil {
		return err
	}
	if p.Plan, err = scenario.CompileWith(sc, scenario.Overrides{Version: f.sutVersion}, time.Now()); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	ep := a.execParams(false, execute.Keep{Out: f.out, Store: f.store, NoStore: f.noStore, Quiet: f.quiet})
	if err := ep.Validate(a.ctx); err != nil {
		return err
	}
	// Each probe runs as any run does, kept nowhere: it is a row of the
	// answer, which is kept.
	probe := ep
	probe.Keep = execute.Keep{NoStore: true}
	probe.Log = nil
	p.Run = func(ctx context.Context, pl pipebench.Plan) (*pipebench.Result, error) {
		out := execute.Run(ctx, pl, probe)
		return out.Result, out.Err
	}
	if !f.quiet {
		what := "the highest stable rate"
		if p.Burst > 0 {
			what = "the longest burst at " + pipebench.FormatCount(float64(p.Burst)) + "/s"
		}
		fmt.Fprintf(a.stderr, "pipebench %s: limit of %s: %s, probes of %s, precision ±%.0f%%, budget %s\n",
			version, p.Plan.Scenario, what, pipebench.FormatDuration(f.probe), f.precision*100, pipebench.FormatDuration(f.budget))
		p.Progress = func(pr limit.Probe, br limit.Bracket) { fmt.Fprintln(a.stderr, pr.Line(br, p.Burst > 0)) }
	}
	// The probes' results are the answer: a signal between two of them
	// stops the search and keeps it.
	defer execute.Hold(a.ctx)()
	started := time.Now()
	ans, searchErr := limit.Search(a.ctx, p)
	if ans == nil {
		return searchErr
	}
	ep.Show = func(res *pipebench.Result) error { return rep.Report(a.stdout, res) }
	out := execute.KeepResult(a.ctx, ans.Result(p.Plan, p.Burst, started, searchErr), ep)
	if searchErr != nil {
		printError(a.stderr, searchErr)
	}
	return &silentExit{code: out.Code}
}
