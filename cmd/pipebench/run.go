package main

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/examples"
	"github.com/pipebench/pipebench/report"
	"github.com/pipebench/pipebench/report/jsonreport"
	"github.com/pipebench/pipebench/runner"
)

type runFlags struct {
	out         string
	format      string
	duration    time.Duration
	durationSet bool
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
	fl.Lookup("dashboard").NoOptDefVal = "127.0.0.1:0"
	return cmd
}

func (a *app) listBuiltins() error {
	names := examples.Names()
	sort.Strings(names)
	for _, n := range names {
		desc := ""
		if data, err := fs.ReadFile(examples.FS, n+".yaml"); err == nil {
			if sc, err := a.loadScenarioBytes(n, data); err == nil {
				desc = sc.Description
			}
		}
		fmt.Fprintf(a.stdout, "builtin:%-32s %s\n", n, firstLine(desc))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
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
	plan, err := compile(sc, f.duration, f.durationSet, f.sutVersion)
	if err != nil {
		return err
	}
	if plan, err = shardPlan(plan, f.shard, f.startAt, time.Now()); err != nil {
		return err
	}
	if f.out != "" {
		// Find out now, not after a 2-day soak, that the result cannot be
		// written.
		if err := checkOut(f.out); err != nil {
			return err
		}
	}
	if !f.noStore {
		if err := a.checkStore(f.store); err != nil {
			return err
		}
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(redacting{a.stderr}, &slog.HandlerOptions{Level: level}))
	var prog *progress
	if !f.quiet {
		prog = newProgress(a.stderr, plan)
		fmt.Fprintf(a.stderr, "pipebench %s: %s (%d phases, %s of load, %s items)\n", version, plan.Scenario,
			len(plan.Phases), pipebench.FormatDuration(plan.Duration()), report.Group(float64(plan.Items())))
	}
	params := runner.Params{
		Plan: plan, Registry: a.reg, Logger: logger,
		ToolVersion: version, Args: pipebench.RedactArgs(os.Args), Cut: a.cut,
	}
	if err := a.checkpointTo(&params, f.out, f.checkpoint); err != nil {
		return err
	}
	lv, err := a.startLive(f.live, plan)
	if err != nil {
		return err
	}
	params.Progress = func(p runner.Progress) {
		if prog != nil {
			prog.update(p)
		}
		lv.update(p)
	}
	res, runErr := runner.Run(a.ctx, params)
	if prog != nil {
		prog.done()
	}
	lv.finish(res)
	lv.close(a)
	if res == nil {
		return runErr
	}
	notKept := a.keep(res, rep, keepOpts{out: f.out, format: f.format, store: f.store, noStore: f.noStore, quiet: f.quiet})
	if runErr != nil {
		printError(a.stderr, runErr)
		return &silentExit{code: a.finalCode(pipebench.ExitCode(runErr), notKept)}
	}
	return &silentExit{code: a.finalCode(exitFor(res), notKept)}
}

// keepOpts says where a finished Result goes.
type keepOpts struct {
	out, format, store string
	noStore, quiet     bool
}

// keep prints, writes and saves a Result, credentials removed. What was
// measured is kept whatever happens: a file that cannot be written still
// leaves the table, the history and a fallback file. It reports whether
// anything could not be kept.
func (a *app) keep(res *pipebench.Result, rep pipebench.Reporter, o keepOpts) (notKept bool) {
	scrubResult(res)
	keptAt := ""
	if o.out != "" {
		if err := writeResult(o.out, res); err != nil {
			keptAt, notKept = a.keepElsewhere(o.out, res, err), true
		} else {
			keptAt = o.out
		}
	}
	if err := rep.Report(a.stdout, res); err != nil {
		printError(a.stderr, fmt.Errorf("render the %s report: %w", o.format, err))
		notKept = true
	}
	if !o.noStore && !a.saveRun(o.store, res, keptAt) {
		notKept = true
	}
	if keptAt == o.out && o.out != "" && !o.quiet {
		fmt.Fprintf(a.stderr, "result written to %s\n", o.out)
	}
	return notKept
}

// exitFor maps a finished run's status to the exit code.
func exitFor(res *pipebench.Result) int {
	switch res.Manifest.Status {
	case pipebench.StatusPassed, pipebench.StatusCompleted:
		return pipebench.ExitOK
	case pipebench.StatusFailed:
		return pipebench.ExitThresholds
	case pipebench.StatusInvalid:
		return pipebench.ExitInvalid
	default:
		return pipebench.ExitFailure
	}
}

// writeResult writes the Result as JSON to path atomically: a temporary
// file in the same folder, synced, then renamed over path.
func writeResult(path string, res *pipebench.Result) error {
	return writeAtomic(path, func(w io.Writer) error { return jsonreport.New().Report(w, res) })
}

func writeAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file private; a report is for reading.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
