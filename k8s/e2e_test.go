package k8s

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/children"
	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/sinktest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	kpod "github.com/pipebench/pipebench/k8s/pod"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/sut/all"
)

// envTestPod tells this test binary, started by the simulated kubelet as
// a pod's container, to play the pipebench image: its value is the
// container's arguments after the program's name, which envTestProgram
// holds (pipebench or pipebench-load).
const (
	envTestPod     = "PIPEBENCH_K8S_TEST_POD"
	envTestProgram = "PIPEBENCH_K8S_TEST_PROGRAM"
)

func TestMain(m *testing.M) {
	// The embedded collector runs as a child process of this binary.
	children.MaybeRun()
	if args := os.Getenv(envTestPod); args != "" {
		os.Exit(testPod(strings.Fields(args)))
	}
	if spec := os.Getenv(envTestLaunch); spec != "" {
		os.Exit(testLaunch(spec))
	}
	os.Exit(m.Run())
}

// testPod is what the pipebench image runs in a pod: pipebench k8s
// worker|sink|sut|ready, as cmd/pipebench-k8s wires them (pod.Runtime),
// or pipebench-load k8s worker|sink|ready, with the lean program's
// registry (no system under test), as cmd/pipebench-load wires them; with
// SIGTERM (a pod's deletion) as its end.
func testPod(args []string) int {
	lean := os.Getenv(envTestProgram) == ProgramLoad
	if len(args) != 2 || args[0] != "k8s" {
		fmt.Fprintf(os.Stderr, "not a pod command: %q\n", args)
		return 2
	}
	if args[1] == "ready" {
		if _, err := os.Stat(kpod.ReadyFile()); err != nil {
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	newRegistry := all.Registry
	if lean {
		newRegistry = builtins.Registry
		if args[1] == "sut" {
			fmt.Fprintln(os.Stderr, "pipebench-load has no k8s sut command")
			return 2
		}
	}
	reg, err := newRegistry()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := kpod.FromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, _ := os.MkdirTemp("", "pod-")
	defer os.RemoveAll(dir)
	rt := kpod.Runtime{Exec: execute.Params{Registry: reg, ToolVersion: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Log: os.Stderr, Dir: dir}
	switch args[1] {
	case "worker":
		err = rt.Worker(ctx, p)
	case "sink":
		err = rt.Sink(ctx, p)
	case "sut":
		err = rt.SUT(ctx, p)
	default:
		err = fmt.Errorf("unknown command %q", args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipebench:", pipebench.RedactText(err.Error()))
		return 1
	}
	return 0
}

// e2e is a control plane with the Job, DaemonSet, TTL and garbage
// collector controllers, and two simulated nodes: node-a (pool=load) and
// node-b (pool=sut, tainted dedicated=sut:NoSchedule, as a platform keeps
// the nodes under test for themselves).
type e2e struct {
	c   *kubetest.Cluster
	kl  *kubetest.Kubelet
	reg *pipebench.Registry
}

func startE2E(t *testing.T) *e2e {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	c := kubetest.Start(t, kubetest.Options{Controllers: []string{"job", "daemonset", "ttl-after-finished", "garbagecollector"}})
	ctx := context.Background()
	kl := c.StartKubelet(t, []string{"node-a", "node-b"}, func(_ *corev1.Pod, argv, env []string) *exec.Cmd {
		if len(argv) == 0 || (argv[0] != ProgramFull && argv[0] != ProgramLoad) {
			return exec.Command("/bin/false")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(env, envTestPod+"="+strings.Join(argv[1:], " "), envTestProgram+"="+argv[0])
		return cmd
	})
	for name, pool := range map[string]string{"node-a": "load", "node-b": "sut"} {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels["pool"] = pool
		if pool == "sut" {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "sut", Effect: corev1.TaintEffectNoSchedule})
		}
		if _, err := c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reg := suitetest.Registry(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("apiserver:\n%s\ncontainers:\n%s", c.Log("apiserver", 10), kl.Logs(8))
		}
	})
	return &e2e{c: c, kl: kl, reg: reg}
}

func (e *e2e) namespace(t *testing.T, name string) {
	if _, err := e.c.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// prepare makes the launch of scen in namespace ns, named run-NS.
func (e *e2e) prepare(t *testing.T, ns, scen string, s Setup) Options {
	t.Helper()
	s.Name, s.Namespace, s.Image = "run-"+ns, ns, "pipebench:test"
	p, err := Prepare(e.reg, "scenario.yaml", []byte(scen), s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	o := p.Options
	if o.PerNode {
		if o.Nodes, err = Nodes(context.Background(), e.c.Client, o.Pods); err != nil {
			t.Fatal(err)
		}
	}
	p.Options = o
	p.Size(o.N())
	return p.Options
}

func (e *e2e) launcher(log io.Writer) Launch {
	return Launch{Client: e.c.Client, Log: log, ReadyTimeout: 60 * time.Second, Lead: 3 * time.Second, RunTimeout: 2 * time.Minute, Poll: 200 * time.Millisecond}
}

// launch runs scen as k8s run does, in namespace ns, and merges what it
// collected.
func (e *e2e) launch(t *testing.T, ctx context.Context, ns, scen string, s Setup) (*pipebench.Result, *Collected, *testutil.Buffer, error) {
	t.Helper()
	e.namespace(t, ns)
	o := e.prepare(t, ns, scen, s)
	log := &testutil.Buffer{}
	col, err := e.launcher(log).Run(ctx, o)
	t.Logf("launcher:\n%s", log)
	if err != nil {
		return nil, col, log, err
	}
	col.Check(log)
	merged, err := kpi.Merge(col.Shards, e.reg)
	return merged, col, log, err
}

// left lists what a run left behind in a namespace.
func (e *e2e) left(ns string) []string { return e.c.Left(context.Background(), ns) }

// nothingLeft checks that a run (which ended in outcome) left nothing
// behind in namespace ns.
func (e *e2e) nothingLeft(t *testing.T, ns, outcome string) {
	t.Helper()
	if l := e.left(ns); len(l) != 0 {
		t.Errorf("%s: left behind after %s: %v", ns, outcome, l)
	}
}

func total(t *testing.T, res *pipebench.Result, name string) float64 {
	t.Helper()
	v, ok := res.Total.Get(name)
	if !ok {
		t.Errorf("the merged Result has no %s", name)
	}
	return v
}

// The launcher against a real kube-apiserver with the real Job,
// DaemonSet, TTL-after-finished and garbage-collector controllers
// (kube-controller-manager). No kubelet or scheduler runs here:
// kubetest.Kubelet binds the pods to two Node objects (honouring their
// node selectors and taints) and runs each pod's command (pipebench k8s
// worker, sink, sut, and the readiness probe pipebench k8s ready) as a
// process of this test binary, with the pod's environment, a private
// TMPDIR, an address of its own on loopback and a kubeconfig holding a
// token issued for the pod's service account (so every API call a pod
// makes goes through RBAC with its Role), and reports the pods' status
// through the API (see internal/testkit/kubetest/kubelet.go). The launcher runs
// in this process, as pipebench k8s run calls it.
func TestLaunch(t *testing.T) {
	e := startE2E(t)

	// The scenario's sink in the cluster: a Job and a Service; the shards
	// send to the Service and get their arrivals back over the feed, so
	// the merged Result's delivered, lost, duplicates and end-to-end
	// latency are the one sink's, and its own count agrees. The launcher
	// prints the shards' merged progress while they run.
	t.Run("in-cluster-sink", func(t *testing.T) {
		t.Parallel()
		scen := `
name: k8s-in-cluster-sink
target: {driver: http, connections: 2}
sink: {type: http}
workload: {generator: event, size: 64}
drain: 10s
phases:
  - {name: a, duration: 2s, rate: 300/s}
  - {name: b, duration: 2s, rate: 600/s, faults: {error_ratio: 0.3}}
thresholds: ["lost == 0"]
`
		res, col, log, err := e.launch(t, context.Background(), "insink", scen, Setup{Shards: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res.Manifest.Status != pipebench.StatusPassed {
			t.Errorf("merged status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
		}
		s := col.Sink
		if s == nil {
			t.Fatalf("no count from the in-cluster sink:\n%s", log)
		}
		if d, a := total(t, res, "delivered"), total(t, res, "accepted"); d != float64(s.Received) || d != a || a >= 1800 || a < 600 {
			t.Errorf("merged delivered %v accepted %v, the sink received %d unique items; the plan sends 1,800, 30%% of phase b faulted", d, a, s.Received)
		}
		if l, sent := total(t, res, "lost"), total(t, res, "sent"); l != 0 || sent != 1800 {
			t.Errorf("merged lost %v sent %v", l, sent)
		}
		fa, _ := res.Phases[0].Get("faulted")
		fb, _ := res.Phases[1].Get("faulted")
		if fb < 100 || fa > fb/4 {
			t.Errorf("faulted %v in phase a, %v in phase b: the sink did not follow the phases' fault policies", fa, fb)
		}
		if d := total(t, res, "duplicates"); d != float64(s.Duplicates) {
			t.Errorf("merged duplicates %v, the sink counted %d", d, s.Duplicates)
		}
		if p := total(t, res, "e2e_latency.p99"); p <= 0 {
			t.Errorf("merged e2e_latency.p99 %v", p)
		}
		if !strings.Contains(log.String(), "k8s: live: 3/3 shards running") || !strings.Contains(log.String(), "the shards matched") {
			t.Errorf("no merged live progress or sink check:\n%s", log)
		}
		e.nothingLeft(t, "insink", "success")
	})

	// The reference shape: a real collector gateway as the system under
	// test, once, in a pod of its own; two shards send OTLP to its
	// Service, it exports to the in-cluster sink, and every shard reads
	// its metrics. The merged Result has the shards' sent, the sink's
	// delivered and the one collector's own accepted count.
	t.Run("collector", func(t *testing.T) {
		t.Parallel()
		scen := `
name: k8s-collector
sut: {type: otelcol}
target: {driver: otlp}
workload: {generator: otlp-traces, spans_per_trace: 2, attributes: 4, batch: 10}
sink: {type: otlp}
observers:
  - {type: prometheus, preset: otelcol}
interval: 1s
drain: 20s
phases:
  - {name: a, duration: 2s, rate: 500/s}
thresholds: ["lost == 0", "errors == 0"]
`
		res, _, _, err := e.launch(t, context.Background(), "collector", scen, Setup{Shards: 2})
		if err != nil {
			t.Fatal(err)
		}
		sent, delivered := total(t, res, "sent"), total(t, res, "delivered")
		if sent != 1000 || delivered != sent || res.Manifest.Status != pipebench.StatusPassed {
			t.Errorf("merged sent %v, delivered %v, status %s %v; the plan sends 1,000 spans", sent, delivered, res.Manifest.Status, res.Manifest.Reasons)
		}
		var accepted float64
		for _, k := range res.Total.All("receiver_accepted.total") {
			accepted += k.Value
		}
		if accepted <= 500 || accepted > 1000 {
			t.Errorf("the collector accepted %v spans by its own count; both shards sent to it: want 501..1000", accepted)
		}
		e.nothingLeft(t, "collector", "success")
	})

	// GitOps: the objects applied from the manifests (as kubectl would),
	// then Collect releases, collects and merges; with Keep it leaves the
	// objects, and collecting again gives the same Result and cleans up.
	// The scenario's embedded system under test (a relay) runs once, in a
	// pod of its own behind a headless Service.
	t.Run("collect", func(t *testing.T) {
		t.Parallel()
		ns := "collect"
		e.namespace(t, ns)
		scen := `
name: k8s-gitops
target: {driver: http, connections: 2}
sut: {type: relay}
sink: {type: http}
observers:
  - {type: prometheus, preset: relay}
drain: 10s
phases:
  - {name: a, duration: 1s, rate: 400/s}
thresholds: ["errors == 0", "lost == 0"]
`
		o := e.prepare(t, ns, scen, Setup{Shards: 2})
		obj, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		var manifests bytes.Buffer
		if err := obj.WriteYAML(&manifests); err != nil {
			t.Fatal(err)
		}
		applyYAML(t, e.c.Client, manifests.String())
		collect := func(keep bool) (*pipebench.Result, *testutil.Buffer) {
			log := &testutil.Buffer{}
			l := e.launcher(log)
			l.Keep = keep
			col, err := l.Collect(context.Background(), ns, o.Name)
			if err != nil {
				t.Fatalf("collect: %v\n%s", err, log)
			}
			res, err := kpi.Merge(col.Shards, e.reg)
			if err != nil {
				t.Fatal(err)
			}
			return res, log
		}
		res, log := collect(true)
		if !strings.Contains(log.String(), "the load starts at") {
			t.Errorf("collect did not release the pods:\n%s", log)
		}
		if d := total(t, res, "delivered"); d != 400 || res.Manifest.Status != pipebench.StatusPassed {
			t.Errorf("merged delivered %v, status %s %v; the plan sends 400", d, res.Manifest.Status, res.Manifest.Reasons)
		}
		if acc, _ := res.Total.Get("receiver_accepted.total", "instance", "relay-0"); acc <= 200 || acc > 400 {
			t.Errorf("the relay accepted %v items by its own count; both shards sent to one relay: want 201..400", acc)
		}
		if l := e.left(ns); len(l) == 0 {
			t.Errorf("Keep deleted the run's objects")
		}
		res2, log2 := collect(false)
		if !strings.Contains(log2.String(), "released already") {
			t.Errorf("the second collect released the pods again:\n%s", log2)
		}
		for _, k := range []string{"sent", "accepted", "delivered", "lost"} {
			if a, b := total(t, res, k), total(t, res2, k); a != b {
				t.Errorf("%s: %v, then %v collected again", k, a, b)
			}
		}
		e.nothingLeft(t, ns, "collect")
		_, err = e.launcher(io.Discard).Collect(context.Background(), ns, "no-such-run")
		if pipebench.ExitCode(err) != pipebench.ExitUsage || !strings.Contains(fmt.Sprint(err), "no run no-such-run") {
			t.Errorf("collect of no run: %v", err)
		}
	})

	// One generator per node, only on the nodes the pods may go to: node-b
	// is tainted for the system under test, so without a toleration the
	// run has one shard (node-a); tolerating the taint, two; with a node
	// selector for the load pool, one again.
	t.Run("per-node", func(t *testing.T) {
		t.Parallel()
		tol, _ := ParseToleration("dedicated=sut:NoSchedule")
		for _, tc := range []struct {
			ns     string
			pods   PodSettings
			shards int
		}{
			{"pernode-taint", PodSettings{}, 1},
			{"pernode-tolerate", PodSettings{Tolerations: []corev1.Toleration{tol}}, 2},
			{"pernode-selector", PodSettings{Tolerations: []corev1.Toleration{tol}, NodeSelector: map[string]string{"pool": "load"}}, 1},
		} {
			// A sink each: it counts unique sequence numbers, and every
			// run's start at 0.
			sink, arr := sinktest.HTTP(t)
			scen := fmt.Sprintf(`
name: k8s-per-node
target: {driver: http, url: %q, connections: 2}
phases:
  - {name: a, duration: 1s, rate: 200/s}
`, sink.Endpoint())
			before := arr.Delivered()
			res, col, _, err := e.launch(t, context.Background(), tc.ns, scen, Setup{PerNode: true, Pods: tc.pods})
			if err != nil {
				t.Fatalf("%s: %v", tc.ns, err)
			}
			if got := float64(arr.Delivered() - before); total(t, res, "accepted") != got || got != 200 || len(col.Shards) != tc.shards {
				t.Errorf("%s: %d shards, merged accepted %v, the sink received %v; want %d shards and the plan's 200", tc.ns, len(col.Shards), total(t, res, "accepted"), got, tc.shards)
			}
			e.nothingLeft(t, tc.ns, "success")
		}
	})

	// A node selector keeps an Indexed Job's shards off the other nodes.
	t.Run("node-selector", func(t *testing.T) {
		t.Parallel()
		ns := "selector"
		sink, _ := sinktest.HTTP(t)
		scen := fmt.Sprintf(`
name: k8s-selector
target: {driver: http, url: %q}
phases:
  - {name: a, duration: 1s, rate: 100/s}
`, sink.Endpoint())
		tol, _ := ParseToleration("dedicated:NoSchedule")
		e.namespace(t, ns)
		o := e.prepare(t, ns, scen, Setup{Shards: 3, Pods: PodSettings{NodeSelector: map[string]string{"pool": "load"}, Tolerations: []corev1.Toleration{tol}}})
		var nodes sync.Map
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				if l, err := e.c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
					for _, p := range l.Items {
						if p.Spec.NodeName != "" {
							nodes.Store(p.Name, p.Spec.NodeName)
						}
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		col, err := e.launcher(io.Discard).Run(context.Background(), o)
		if err != nil || len(col.Shards) != 3 {
			t.Fatalf("%v", err)
		}
		n := 0
		nodes.Range(func(k, v any) bool {
			n++
			if v != "node-a" {
				t.Errorf("pod %v ran on %v, not on the selected pool's node-a", k, v)
			}
			return true
		})
		if n < 3 {
			t.Errorf("saw %d pods placed", n)
		}
	})

	// Every worker fails its check (the pods lack the scenario's
	// variable): the error says which shard failed and why, and nothing
	// is left behind.
	t.Run("failure", func(t *testing.T) {
		t.Parallel()
		scen := `
name: k8s-failing
target: {driver: http, url: "${PB_TARGET_FOR_PODS}"}
phases:
  - {name: a, duration: 1s, rate: 10/s}
`
		os.Setenv("PB_TARGET_FOR_PODS", "http://127.0.0.1:9/")
		_, _, _, err := e.launch(t, context.Background(), "failure", scen, Setup{Shards: 2})
		var sf *ShardFailure
		if err == nil || !strings.Contains(err.Error(), "PB_TARGET_FOR_PODS") || !asShardFailure(err, &sf) || sf.Shard == 0 {
			t.Errorf("the error does not say which shard failed and why: %v", err)
		}
		e.nothingLeft(t, "failure", "failure")
	})

	// The system under test's pod cannot start it (its address is taken):
	// the error names that pod as the system under test, with the cause,
	// and nothing is left behind.
	t.Run("sut-fails", func(t *testing.T) {
		t.Parallel()
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		scen := fmt.Sprintf(`
name: k8s-sut-fails
target: {driver: http}
sut: {type: relay, listen: %q}
sink: {type: http}
phases:
  - {name: a, duration: 1s, rate: 10/s}
`, taken.Addr().String())
		_, _, _, err = e.launch(t, context.Background(), "sutfails", scen, Setup{Shards: 1})
		var sf *ShardFailure
		if !asShardFailure(err, &sf) || !sf.SUT || !strings.HasPrefix(sf.Pod, "run-sutfails-sut") || !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("the error does not name the system under test's pod and its cause: %v", err)
		}
		e.nothingLeft(t, "sutfails", "failure")
	})

	// Ctrl-C mid-load: the launcher's context ends, and every object of
	// the run goes, the in-cluster sink's and system under test's too.
	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		scen := `
name: k8s-long
target: {driver: http}
sut: {type: relay}
sink: {type: http}
phases:
  - {name: a, duration: 120s, rate: 20/s}
`
		ns := "interrupt"
		e.namespace(t, ns)
		o := e.prepare(t, ns, scen, Setup{Shards: 2})
		log := &testutil.Buffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := e.launcher(log).Run(ctx, o)
			done <- err
		}()
		testutil.Eventually(t, 90*time.Second, func() bool { return strings.Contains(log.String(), "k8s: live: 2/2 shards running") },
			"the shards never reported running:\n%s", log)
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("no error after the interrupt")
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("the launcher did not end after the interrupt:\n%s", log)
		}
		if l := e.left(ns); len(l) != 0 {
			t.Errorf("left behind after Ctrl-C: %v\n%s", l, log)
		}
	})

	// Objects applied by a GitOps tool and never collected: the Job's
	// deadline ends it (its pods go), and its TTL then deletes it.
	t.Run("deadline-ttl", func(t *testing.T) {
		t.Parallel()
		ns := "deadline"
		e.namespace(t, ns)
		sink, _ := sinktest.HTTP(t)
		scen := fmt.Sprintf(`
name: k8s-deadline
target: {driver: http, url: %q}
drain: 1s
phases:
  - {name: a, duration: 1s, rate: 10/s}
`, sink.Endpoint())
		o := e.prepare(t, ns, scen, Setup{Shards: 2, Deadline: 5 * time.Second, TTL: 2 * time.Second})
		if o.Deadline != 5*time.Second {
			t.Fatalf("deadline %s", o.Deadline)
		}
		obj, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		var manifests bytes.Buffer
		obj.WriteYAML(&manifests)
		applyYAML(t, e.c.Client, manifests.String())
		ctx := context.Background()
		var failed bool
		testutil.Eventually(t, 60*time.Second, func() bool {
			j, err := e.c.Client.BatchV1().Jobs(ns).Get(ctx, o.Name, metav1.GetOptions{})
			if err != nil {
				// Gone: only after it failed at its deadline, by its TTL.
				return failed
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == "DeadlineExceeded" {
					failed = true
				}
			}
			return false
		}, "the Job was not ended at its deadline and then deleted by its TTL")
		testutil.Eventually(t, 30*time.Second, func() bool {
			l, err := e.c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0
		}, "the Job's pods were not deleted with it")
	})
}

func asShardFailure(err error, sf **ShardFailure) bool {
	f, ok := err.(*ShardFailure)
	if ok {
		*sf = f
	}
	return ok
}

// applyYAML creates the objects of a YAML stream, as kubectl apply does
// for new objects.
func applyYAML(t *testing.T, c kubernetes.Interface, stream string) {
	t.Helper()
	ctx := context.Background()
	for _, doc := range strings.Split(stream, "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode: %v\n%s", err, doc)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = c.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = c.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *batchv1.Job:
			_, err = c.BatchV1().Jobs(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.DaemonSet:
			_, err = c.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("unexpected object %T", obj)
		}
		if err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
}
