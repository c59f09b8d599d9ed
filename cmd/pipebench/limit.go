package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/limit"
	"github.com/pipebench/pipebench/runner"
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

func parseRateFlag(name, v string) (pipebench.Rate, error) {
	if v == "" {
		return 0, nil
	}
	r, err := pipebench.ParseRate(v)
	if err != nil || r <= 0 {
		return 0, pipebench.UsageError(fmt.Sprintf("--%s %q is not a rate above 0", name, v), "write it like 2000/s", err)
	}
	return r, nil
}

func (a *app) limit(ref string, f limitFlags) error {
	rep, err := a.reporter(f.format)
	if err != nil {
		return err
	}
	p := limit.Params{Probe: f.probe, Budget: f.budget, Precision: f.precision, Tolerance: f.tol}
	if p.Start, err = parseRateFlag("start", f.start); err != nil {
		return err
	}
	if p.Max, err = parseRateFlag("max", f.max); err != nil {
		return err
	}
	if p.Burst, err = parseRateFlag("burst", f.burst); err != nil {
		return err
	}
	switch {
	case f.probe <= 0:
		return pipebench.UsageError("--probe must be above 0", "10s is a good start", nil)
	case f.precision <= 0 || f.precision >= 1:
		return pipebench.UsageError(fmt.Sprintf("--precision %v is outside (0, 1)", f.precision), "0.05 stops at ±5%", nil)
	case f.tol < 0 || f.tol >= 1:
		return pipebench.UsageError(fmt.Sprintf("--tolerance %v is outside [0, 1)", f.tol), "", nil)
	case f.budget < 0:
		return pipebench.UsageError("--budget must not be negative", "", nil)
	}
	sc, err := a.loadScenario(ref)
	if err != nil {
		return err
	}
	plan, err := compile(sc, 0, false, f.sutVersion)
	if err != nil {
		return err
	}
	p.Plan = plan
	if f.out != "" {
		if err := checkOut(f.out); err != nil {
			return err
		}
	}
	if !f.noStore {
		if err := a.checkStore(f.store); err != nil {
			return err
		}
	}
	logger := slog.New(slog.NewTextHandler(redacting{a.stderr}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p.Run = func(ctx context.Context, pl pipebench.Plan) (*pipebench.Result, error) {
		return runner.Run(ctx, runner.Params{Plan: pl, Registry: a.reg, Logger: logger, ToolVersion: version, Cut: a.cut})
	}
	if !f.quiet {
		what := "the highest stable rate"
		if p.Burst > 0 {
			what = "the longest burst at " + pipebench.FormatCount(float64(p.Burst)) + "/s"
		}
		fmt.Fprintf(a.stderr, "pipebench %s: limit of %s: %s, probes of %s, precision ±%.0f%%, budget %s\n",
			version, plan.Scenario, what, pipebench.FormatDuration(f.probe), f.precision*100, pipebench.FormatDuration(f.budget))
		p.Progress = func(pr limit.Probe, br limit.Bracket) { printProbe(a.stderr, pr, br, p.Burst > 0) }
	}
	started := time.Now()
	ans, searchErr := limit.Search(a.ctx, p)
	if ans == nil {
		return searchErr
	}
	m := pipebench.Manifest{
		RunID: limitRunID(started), Tool: "pipebench", ToolVersion: version,
		Scenario: plan.Scenario, File: plan.File, Version: plan.Version, Case: plan.Case + " (limit)",
		Labels: plan.Labels, Target: plan.Target.Type, Started: started.UTC(), Ended: time.Now().UTC(),
		Args: pipebench.RedactArgs(os.Args), Item: "item",
	}
	if len(ans.Probes) > 0 && ans.Probes[0].Result != nil {
		m.Item = ans.Probes[0].Result.Manifest.Item
		m.Host, m.GoVersion = ans.Probes[0].Result.Manifest.Host, ans.Probes[0].Result.Manifest.GoVersion
	}
	res := ans.Result(plan, m, p.Burst)
	if searchErr != nil {
		res.Manifest.Status = pipebench.StatusAborted
		if pipebench.ExitCode(searchErr) == pipebench.ExitInvalid {
			res.Manifest.Status = pipebench.StatusInvalid
		}
		res.Manifest.Reasons = append([]string{searchErr.Error()}, res.Manifest.Reasons...)
	}
	notKept := a.keep(res, rep, keepOpts{out: f.out, format: f.format, store: f.store, noStore: f.noStore, quiet: f.quiet})
	if searchErr != nil {
		printError(a.stderr, searchErr)
		return &silentExit{code: a.finalCode(pipebench.ExitCode(searchErr), notKept)}
	}
	return &silentExit{code: a.finalCode(pipebench.ExitOK, notKept)}
}

// printProbe writes one line per finished probe: its rate (or burst), its
// verdict, the bracket so far and the budget left.
func printProbe(w io.Writer, pr limit.Probe, br limit.Bracket, burst bool) {
	what := pipebench.FormatCount(float64(pr.Rate)) + "/s"
	if burst {
		what = pipebench.FormatDuration(pr.Duration) + " at " + what
	}
	verdict := "stable"
	if !pr.Stable {
		verdict = "unstable: " + pr.Why
	}
	line := fmt.Sprintf("probe %s: %s", what, verdict)
	if br.Stable > 0 || br.Unstable > 0 {
		f := func(v float64) string {
			if v == 0 {
				return "?"
			}
			if burst {
				return pipebench.FormatDuration(time.Duration(v * float64(time.Second)).Round(10 * time.Millisecond))
			}
			return pipebench.FormatCount(v)
		}
		line += fmt.Sprintf("  [bracket %s .. %s]", f(br.Stable), f(br.Unstable))
	}
	if br.Left >= 0 {
		line += "  budget left " + pipebench.FormatDuration(br.Left.Round(time.Second))
	}
	fmt.Fprintln(w, line)
}

// limitRunID is a sortable, unique id for a limit search's Result.
func limitRunID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-limit-" + hex.EncodeToString(b[:])
}
