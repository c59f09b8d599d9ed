// Package k8spod is the pods' part of the k8s command line: the hidden
// commands the pods of `pipebench k8s run` run (worker, sink, sut, and
// ready, the shards' readiness probe), on package k8s/pod alone. The lean
// load generator, pipebench-load, carries worker, sink and ready (New):
// the shards and the in-cluster sink run it; pipebench-k8s adds all four
// to its own k8s command (Commands), the system under test's pod running
// it.
package k8spod

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench/command"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/k8s/pod"
)

// New returns the k8s command of pipebench-load, for command.Extensions:
// pipebench's own (it hands k8s run, manifests and collect to
// pipebench-k8s) with the pod commands a shard and the in-cluster sink
// run, worker, sink and ready, hidden.
func New(h command.Host) *cobra.Command {
	cmd := command.K8sHandOff(h)
	cmd.AddCommand(Commands(h, false)...)
	return cmd
}

// Commands returns the hidden pod commands: worker, sink, ready and, with
// sut, sut (which needs a registry holding the scenario's system under
// test).
func Commands(h command.Host, sut bool) []*cobra.Command {
	cmds := []*cobra.Command{
		podCommand(h, "worker", "Run one shard inside a pod of k8s run (reads its run from the environment)", pod.Runtime.Worker),
		podCommand(h, "sink", "Run the scenario's sink inside the cluster for k8s run (reads its run from the environment)", pod.Runtime.Sink),
	}
	if sut {
		cmds = append(cmds, podCommand(h, "sut", "Run the scenario's system under test inside the cluster for k8s run (reads its run from the environment)", pod.Runtime.SUT))
	}
	return append(cmds, readyCommand())
}

// podCommand is a hidden command that runs in the pods k8s run creates
// (PROGRAM k8s NAME): it finds the API server and its run from the pod's
// environment, then runs main.
func podCommand(h command.Host, name, short string, main func(pod.Runtime, context.Context, pod.Pod) error) *cobra.Command {
	return &cobra.Command{
		Use:    name,
		Short:  short,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := pod.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "pipebench-"+name+"-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			rt := pod.Runtime{Exec: h.ExecParams(false, execute.Keep{NoStore: true, Quiet: true}), Log: h.Stderr(), Dir: dir}
			defer execute.Hold(h.Context())() // a pod's shard reports its Result after a signal
			return main(rt, h.Context(), p)
		},
	}
}

// readyCommand is the shards' readiness probe: it exits 0 once the
// worker waits for the start time (pod.ReadyFile).
func readyCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "ready",
		Short:  "Readiness probe of a k8s worker: exit 0 once it waits for the start time",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(pod.ReadyFile()); err != nil {
				return command.Exit(1)
			}
			return nil
		},
	}
}
