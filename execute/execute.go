// Package execute runs a compiled Plan to the end for every command that
// runs one (`run`, each case of `suite run`, each probe of `limit`, a shard
// in a Kubernetes pod) and keeps its Result: written to a file, shown,
// saved in the history, whatever happened (a signal, a target that is
// down, a component that would not start, a file that cannot be written).
// It decides nothing about the numbers (kpi does, once); it decides where
// the Result goes and the exit code.
//
//	out := execute.Run(ctx, plan, execute.Params{Registry: reg, Keep: execute.Keep{Out: "result.json"}})
//	os.Exit(out.Code)
package execute

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/runner"
)

// Params is how a Plan runs and where its Result goes.
type Params struct {
	// Registry builds the plan's components.
	Registry *pipebench.Registry
	// ToolVersion and Args go into the Result's manifest (Args redacted
	// here).
	ToolVersion string
	Args        []string
	// Logger receives the runner's diagnostics; nil discards them.
	Logger *slog.Logger
	// Log receives what a person should read: where the Result went, and
	// where it went instead when the asked place failed. nil: io.Discard.
	Log io.Writer
	// Keep says where the Result goes.
	Keep Keep
	// Checkpoint, with Keep.Out, writes the Result so far to Keep.Out this
	// often (status running), so that a soak killed outright loses at most
	// this much; 0: off.
	Checkpoint time.Duration
	// Progress, if set, is the runner's progress callback (displays, live
	// views, a pod's progress report).
	Progress func(runner.Progress)
	// Show, if set, is handed the finished Result after it was written to
	// Keep.Out and before it is saved: the report a command prints. Its
	// error marks the Result as not kept where asked.
	Show func(*pipebench.Result) error
	// Cut, when done, abandons in-flight sends and the drain (a second
	// Ctrl-C); the Result is still kept, and the exit code is ExitCut.
	Cut context.Context
}

// Outcome is how a run ended.
type Outcome struct {
	// Result is the run's Result, redacted; nil only when the plan could
	// not run at all (then Err says why).
	Result *pipebench.Result
	// Err is what stopped the run early or kept it from starting, if
	// anything (a signal, a component that failed to start).
	Err error
	// KeptAt is the file that holds the Result ("" none); NotKept is true
	// when it is not where it was asked to go (a fallback file, not saved
	// in the history, the report not shown).
	KeptAt  string
	NotKept bool
	// Code is the process exit code (pipebench.Exit*).
	Code int
}

// Validate checks what can be checked before any load: the checkpoint's
// settings and that the Result can be kept where asked.
func (p Params) Validate(ctx context.Context) error {
	switch {
	case p.Checkpoint < 0:
		return pipebench.UsageError(fmt.Sprintf("--checkpoint %s is negative", p.Checkpoint), "write it like 5m", nil)
	case p.Checkpoint > 0 && p.Keep.Out == "":
		return pipebench.UsageError("--checkpoint needs --out", "the checkpoints are written to the --out file", nil)
	}
	return p.Keep.Check(ctx)
}

// Run runs plan and keeps its Result as p says. Call p.Validate first, so
// that a Result that could not be kept is found before the load.
func Run(ctx context.Context, plan pipebench.Plan, p Params) Outcome {
	defer Hold(ctx)()
	log := p.log()
	rp := runner.Params{
		Plan: plan, Registry: p.Registry, Logger: p.Logger,
		ToolVersion: p.ToolVersion, Args: pipebench.RedactArgs(p.Args), Cut: p.Cut,
		Progress: p.Progress,
	}
	if p.Checkpoint > 0 && p.Keep.Out != "" {
		rp.CheckpointEvery = p.Checkpoint
		rp.Checkpoint = func(res *pipebench.Result) {
			res.Redact()
			if err := WriteResult(p.Keep.Out, res); err != nil {
				fmt.Fprintf(log, "pipebench: checkpoint: %v\n", pipebench.RedactText(err.Error()))
			}
		}
	}
	res, err := runner.Run(ctx, rp)
	if res == nil {
		return Outcome{Err: err, Code: p.code(pipebench.ExitCode(err), false)}
	}
	out := KeepResult(ctx, res, p)
	if err != nil {
		out.Err = err
		out.Code = p.code(pipebench.ExitCode(err), out.NotKept)
	}
	return out
}

// KeepResult keeps a Result made elsewhere (a merge of shards, a limit search's
// answer) as Run keeps a run's: redacted, written to p.Keep.Out (or a
// fallback file), shown, saved in the history; the exit code from its
// status.
func KeepResult(ctx context.Context, res *pipebench.Result, p Params) Outcome {
	defer Hold(ctx)()
	log := p.log()
	res.Redact()
	kp := keeper{k: p.Keep, log: log}
	out := Outcome{Result: res}
	out.KeptAt, out.NotKept = kp.write(res)
	if p.Show != nil {
		if err := p.Show(res); err != nil {
			fmt.Fprintf(log, "pipebench: show the result: %s\n", pipebench.RedactText(err.Error()))
			out.NotKept = true
		}
	}
	if !kp.save(ctx, res, out.KeptAt) {
		out.NotKept = true
	}
	if out.KeptAt != "" && out.KeptAt == p.Keep.Out && !p.Keep.Quiet {
		fmt.Fprintf(log, "result written to %s\n", out.KeptAt)
	}
	out.Code = p.code(pipebench.ExitFor(res.Manifest.Status), out.NotKept)
	return out
}

// code is the exit code of a finished run: ExitCut when a second signal
// cut it short, else code, made non-zero when the Result could not be kept
// where it was asked to go.
func (p Params) code(code int, notKept bool) int {
	if p.Cut != nil && p.Cut.Err() != nil {
		return pipebench.ExitCut
	}
	if notKept && code == pipebench.ExitOK {
		return pipebench.ExitFailure
	}
	return code
}

func (p Params) log() io.Writer {
	if p.Log == nil {
		return io.Discard
	}
	return p.Log
}
