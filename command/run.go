package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/report"
	"github.com/pipebench/pipebench/scenario"
)

type runFlags struct {
	out         string
	format      string
	duration    time.Duration
	durationSet bool
	rate        string
	shard       string
	startAt     string
	checkpoint  time.Duration
	sutVersion  string
	quiet       bool
	store       string
	noStore     bool
	verbose     bool
	list        bool
	live        liveFlags
}

func (a *app) runCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [scenario.yaml | builtin:NAME]",
		Short: "Run a scenario and print its KPI table (no argument: the built-in quickstart)",
		Long: `Run a scenario and print its KPI table (no argument: the built-in quickstart).

What the numbers mean: ` + pipebench.MeaningLatency + `.

` + pipebench.MeaningSent + `.`,
		Example: `  pipebench run                                 # built-in quickstart, no setup
  pipebench run examples/burst.yaml --out result.json
  pipebench run builtin:quickstart --format md --duration 30s
  pipebench run --list`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.list {
				return a.listBuiltins()
			}
			ref := defaultScenario
			if len(args) == 1 {
				ref = args[0]
			}
			f.durationSet = cmd.Flags().Changed("duration")
			return a.run(ref, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "write the Result (JSON) to this file, atomically")
	fl.StringVarP(&f.format, "format", "f", "text", "report printed at the end: "+strings.Join(a.reg.Reporters.Names(), ", "))
	fl.DurationVar(&f.duration, "duration", 0, "scale every phase so the load lasts this long in total (keeps the shape)")
	fl.StringVar(&f.rate, "rate", "", "scale every rate so the highest is this, like 2000/s (keeps the shape)")
	fl.StringVar(&f.sutVersion, "sut-version", "", "version label of the system under test (overrides the scenario's `version`)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress display")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log what the runner does to stderr")
	fl.BoolVar(&f.list, "list", false, "list the built-in scenarios")
	storeFlag(cmd, &f.store)
	fl.BoolVar(&f.noStore, "no-store", false, "do not save the run in the results history")
	fl.DurationVar(&f.checkpoint, "checkpoint", 0, "with --out, write the Result so far to the --out file this often while the run goes on (status running), so a soak killed by the machine loses at most this much; 0: off")
	fl.StringVar(&f.shard, "shard", "", "run slice I of N of the plan (rate/N, its own sequence range), like 2/4; merge the shards' results with pipebench merge")
	fl.StringVar(&f.startAt, "start-at", "", "start the load at this moment, shared by every shard: RFC 3339 (2026-11-24T10:00:00Z) or +DURATION from now")
	liveFlagsOn(fl, &f.live, "run")
	return cmd
}

func (a *app) listBuiltins() error {
	for _, d := range builtins.DescribeScenarios(a.reg) {
		fmt.Fprintf(a.stdout, "%-40s %s\n", d.Name, d.Description)
	}
	return nil
}

func (a *app) run(ref string, f runFlags) error {
	rep, err := a.reporter(f.format)
	if err != nil {
		return err
	}
	sc, err := a.loadScenario(ref)
	if err != nil {
		return err
	}
	plan, err := scenario.CompileWith(sc, scenario.Overrides{Version: f.sutVersion, Duration: f.duration, DurationSet: f.durationSet,
		Rate: f.rate, Shard: f.shard, StartAt: f.startAt}, time.Now())
	if err != nil {
		return err
	}
	p := a.execParams(f.verbose, execute.Keep{Out: f.out, Store: f.store, NoStore: f.noStore, Quiet: f.quiet})
	p.Checkpoint = f.checkpoint
	if err := p.Validate(a.ctx); err != nil {
		return err
	}
	if !f.quiet {
		fmt.Fprintf(a.stderr, "pipebench %s: %s (%d phases, %s of load, %s items)\n", version, plan.Scenario,
			len(plan.Phases), pipebench.FormatDuration(plan.Duration()), report.Group(float64(plan.Items())))
	}
	lv, err := execute.StartLive(a.ctx, f.live.options(a.stderr, !f.quiet), plan)
	if err != nil {
		return err
	}
	p.Progress = lv.Update
	p.Show = func(res *pipebench.Result) error {
		lv.Finish(res)
		return rep.Report(a.stdout, res)
	}
	out := execute.Run(a.ctx, plan, p)
	lv.Close(a.cut, a.stderr)
	if out.Err != nil {
		printError(a.stderr, out.Err)
	}
	return &silentExit{code: out.Code}
}
