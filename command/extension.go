package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/proc/wing"
)

// Extension adds a command to the command line: a command whose
// dependencies the pipebench program does not carry (the Kubernetes
// launcher's client), added by the program that does (pipebench-k8s). An
// extension's command replaces pipebench's own of the same name, which
// hands its arguments to that program.
type Extension func(Host) *cobra.Command

// Extensions are added to every command line this process runs: a
// program's main (or a test) appends its own before it runs one.
var Extensions []Extension

// Host is what an extension's commands use of the command line that runs
// them.
type Host struct{ a *app }

// Context is the command line's context: done at the first stop signal.
func (h Host) Context() context.Context { return h.a.ctx }

// Stdout and Stderr are where the command line prints.
func (h Host) Stdout() io.Writer { return h.a.stdout }
func (h Host) Stderr() io.Writer { return h.a.stderr }

// Registry holds every plug-in the command line knows.
func (h Host) Registry() *pipebench.Registry { return h.a.reg }

// Reporter returns the reporter for --format, or a usage error naming the
// valid formats.
func (h Host) Reporter(format string) (pipebench.Reporter, error) { return h.a.reporter(format) }

// ExecParams are the parameters every run of the command line gets
// (execute.Run), verbose or not, kept as keep says.
func (h Host) ExecParams(verbose bool, keep execute.Keep) execute.Params {
	return h.a.execParams(verbose, keep)
}

// MergeShards merges the shards' Results as pipebench merge does, prints
// the merged table with rep and keeps it.
func (h Host) MergeShards(shards []*pipebench.Result, rep pipebench.Reporter, keep execute.Keep) error {
	return h.a.mergeShards(shards, rep, keep)
}

// StoreFlag adds --store to cmd, as every command that reads or writes the
// history has it.
func StoreFlag(cmd *cobra.Command, ref *string) { storeFlag(cmd, ref) }

// extend adds the extensions' commands to root, each replacing the
// command of its name.
func (a *app) extend(root *cobra.Command) {
	for _, ext := range Extensions {
		c := ext(Host{a})
		for _, old := range root.Commands() {
			if old.Name() == c.Name() {
				root.RemoveCommand(old)
			}
		}
		root.AddCommand(c)
	}
}

// K8sHandOff returns pipebench's own k8s command, which hands its
// arguments to pipebench-k8s: an extension of a program that carries the
// pods' commands alone (pipebench-load) adds them to it.
func K8sHandOff(h Host) *cobra.Command { return h.a.k8sCommand() }

// k8sCommand is pipebench's own k8s command: it hands its arguments to
// pipebench-k8s (found or built as package wing says), which carries the
// Kubernetes client, and exits as it does.
func (a *app) k8sCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "k8s",
		Short:              "Run a scenario's shards as pods on Kubernetes and merge their Results (pipebench-k8s)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			prog, err := wing.Path(a.ctx, wing.K8s, a.stderr)
			if err != nil {
				return &pipebench.Error{Code: pipebench.ExitFailure, Msg: "pipebench k8s runs pipebench-k8s", Err: err,
					Hint: "install it beside pipebench (go install ./cmd/...), or set " + wing.DirEnv}
			}
			// The child hears a terminal's signals itself (the same
			// process group); this one waits for it to end.
			c := exec.Command(prog, append([]string{"k8s"}, args...)...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, a.stdout, a.stderr
			err = c.Run()
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee):
				return &silentExit{code: ee.ExitCode()}
			case err != nil:
				return fmt.Errorf("run %s: %w", prog, err)
			}
			return nil
		},
	}
}

// Exit returns an error that makes the command line exit with code,
// printing nothing more (its message, if any, was printed already).
func Exit(code int) error { return &silentExit{code: code} }
