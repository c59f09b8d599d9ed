// Package k8scmd is the Kubernetes launcher's part of the command line:
// pipebench k8s run, manifests and collect, and the commands the pods run
// (worker, sink, sut, ready: package k8spod). It links the Kubernetes
// client, which the pipebench command does not carry: pipebench-k8s adds
// it to the command line (command.Extensions), and pipebench's own k8s
// command hands its arguments to pipebench-k8s.
package k8scmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/command"
	"github.com/pipebench/pipebench/command/k8spod"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/cli/buildinfo"
	"github.com/pipebench/pipebench/k8s"
)

// app is the command line's host, as the k8s commands see it.
type app struct{ command.Host }

// New returns the k8s command, for command.Extensions.
func New(h command.Host) *cobra.Command { return app{h}.k8sCommand() }

// k8sFlags are the flags of k8s run, k8s manifests and k8s collect.
type k8sFlags struct {
	setup              k8s.Setup
	nodes              []string
	kubeconfig         string
	readyTimeout, lead time.Duration
	out, format, store string
	noStore, keep      bool
	pods               k8s.PodFlags
	kustomize          string
}

// keep says where the merged Result goes.
func (f k8sFlags) keepResult() execute.Keep {
	return execute.Keep{Out: f.out, Store: f.store, NoStore: f.noStore}
}

func (a app) k8sCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Run a scenario's shards as pods on Kubernetes and merge their Results",
		Long: `k8s run creates the scenario as a ConfigMap, a ServiceAccount with a Role (ConfigMaps only, by
name) and an Indexed Job of N pods (or, with --per-node, a DaemonSet: one generator per node)
running pipebench k8s worker; it waits until every pod is ready, releases them together at a
start time, follows their merged progress, collects each shard's Result through the API server,
merges them into one Result (as pipebench merge does), prints the table, saves it to the history
and deletes what it created, after success, failure or Ctrl-C (unless --keep). k8s manifests
prints the same objects as YAML (or writes them as a kustomize base); k8s collect does the
launcher's part for objects applied from them.

A scenario whose sink can be shared (http, otlp, remote-write) gets it in the cluster: a Job of one
pod (pipebench k8s sink) behind a ClusterIP Service NAME-sink, which the shards (and a system
under test embedded in them) send to; the sink streams what it receives back to the shard that
sent it, so the merged Result counts delivered, lost, duplicates and end-to-end latency for the
whole run, and the sink's own count is checked against it (--sink-per-shard: a sink in each
shard's pod instead). A system under test embedded in the scenario runs once, in a Job of one
pod (pipebench k8s sut) behind a headless Service NAME-sut, which every shard sends to and
observes (--sut-per-shard: one in each shard's pod instead). Each of the three kinds of pod has
its own ServiceAccount, allowed only the ConfigMaps it reads and writes.

Pods fit for a real cluster: requests and limits sized from the plan (--requests, --limits),
--node-selector, --toleration, --affinity, --pod-patch (a strategic merge patch of every pod
template), Jobs ended at --active-deadline and deleted --ttl after they finish, each shard serving
the run's metrics on --metrics-port with prometheus.io/scrape annotations (--pod-monitor: a
PodMonitor too), names from the scenario and the time.`,
	}
	cmd.AddCommand(a.k8sRunCommand(), a.k8sManifestsCommand(), a.k8sCollectCommand())
	cmd.AddCommand(k8spod.Commands(a.Host, true)...)
	return cmd
}

func k8sCommonFlags(cmd *cobra.Command, f *k8sFlags) {
	s := &f.setup
	fl := cmd.Flags()
	fl.IntVar(&s.Shards, "shards", 1, "number of generator pods (an Indexed Job); each runs rate/N")
	fl.BoolVar(&s.PerNode, "per-node", false, "one generator per node (a DaemonSet) instead of --shards pods")
	fl.StringVarP(&s.Namespace, "namespace", "n", "", "namespace of the objects (default: the kubeconfig's, else default)")
	fl.StringVar(&s.Image, "image", k8s.DefaultImage(buildinfo.Version), "pipebench image the pods run")
	fl.StringVar(&s.LoadImage, "load-image", "", "image the shards and the in-cluster sink run, pipebench-load alone (tools/image build -load) (default: "+k8s.DefaultLoadImage(buildinfo.Version)+" when --image is not given, else --image, which holds pipebench-load too)")
	fl.StringVar(&s.Name, "name", "", "name of every object (default: the scenario's name and the time, like quickstart-20261126-101500)")
	fl.DurationVar(&s.Duration, "duration", 0, "scale every phase so the load lasts this long in total")
	fl.StringSliceVar(&s.EnvFromSecret, "env-from-secret", nil, "Secret whose keys become the pods' environment, for the scenario's ${VAR} credentials (repeatable)")
	fl.BoolVar(&s.SinkPerShard, "sink-per-shard", false, "run the scenario's sink inside each shard's pod instead of one in-cluster sink (Job and Service)")
	fl.BoolVar(&s.SUTPerShard, "sut-per-shard", false, "run the scenario's embedded system under test inside each shard's pod instead of once, in a pod of its own (Job and headless Service)")
	fl.StringToStringVar(&f.pods.Requests, "requests", nil, "the shards' resource requests, like cpu=500m,memory=256Mi (default: sized from the plan's rate and connections; 0 leaves one out)")
	fl.StringToStringVar(&f.pods.Limits, "limits", nil, "the shards' resource limits (default: twice the requests; 0 leaves one out)")
	fl.StringToStringVar(&f.pods.NodeSelector, "node-selector", nil, "put every pod on nodes with these labels, like pool=load")
	fl.StringArrayVar(&f.pods.Tolerations, "toleration", nil, "tolerate a taint: KEY[=VALUE][:EFFECT] (repeatable)")
	fl.StringVar(&f.pods.AffinityFile, "affinity", "", "file holding the pods' affinity (YAML: nodeAffinity, podAntiAffinity, ...)")
	fl.StringVar(&f.pods.PatchFile, "pod-patch", "", "file holding a strategic merge patch of every pod template (YAML: metadata, spec), for what the flags do not cover")
	fl.IntVar(&s.Pods.MetricsPort, "metrics-port", 9464, "each shard serves the run's metrics on this port, with prometheus.io/scrape annotations (0: none)")
	fl.DurationVar(&s.Pods.MetricsLinger, "metrics-linger", 0, "each shard, its run over, waits this long at most for a last scrape of its final metrics before it reports its Result")
	fl.BoolVar(&s.PodMonitor, "pod-monitor", false, "add a Prometheus Operator PodMonitor of the shards' metrics")
	fl.DurationVar(&s.Deadline, "active-deadline", 0, "the Jobs' activeDeadlineSeconds (default: the run's length and drain, the waits, plus 5m)")
	fl.DurationVar(&s.TTL, "ttl", time.Hour, "the Jobs' ttlSecondsAfterFinished: a finished Job is deleted this long after (0: kept)")
}

// prepare reads the scenario and the flags into a launch.
func (a app) k8sPrepare(cmd *cobra.Command, ref string, f *k8sFlags) (*k8s.Prepared, error) {
	s := f.setup
	s.ShardsSet = cmd.Flags().Changed("shards")
	if !cmd.Flags().Changed("load-image") && !cmd.Flags().Changed("image") {
		s.LoadImage = k8s.DefaultLoadImage(buildinfo.Version)
	}
	s.Wait = f.readyTimeout + f.lead
	if err := f.pods.Apply(a.Context(), &s.Pods); err != nil {
		return nil, err
	}
	data, file, err := builtins.ScenarioSource(a.Context(), ref)
	if err != nil {
		return nil, err
	}
	return k8s.Prepare(a.Registry(), file, data, s, time.Now())
}

func (a app) k8sRunCommand() *cobra.Command {
	var f k8sFlags
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml|builtin:NAME",
		Short: "Run the scenario's shards as pods, merge their Results, clean up",
		Example: `  pipebench k8s run scenario.yaml --shards 8 --image registry.example/pipebench:1.0
  pipebench k8s run scenario.yaml --per-node --node-selector pool=load --namespace load --out merged.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.k8sRun(cmd, args[0], &f)
		},
	}
	k8sCommonFlags(cmd, &f)
	k8sLaunchFlags(cmd, &f)
	cmd.Flags().BoolVar(&f.keep, "keep", false, "leave the run's objects in the cluster afterwards (delete them by the label pipebench.dev/run=NAME)")
	return cmd
}

// k8sLaunchFlags are the flags of the commands that talk to a cluster.
func k8sLaunchFlags(cmd *cobra.Command, f *k8sFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 5*time.Minute, "longest wait for every pod to be ready")
	fl.DurationVar(&f.lead, "lead", 0, "time between every pod being ready and the start of the load (default: 5s, or 10ms a shard when longer)")
	fl.StringVarP(&f.out, "out", "o", "", "write the merged Result (JSON) to this file")
	fl.StringVarP(&f.format, "format", "f", "text", "report printed")
	command.StoreFlag(cmd, &f.store)
	fl.BoolVar(&f.noStore, "no-store", false, "do not save the merged run in the results history")
}

func (a app) k8sCollectCommand() *cobra.Command {
	var f k8sFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "collect NAME",
		Short: "Release, follow and collect a run applied from k8s manifests; merge, print, save, clean up",
		Long: `collect is k8s run's second half for objects applied by kubectl or a GitOps tool from
pipebench k8s manifests --name NAME: it writes the start time once every pod is ready (unless one
was written already), follows the shards, collects their Results and the in-cluster sink's counts
through the API server, merges, prints, saves to the history and exits as k8s run does.

Afterwards it deletes the run's objects (label pipebench.dev/run=NAME), as k8s run does, also after
a failure or Ctrl-C. With --keep it leaves them: use it when a GitOps tool owns them, and remove
the manifests from its repository instead (a tool that re-applies deleted objects would start the
run again).`,
		Example: `  pipebench k8s manifests scenario.yaml --shards 8 --name load-1 -n load > run.yaml
  kubectl apply -f run.yaml
  pipebench k8s collect load-1 -n load --out merged.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.k8sCollect(args[0], f, timeout)
		},
	}
	cmd.Flags().StringVarP(&f.setup.Namespace, "namespace", "n", "", "namespace of the run (default: the kubeconfig's, else default)")
	k8sLaunchFlags(cmd, &f)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "longest wait for the Results after the start (default: the scenario's length and drain plus 2m)")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "leave the run's objects in the cluster afterwards (when a GitOps tool owns them)")
	return cmd
}

func (a app) k8sManifestsCommand() *cobra.Command {
	var f k8sFlags
	cmd := &cobra.Command{
		Use:   "manifests SCENARIO.yaml|builtin:NAME",
		Short: "Print the objects k8s run would create, as YAML or a kustomize base (no cluster needed)",
		Long: `manifests prints the ServiceAccounts, Roles, RoleBindings, ConfigMap, the in-cluster sink's Service
and Job (when the scenario has a sink that can be shared), the system under test's (when the
scenario embeds one), the Job (or DaemonSet) and, with --pod-monitor, a PodMonitor, that k8s run
creates; --kustomize DIR writes them as a kustomize base instead (one file per object and a
kustomization.yaml). Applied with kubectl, the pods get ready and wait: pipebench k8s collect NAME
releases them, collects, merges and cleans up (as k8s run does). By hand: write the start time into
the ConfigMap (kubectl patch configmap NAME --type merge -p '{"data":{"start-at":"2026-11-24T10:00:00Z"}}');
each shard's Result is then in ConfigMap NAME-shard-I. Credentials never appear: the scenario must
reference them as ${VAR} (no default), given to the pods by --env-from-secret.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.k8sPrepare(cmd, args[0], &f)
			if err != nil {
				return err
			}
			o := &p.Options
			if o.PerNode {
				o.Nodes = f.nodes
			}
			if o.Namespace == "" {
				o.Namespace = "default"
			}
			p.Size(o.N())
			obj, err := k8s.Build(*o)
			if err != nil {
				return pipebench.UsageError("cannot make the manifests", "", err)
			}
			if f.kustomize != "" {
				if err := obj.WriteKustomize(f.kustomize); err != nil {
					return err
				}
				fmt.Fprintf(a.Stderr(), "wrote the kustomize base of run %s to %s\n", o.Name, f.kustomize)
				return nil
			}
			return obj.WriteYAML(a.Stdout())
		},
	}
	k8sCommonFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringSliceVar(&f.nodes, "nodes", nil, "with --per-node: the nodes, in shard order (k8s run lists them itself)")
	fl.StringVar(&f.kustomize, "kustomize", "", "write the objects as a kustomize base into this folder instead of printing them")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 5*time.Minute, "the wait for every pod to be ready that the Jobs' deadline allows for")
	return cmd
}

// k8sConnect connects to the cluster of the flags.
func k8sConnect(f k8sFlags) (*k8s.Conn, dynamic.Interface, error) {
	conn, err := k8s.Connect(f.kubeconfig, f.setup.Namespace)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(conn.Config)
	return conn, dyn, err
}

func (a app) k8sRun(cmd *cobra.Command, ref string, f *k8sFlags) error {
	rep, err := a.Reporter(f.format)
	if err != nil {
		return err
	}
	p, err := a.k8sPrepare(cmd, ref, f)
	if err != nil {
		return err
	}
	if err := f.keepResult().Check(a.Context()); err != nil {
		return err
	}
	conn, dyn, err := k8sConnect(*f)
	if err != nil {
		return err
	}
	o := &p.Options
	o.Namespace = conn.Namespace
	if o.PerNode {
		if o.Nodes, err = k8s.Nodes(a.Context(), conn.Client, o.Pods); err != nil {
			return err
		}
	}
	p.Size(o.N())
	if err := o.Validate(); err != nil {
		return pipebench.UsageError("cannot launch", "", err)
	}
	if f.lead <= 0 {
		f.lead = k8s.DefaultLead(o.N())
	}
	l := k8s.Launch{Client: conn.Client, Dynamic: dyn, Log: a.Stderr(), ReadyTimeout: f.readyTimeout, Lead: f.lead,
		RunTimeout: p.Length + 2*time.Minute, Keep: f.keep}
	// What the launch creates is deleted after a signal too, and the
	// shards' Results collected so far are kept.
	defer execute.Hold(a.Context())()
	col, err := l.Run(a.Context(), *o)
	return a.k8sMerge(col, err, rep, *f)
}

// k8sMerge merges what a launch collected, after checking it against the
// in-cluster sink's own count.
func (a app) k8sMerge(col *k8s.Collected, err error, rep pipebench.Reporter, f k8sFlags) error {
	if err != nil {
		if errors.Is(err, context.Canceled) && a.Context().Err() != nil {
			return fmt.Errorf("interrupted before every shard gave its Result: nothing to merge (%w)", err)
		}
		return err
	}
	col.Check(a.Stderr())
	return a.MergeShards(col.Shards, rep, f.keepResult())
}

func (a app) k8sCollect(name string, f k8sFlags, timeout time.Duration) error {
	rep, err := a.Reporter(f.format)
	if err != nil {
		return err
	}
	if err := f.keepResult().Check(a.Context()); err != nil {
		return err
	}
	conn, dyn, err := k8sConnect(f)
	if err != nil {
		return err
	}
	l := k8s.Launch{Client: conn.Client, Dynamic: dyn, Log: a.Stderr(), ReadyTimeout: f.readyTimeout, Lead: f.lead, RunTimeout: timeout, Keep: f.keep}
	if timeout <= 0 {
		l.RunTimeout = k8s.RunLength(a.Context(), conn.Client, a.Registry(), conn.Namespace, name) + 2*time.Minute
	}
	defer execute.Hold(a.Context())()
	col, err := l.Collect(a.Context(), conn.Namespace, name)
	return a.k8sMerge(col, err, rep, f)
}
