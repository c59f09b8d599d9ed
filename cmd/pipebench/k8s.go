package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/k8s"
	"github.com/pipebench/pipebench/runner"
)

// k8sFlags are the flags of k8s run and k8s manifests.
type k8sFlags struct {
	shards        int
	perNode       bool
	nodes         []string
	namespace     string
	image         string
	name          string
	kubeconfig    string
	duration      time.Duration
	envFromSecret []string
	readyTimeout  time.Duration
	lead          time.Duration
	out, format   string
	store         string
	noStore       bool
	keep          bool
	sinkPerShard  bool
	sutPerShard   bool
}

// result says where the merged Result goes.
func (f k8sFlags) result() execute.Keep {
	return execute.Keep{Out: f.out, Store: f.store, NoStore: f.noStore}
}

func (a *app) k8sCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Run a scenario's shards as pods on Kubernetes and merge their Results",
		Long: `k8s run creates the scenario as a ConfigMap, a ServiceAccount with a Role (ConfigMaps only)
and an Indexed Job of N pods (or, with --per-node, a DaemonSet: one generator per node) running
pipebench k8s worker; it waits until every pod is ready, releases them together at a start time,
follows them, collects each shard's Result through the API server, merges them into one Result
(as pipebench merge does), prints the table, saves it to the history and deletes what it created,
after success, failure or Ctrl-C (unless --keep). k8s manifests prints the same objects as YAML;
k8s collect does the launcher's part for objects applied from them.

A scenario with an http, otlp or remote-write sink gets it in the cluster: a Deployment of one
pod (pipebench k8s sink) behind a ClusterIP Service NAME-sink, which the shards (and a system
under test embedded in them) send to; the sink streams what it receives back to the shard that
sent it, so the merged Result counts delivered, lost, duplicates and end-to-end latency for the
whole run, and the sink's own count is checked against it (--sink-per-shard: a sink in each
shard's pod instead). A system under test embedded in the scenario runs once, in a Deployment of
one pod (pipebench k8s sut) behind a headless Service NAME-sut, which every shard sends to and
observes (--sut-per-shard: one in each shard's pod instead).`,
	}
	cmd.AddCommand(a.k8sRunCommand(), a.k8sManifestsCommand(), a.k8sCollectCommand(), a.k8sWorkerCommand(),
		a.k8sSinkCommand(), a.k8sSUTCommand(), a.k8sReadyCommand())
	return cmd
}

func k8sCommonFlags(cmd *cobra.Command, f *k8sFlags) {
	fl := cmd.Flags()
	fl.IntVar(&f.shards, "shards", 1, "number of generator pods (an Indexed Job); each runs rate/N")
	fl.BoolVar(&f.perNode, "per-node", false, "one generator per node (a DaemonSet) instead of --shards pods")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the objects (default: the kubeconfig's, else default)")
	fl.StringVar(&f.image, "image", k8s.DefaultImage, "pipebench image the pods run")
	fl.StringVar(&f.name, "name", "", "name of every object (default: pipebench-DATE-RANDOM)")
	fl.DurationVar(&f.duration, "duration", 0, "scale every phase so the load lasts this long in total")
	fl.StringSliceVar(&f.envFromSecret, "env-from-secret", nil, "Secret whose keys become the pods' environment, for the scenario's ${VAR} credentials (repeatable)")
	fl.BoolVar(&f.sinkPerShard, "sink-per-shard", false, "run the scenario's sink inside each shard's pod instead of one in-cluster sink (Deployment and Service)")
	fl.BoolVar(&f.sutPerShard, "sut-per-shard", false, "run the scenario's embedded system under test inside each shard's pod instead of once, in a pod of its own (Deployment and headless Service)")
}

func (a *app) k8sRunCommand() *cobra.Command {
	var f k8sFlags
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml|builtin:NAME",
		Short: "Run the scenario's shards as pods, merge their Results, clean up",
		Example: `  pipebench k8s run scenario.yaml --shards 8 --image registry.example/pipebench:1.0
  pipebench k8s run scenario.yaml --per-node --namespace load --out merged.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.kubeconfig, _ = cmd.Flags().GetString("kubeconfig")
			return a.k8sRun(args[0], f, cmd.Flags().Changed("shards"))
		},
	}
	k8sCommonFlags(cmd, &f)
	fl := cmd.Flags()
	fl.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 5*time.Minute, "longest wait for every pod to be ready")
	fl.DurationVar(&f.lead, "lead", 5*time.Second, "time between every pod being ready and the start of the load")
	fl.StringVarP(&f.out, "out", "o", "", "write the merged Result (JSON) to this file")
	fl.StringVarP(&f.format, "format", "f", "text", "report printed")
	storeFlag(cmd, &f.store)
	fl.BoolVar(&f.noStore, "no-store", false, "do not save the merged run in the results history")
	fl.BoolVar(&f.keep, "keep", false, "leave the run's objects in the cluster afterwards (delete them by the label pipebench.dev/run=NAME)")
	return cmd
}

func (a *app) k8sCollectCommand() *cobra.Command {
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
			f.kubeconfig, _ = cmd.Flags().GetString("kubeconfig")
			return a.k8sCollect(args[0], f, timeout)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the run (default: the kubeconfig's, else default)")
	fl.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", 5*time.Minute, "longest wait for every pod to be ready")
	fl.DurationVar(&f.lead, "lead", 5*time.Second, "time between every pod being ready and the start of the load")
	fl.DurationVar(&timeout, "timeout", 0, "longest wait for the Results after the start (default: the scenario's length and drain plus 2m)")
	fl.StringVarP(&f.out, "out", "o", "", "write the merged Result (JSON) to this file")
	fl.StringVarP(&f.format, "format", "f", "text", "report printed")
	storeFlag(cmd, &f.store)
	fl.BoolVar(&f.noStore, "no-store", false, "do not save the merged run in the results history")
	fl.BoolVar(&f.keep, "keep", false, "leave the run's objects in the cluster afterwards (when a GitOps tool owns them)")
	return cmd
}

func (a *app) k8sManifestsCommand() *cobra.Command {
	var f k8sFlags
	cmd := &cobra.Command{
		Use:   "manifests SCENARIO.yaml|builtin:NAME",
		Short: "Print the objects k8s run would create, as YAML (no cluster needed)",
		Long: `manifests prints the ServiceAccount, Role, RoleBinding, ConfigMap, the in-cluster sink's Service
and Deployment (when the scenario has an http, otlp or remote-write sink), the system under test's
(when the scenario embeds one) and the Job (or DaemonSet)
that k8s run creates. Applied with kubectl, the pods get ready and wait: pipebench k8s collect NAME
releases them, collects, merges and cleans up (as k8s run does). By hand: write the start time into
the ConfigMap (kubectl patch configmap NAME --type merge -p '{"data":{"start-at":"2026-11-24T10:00:00Z"}}');
each shard's Result is then in ConfigMap NAME-shard-I. Credentials never appear: the scenario must
reference them as ${VAR}, given to the pods by --env-from-secret.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, _, err := a.k8sOptions(args[0], f, cmd.Flags().Changed("shards"))
			if err != nil {
				return err
			}
			if o.PerNode {
				o.Nodes = f.nodes
			}
			if o.Namespace == "" {
				o.Namespace = "default"
			}
			obj, err := k8s.Build(o)
			if err != nil {
				return pipebench.UsageError("cannot make the manifests", "", err)
			}
			return obj.WriteYAML(a.stdout)
		},
	}
	k8sCommonFlags(cmd, &f)
	cmd.Flags().StringSliceVar(&f.nodes, "nodes", nil, "with --per-node: the nodes, in shard order (k8s run lists them itself)")
	return cmd
}

// k8sOptions reads and checks the scenario and the flags; it returns the
// launch options and the length of the load plus its drain.
func (a *app) k8sOptions(ref string, f k8sFlags, shardsSet bool) (k8s.Options, time.Duration, error) {
	data, file, err := builtins.ScenarioSource(ref)
	if err != nil {
		return k8s.Options{}, 0, err
	}
	sc, err := a.loadScenario(ref)
	if err != nil {
		return k8s.Options{}, 0, err
	}
	plan, err := compile(sc, f.duration, f.duration > 0, "")
	if err != nil {
		return k8s.Options{}, 0, err
	}
	if f.perNode && shardsSet {
		return k8s.Options{}, 0, pipebench.UsageError("--shards and --per-node go separately", "--per-node runs one shard per node", nil)
	}
	if !f.perNode {
		if _, err := plan.Slice(0, max(f.shards, 1)); err != nil {
			return k8s.Options{}, 0, pipebench.UsageError(fmt.Sprintf("the scenario cannot be split in %d shards", f.shards), "", err)
		}
	}
	name := f.name
	if name == "" {
		b := make([]byte, 3)
		rand.Read(b)
		name = "pipebench-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
	}
	o := k8s.Options{Name: name, Namespace: f.namespace, Image: f.image, Shards: f.shards, PerNode: f.perNode,
		Scenario: data, ScenarioFile: filepath.Base(file), EnvFromSecret: f.envFromSecret}
	if f.duration > 0 {
		o.Duration = f.duration.String()
	}
	if !f.sinkPerShard {
		o.Sink, _ = a.inClusterSink(plan.Sink, "")
	}
	if o.SUT, err = inClusterSUT(&plan, o.Sink, f.sutPerShard); err != nil {
		return k8s.Options{}, 0, err
	}
	return o, plan.Duration() + plan.Drain.D(), nil
}

// kubeClient loads the client configuration: the kubeconfig file given,
// $KUBECONFIG, ~/.kube/config, or the pod's service account.
func kubeClient(kubeconfig, namespace string) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	over := &clientcmd.ConfigOverrides{}
	if namespace != "" {
		over.Context.Namespace = namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", pipebench.UsageError("no Kubernetes cluster to talk to", "give --kubeconfig FILE or set KUBECONFIG", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	c, err := kubernetes.NewForConfig(cfg)
	return c, ns, err
}

func (a *app) k8sRun(ref string, f k8sFlags, shardsSet bool) error {
	rep, err := a.reporter(f.format)
	if err != nil {
		return err
	}
	o, length, err := a.k8sOptions(ref, f, shardsSet)
	if err != nil {
		return err
	}
	if err := f.result().Check(a.ctx); err != nil {
		return err
	}
	client, ns, err := kubeClient(f.kubeconfig, f.namespace)
	if err != nil {
		return err
	}
	o.Namespace = ns
	if o.PerNode {
		nodes, err := client.CoreV1().Nodes().List(a.ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list the nodes: %w", err)
		}
		o.Nodes = schedulable(nodes.Items)
	}
	if err := o.Validate(); err != nil {
		return pipebench.UsageError("cannot launch", "", err)
	}
	l := k8s.Launch{Client: client, Log: a.stderr, ReadyTimeout: f.readyTimeout, Lead: f.lead,
		RunTimeout: length + 2*time.Minute, Keep: f.keep}
	col, err := l.Run(a.ctx, o)
	return a.k8sMerge(col, err, rep, f)
}

// k8sMerge merges what a launch collected, after checking it against the
// in-cluster sink's own count.
func (a *app) k8sMerge(col *k8s.Collected, err error, rep pipebench.Reporter, f k8sFlags) error {
	if err != nil {
		if errors.Is(err, context.Canceled) && a.ctx.Err() != nil {
			return fmt.Errorf("interrupted before every shard gave its Result: nothing to merge (%w)", err)
		}
		return err
	}
	if s := col.Sink; s != nil {
		var delivered float64
		for _, r := range col.Shards {
			if r.Total != nil {
				v, _ := r.Total.Get("delivered")
				delivered += v
			}
		}
		fmt.Fprintf(a.stderr, "k8s: the in-cluster sink received %d unique items (%d duplicates, %d unmatched, %d faulted); the shards matched %.0f of them\n",
			s.Received, s.Duplicates, s.Unmatched, s.Faulted, delivered)
		if uint64(delivered) != s.Received {
			fmt.Fprintf(a.stderr, "k8s: warning: %d items reached the sink but no shard (%d held for no shard beyond the feed's bound): items sent by something else than this run's shards, or a broken feed\n",
				int64(s.Received)-int64(delivered), s.Dropped)
		}
	}
	return a.mergeShards(col.Shards, rep, f.result())
}

func (a *app) k8sCollect(name string, f k8sFlags, timeout time.Duration) error {
	rep, err := a.reporter(f.format)
	if err != nil {
		return err
	}
	if err := f.result().Check(a.ctx); err != nil {
		return err
	}
	client, ns, err := kubeClient(f.kubeconfig, f.namespace)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = time.Hour
		// The run's length from its scenario, when the launcher can
		// compile it (its ${VAR}s may be the pods' only).
		if run, err := client.CoreV1().ConfigMaps(ns).Get(a.ctx, name, metav1.GetOptions{}); err == nil {
			if sc, err := a.loadScenarioBytes(run.Data[k8s.KeyFile], []byte(run.Data[k8s.KeyScenario])); err == nil {
				d, _ := shardDuration(run.Data[k8s.KeyDuration])
				if plan, err := compile(sc, d, d > 0, ""); err == nil {
					timeout = plan.Duration() + plan.Drain.D() + 2*time.Minute
				}
			}
		}
	}
	l := k8s.Launch{Client: client, Log: a.stderr, ReadyTimeout: f.readyTimeout, Lead: f.lead, RunTimeout: timeout, Keep: f.keep}
	col, err := l.Collect(a.ctx, ns, name)
	return a.k8sMerge(col, err, rep, f)
}

// schedulable returns the names of the nodes a DaemonSet's pods go to:
// not cordoned, Ready, sorted.
func schedulable(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			continue
		}
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if ready {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// inPod is what a command running in one of the run's pods reads from
// its environment, and a scratch folder of its own.
type inPod struct {
	client             kubernetes.Interface
	ns, run, pod, node string
	ip                 string
	dir                string
}

// podCommand is a hidden command that runs in the pods k8s run creates
// (pipebench k8s NAME): it finds the API server and its run from the
// pod's environment, then calls main.
func (a *app) podCommand(name, short string, main func(p inPod) error) *cobra.Command {
	return &cobra.Command{
		Use:    name,
		Short:  short,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, ns, err := kubeClient("", os.Getenv("POD_NAMESPACE"))
			if err != nil {
				return err
			}
			p := inPod{client: client, ns: ns, run: os.Getenv("PIPEBENCH_K8S_RUN"), pod: os.Getenv("POD_NAME"),
				node: os.Getenv("NODE_NAME"), ip: os.Getenv("POD_IP")}
			if p.run == "" {
				return pipebench.UsageError("PIPEBENCH_K8S_RUN is not set", "k8s "+name+" runs in the pods k8s run creates", nil)
			}
			if p.dir, err = os.MkdirTemp("", "pipebench-"+name+"-"); err != nil {
				return err
			}
			defer os.RemoveAll(p.dir)
			return main(p)
		},
	}
}

func (a *app) k8sWorkerCommand() *cobra.Command {
	return a.podCommand("worker", "Run one shard inside a pod of k8s run (reads its run from the environment)", func(p inPod) error {
		client, ns := p.client, p.ns
		w := k8s.Worker{Client: client, Namespace: ns, Run: p.run, Pod: p.pod, Node: p.node, Log: a.stderr}
		if s := os.Getenv("JOB_COMPLETION_INDEX"); s != "" {
			i, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("JOB_COMPLETION_INDEX %q: %w", s, err)
			}
			w.Index = i + 1
		}
		w.Check = func(s k8s.Shard) error {
			whole, sp, err := a.shardPlanOf(s, time.Time{})
			if err != nil {
				return err
			}
			if host := os.Getenv(k8s.EnvSUT); host != "" && sp.SUT != nil {
				if err := a.useInClusterSUT(client, ns, w.Run, host); err != nil {
					return err
				}
			}
			if host := os.Getenv(k8s.EnvSink); host != "" && sp.Sink != nil {
				// The shard's sequence numbers run up to the next
				// shard's first.
				var hi uint64
				if i, n := sp.Shard.Index+1, sp.Shard.Count; i < n {
					next, err := whole.Slice(i, n)
					if err != nil {
						return err
					}
					hi = next.FirstSeq()
				}
				return a.useInClusterSink(client, ns, w.Run, host, sp.FirstSeq(), hi)
			}
			return nil
		}
		w.Exec = func(ctx context.Context, s k8s.Shard, start time.Time, progress func(float64)) ([]byte, error) {
			_, plan, err := a.shardPlanOf(s, start)
			if err != nil {
				return nil, err
			}
			p := a.execParams(false, execute.Keep{NoStore: true, Quiet: true})
			p.Progress = func(pr runner.Progress) { progress(float64(pr.TotalSent)) }
			out := execute.Run(ctx, plan, p)
			if out.Result == nil {
				return nil, out.Err
			}
			data, err := json.Marshal(out.Result)
			if err != nil {
				return nil, err
			}
			return data, out.Err
		}
		return w.Main(a.ctx)
	})
}

// shardPlanOf compiles a shard's slice of the run's plan, from its
// scenario under its own file name (every shard's plan names the same
// file, so the shards' plans are one), starting at start (zero: not yet
// known).
func (a *app) shardPlanOf(s k8s.Shard, start time.Time) (whole, shard pipebench.Plan, err error) {
	sc, err := a.loadScenarioBytes(s.File, s.Scenario)
	if err != nil {
		return whole, shard, err
	}
	d, err := shardDuration(s.Duration)
	if err != nil {
		return whole, shard, err
	}
	if whole, err = compile(sc, d, d > 0, ""); err != nil {
		return whole, shard, err
	}
	at := ""
	if !start.IsZero() {
		at = start.Format(time.RFC3339Nano)
	}
	shard, err = shardPlan(whole, s.Shard, at, time.Now())
	return whole, shard, err
}

func shardDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

func (a *app) k8sReadyCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "ready",
		Short:  "Readiness probe of a k8s worker: exit 0 once it waits for the start time",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(k8s.ReadyFile()); err != nil {
				return &silentExit{code: 1}
			}
			return nil
		},
	}
}
