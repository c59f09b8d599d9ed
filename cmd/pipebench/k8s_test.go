package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	"github.com/pipebench/pipebench/internal/kubetest"
	"github.com/pipebench/pipebench/internal/testutil"
	"github.com/pipebench/pipebench/k8s"
	"github.com/pipebench/pipebench/kpi"
	httpsink "github.com/pipebench/pipebench/sink/http"
)

// `pipebench k8s run` against a real kube-apiserver with the real Job,
// DaemonSet and garbage-collector controllers (kube-controller-manager).
// No kubelet or scheduler runs here: kubetest.Kubelet binds the pods to
// two Node objects and runs each pod's command (pipebench k8s worker, and
// the readiness probe pipebench k8s ready) as a local process of this test
// binary, with the pod's environment, a private TMPDIR and a kubeconfig
// holding a token issued for the pod's service account, and reports the
// pods' status through the API (see internal/kubetest/kubelet.go). The
// launcher itself runs as a child process, as a user runs it.
func TestK8sLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	c := kubetest.Start(t, kubetest.Options{Controllers: []string{"job", "daemonset", "deployment", "replicaset", "garbagecollector"}})
	kl := c.StartKubelet(t, []string{"node-a", "node-b"}, func(_ *corev1.Pod, argv, env []string) *exec.Cmd {
		// The image's entry point is this test binary playing pipebench.
		if len(argv) == 0 || argv[0] != "pipebench" {
			return exec.Command("/bin/false")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
		cmd.Env = append(env, "PIPEBENCH_HELPER_ARGS="+strings.Join(argv[1:], "\x1f"))
		return cmd
	})
	// Each run gets its own sink: the sink counts unique sequence numbers,
	// and every run's start at 0.
	newSink := func(t *testing.T) (*httpsink.Sink, *kpi.Arrivals) {
		arr := kpi.NewArrivals(1, nil)
		arr.StartPhase(0, 1)
		sink, err := httpsink.New(httpsink.Params{})
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Start(context.Background(), arr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sink.Shutdown(context.Background()) })
		return sink, arr
	}
	dir := t.TempDir()
	ctx := context.Background()
	namespace := func(t *testing.T, name string) {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// left lists what a run left behind in a namespace.
	left := func(ns string) []string {
		var out []string
		sel := metav1.ListOptions{}
		if l, err := c.Client.CoreV1().Pods(ns).List(ctx, sel); err == nil {
			for _, p := range l.Items {
				out = append(out, "pod/"+p.Name)
			}
		}
		if l, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				if o.Name != "kube-root-ca.crt" {
					out = append(out, "configmap/"+o.Name)
				}
			}
		}
		if l, err := c.Client.CoreV1().ServiceAccounts(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				if o.Name != "default" {
					out = append(out, "serviceaccount/"+o.Name)
				}
			}
		}
		if l, err := c.Client.RbacV1().Roles(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				out = append(out, "role/"+o.Name)
			}
		}
		if l, err := c.Client.RbacV1().RoleBindings(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				out = append(out, "rolebinding/"+o.Name)
			}
		}
		if l, err := c.Client.BatchV1().Jobs(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				out = append(out, "job/"+o.Name)
			}
		}
		if l, err := c.Client.AppsV1().DaemonSets(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				out = append(out, "daemonset/"+o.Name)
			}
		}
		if l, err := c.Client.AppsV1().Deployments(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				out = append(out, "deployment/"+o.Name)
			}
		}
		if l, err := c.Client.AppsV1().ReplicaSets(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				out = append(out, "replicaset/"+o.Name)
			}
		}
		if l, err := c.Client.CoreV1().Services(ns).List(ctx, sel); err == nil {
			for _, o := range l.Items {
				out = append(out, "service/"+o.Name)
			}
		}
		return out
	}
	launch := func(t *testing.T, scen, ns string, extra ...string) (*lockedBuffer, *lockedBuffer, chan struct{}, *exec.Cmd) {
		args := append([]string{"k8s", "run", scen, "--kubeconfig", c.Kubeconfig, "--namespace", ns,
			"--name", "run-" + ns, "--image", "pipebench:test", "--lead", "4s", "--ready-timeout", "40s", "--no-store"}, extra...)
		cmd, stdout, stderr, done := startChild(t, args...)
		return stdout, stderr, done, cmd
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller-manager:\n%s\napiserver:\n%s\ncontainers:\n%s", filterLines(c.Log("controller-manager", 400), "extension-apiserver-authentication", 30), c.Log("apiserver", 10), kl.Logs(8))
		}
	})
	wait := func(t *testing.T, done chan struct{}, stderr *lockedBuffer, within time.Duration) {
		t.Helper()
		defer func() { t.Logf("k8s run:\n%s", stderr.String()) }()
		select {
		case <-done:
		case <-time.After(within):
			t.Fatalf("k8s run did not end within %s:\n%s", within, stderr.String())
		}
	}

	t.Run("job", func(t *testing.T) {
		ns := "job"
		namespace(t, ns)
		sink, arr := newSink(t)
		_ = arr
		scen := writeScenario(t, t.TempDir(), fmt.Sprintf(`
name: k8s-sharded
target: {driver: http, url: %q, connections: 2}
workload: {generator: event, size: 64}
phases:
  - {name: a, duration: 1s, rate: 300/s}
  - {name: b, duration: 1s, rate: 600/s}
thresholds: ["errors == 0"]
`, sink.Endpoint()))
		before := arr.Delivered()
		out := filepath.Join(dir, "merged.json")
		_, stderr, done, cmd := launch(t, scen, ns, "--shards", "3", "--out", out)

		// Objects as documented, and the start barrier: every pod is
		// ready, no start time yet, and nothing was sent.
		var cm *corev1.ConfigMap
		testutil.Eventually(t, 90*time.Second, func() bool {
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelRun + "=run-" + ns})
			if err != nil || len(pods.Items) != 3 {
				return false
			}
			for i := range pods.Items {
				if !podReady(&pods.Items[i]) {
					return false
				}
			}
			cm, err = c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "run-"+ns, metav1.GetOptions{})
			return err == nil
		}, "three ready pods never appeared:\n%s", stderr.String())
		if cm.Data[k8s.KeyStartAt] == "" {
			if got := arr.Delivered() - before; got != 0 {
				t.Errorf("%d items arrived before the release", got)
			}
		} else {
			t.Logf("the start time was written before the test looked (a slow machine): barrier not checked this time")
		}
		if cm.Data[k8s.KeyShards] != "3" || !strings.Contains(cm.Data[k8s.KeyScenario], "k8s-sharded") {
			t.Errorf("ConfigMap data %v", cm.Data)
		}
		job, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "run-"+ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *job.Spec.Completions != 3 || *job.Spec.CompletionMode != "Indexed" || *job.Spec.BackoffLimit != 0 {
			t.Errorf("job spec %+v", job.Spec)
		}
		for _, get := range []func() error{
			func() error {
				_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "run-"+ns, metav1.GetOptions{})
				return err
			},
			func() error {
				_, err := c.Client.RbacV1().Roles(ns).Get(ctx, "run-"+ns, metav1.GetOptions{})
				return err
			},
			func() error {
				_, err := c.Client.RbacV1().RoleBindings(ns).Get(ctx, "run-"+ns, metav1.GetOptions{})
				return err
			},
		} {
			if err := get(); err != nil {
				t.Error(err)
			}
		}

		wait(t, done, stderr, 3*time.Minute)
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
		res := readJSONResult(t, out)
		if res.Manifest.Status != pipebench.StatusPassed {
			t.Errorf("merged status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
		}
		accepted, _ := res.Total.Get("accepted")
		sent, _ := res.Total.Get("sent")
		if got := float64(arr.Delivered() - before); accepted != got {
			t.Errorf("merged accepted %v, the sink received %v", accepted, got)
		}
		if sent != 900 {
			t.Errorf("merged sent %v, want the plan's 900", sent)
		}
		if !strings.Contains(stderr.String(), "the load starts at") || !strings.Contains(stderr.String(), "collected 3 shard Results") {
			t.Errorf("no progress lines:\n%s", stderr.String())
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after success: %v", l)
		}
	})

	// The scenario's sink in the cluster: a Deployment and a Service; the
	// shards send to the Service and get their arrivals back over the
	// feed, so the merged Result's delivered, lost, duplicates and
	// end-to-end latency are the one sink's, and its own count agrees.
	t.Run("in-cluster-sink", func(t *testing.T) {
		ns := "insink"
		namespace(t, ns)
		scen := writeScenario(t, t.TempDir(), `
name: k8s-in-cluster-sink
target: {driver: http, connections: 2}
sink: {type: http}
workload: {generator: event, size: 64}
drain: 10s
phases:
  - {name: a, duration: 1s, rate: 300/s}
  - {name: b, duration: 1s, rate: 600/s, faults: {error_ratio: 0.3}}
thresholds: ["lost == 0"]
`)
		out := filepath.Join(dir, "insink.json")
		_, stderr, done, cmd := launch(t, scen, ns, "--shards", "3", "--out", out)
		testutil.Eventually(t, 90*time.Second, func() bool {
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelRole + "=" + k8s.RoleSink})
			if err != nil || len(pods.Items) != 1 || !podReady(&pods.Items[0]) {
				return false
			}
			_, err = c.Client.CoreV1().Services(ns).Get(ctx, "run-"+ns+"-sink", metav1.GetOptions{})
			return err == nil
		}, "no ready sink pod behind a Service:\n%s", stderr.String())
		dep, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "run-"+ns+"-sink", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := dep.Spec.Template.Spec.Containers[0].Command; strings.Join(got, " ") != "pipebench k8s sink" {
			t.Errorf("sink command %v", got)
		}
		wait(t, done, stderr, 3*time.Minute)
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
		res := readJSONResult(t, out)
		if res.Manifest.Status != pipebench.StatusPassed {
			t.Errorf("merged status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
		}
		var received, dups, unmatched, faulted uint64
		var matched float64
		line := ""
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, "the in-cluster sink received") {
				line = l
			}
		}
		if _, err := fmt.Sscanf(line, "k8s: the in-cluster sink received %d unique items (%d duplicates, %d unmatched, %d faulted); the shards matched %f of them",
			&received, &dups, &unmatched, &faulted, &matched); err != nil {
			t.Fatalf("no sink count line (%v):\n%s", err, stderr.String())
		}
		get := func(name string) float64 {
			v, ok := res.Total.Get(name)
			if !ok {
				t.Errorf("the merged Result has no %s", name)
			}
			return v
		}
		// Phase b's faults, applied by the sink pod on the shared clock:
		// the faulted requests were refused, so not delivered.
		if d, a := get("delivered"), get("accepted"); d != float64(received) || d != a || matched != d || a >= 900 || a < 300 {
			t.Errorf("merged delivered %v accepted %v, the sink received %d unique items, the shards matched %v; the plan sends 900, 30%% of phase b faulted", d, a, received, matched)
		}
		if l, s := get("lost"), get("sent"); l != 0 || s != 900 {
			t.Errorf("merged lost %v sent %v", l, s)
		}
		fa, _ := res.Phases[0].Get("faulted")
		fb, _ := res.Phases[1].Get("faulted")
		if fb < 50 || fa > fb/4 {
			t.Errorf("faulted %v in phase a, %v in phase b: the sink did not follow the phases' fault policies", fa, fb)
		}
		// The faulted counts ride to shard 1; the last of them may come
		// after shard 1 ended.
		if f := get("faulted"); f > float64(faulted) || f < float64(faulted)*0.8 {
			t.Errorf("merged faulted %v, the sink faulted %d", f, faulted)
		}
		if d := get("duplicates"); d != float64(dups) {
			t.Errorf("merged duplicates %v, the sink counted %d", d, dups)
		}
		if p := get("e2e_latency.p99"); p <= 0 {
			t.Errorf("merged e2e_latency.p99 %v", p)
		}
		if res.Plan.Sink == nil || res.Plan.Sink.Type != "http" {
			t.Errorf("merged plan's sink %+v, want the scenario's http sink", res.Plan.Sink)
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after success: %v", l)
		}
	})

	// The reference shape: a real collector gateway as the system under
	// test, once, in a pod of its own; two shards send OTLP to its
	// Service, it exports to the in-cluster sink, and every shard reads
	// its metrics. The merged Result has the shards' sent, the sink's
	// delivered and the one collector's own accepted count.
	t.Run("collector", func(t *testing.T) {
		ns := "collector"
		namespace(t, ns)
		scen := writeScenario(t, t.TempDir(), `
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
`)
		out := filepath.Join(dir, "collector.json")
		_, stderr, done, cmd := launch(t, scen, ns, "--shards", "2", "--out", out)
		testutil.Eventually(t, 90*time.Second, func() bool {
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelRole + "=" + k8s.RoleSUT})
			return err == nil && len(pods.Items) == 1 && podReady(&pods.Items[0])
		}, "no ready pod of the system under test:\n%s", stderr.String())
		svc, err := c.Client.CoreV1().Services(ns).Get(ctx, "run-"+ns+"-sut", metav1.GetOptions{})
		if err != nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("the system under test's Service: %v (cluster IP %q, want a headless one)", err, svc.Spec.ClusterIP)
		}
		wait(t, done, stderr, 3*time.Minute)
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
		res := readJSONResult(t, out)
		sent, _ := res.Total.Get("sent")
		delivered, _ := res.Total.Get("delivered")
		if sent != 1000 || delivered != sent || res.Manifest.Status != pipebench.StatusPassed {
			t.Errorf("merged sent %v, delivered %v, status %s %v; the plan sends 1,000 spans", sent, delivered, res.Manifest.Status, res.Manifest.Reasons)
		}
		// The collector's own count of what it accepted covers both
		// shards: more than one shard sent (500).
		var accepted float64
		for _, k := range res.Total.All("receiver_accepted.total") {
			accepted += k.Value
		}
		t.Logf("merged: sent %v, delivered %v, the collector accepted %v", sent, delivered, accepted)
		if accepted <= 500 || accepted > 1000 {
			t.Errorf("the collector accepted %v spans by its own count; both shards sent to it: want 501..1000", accepted)
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after success: %v", l)
		}
	})

	// GitOps: the objects applied from k8s manifests (as kubectl would),
	// then k8s collect releases, collects and merges; with --keep it
	// leaves the objects, and collecting again gives the same Result and
	// cleans up. The scenario's embedded system under test (a relay) runs
	// once, in a pod of its own behind a headless Service: both shards
	// send to it and observe it, and it exports to the in-cluster sink.
	t.Run("collect", func(t *testing.T) {
		ns := "collect"
		namespace(t, ns)
		name := "run-" + ns
		scen := writeScenario(t, t.TempDir(), `
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
`)
		manifests, stderr, code := cli(t, "k8s", "manifests", scen, "--shards", "2", "--name", name, "--namespace", ns, "--image", "pipebench:test")
		if code != 0 {
			t.Fatalf("manifests: exit %d: %s", code, stderr)
		}
		for _, want := range []string{"name: " + name + "-sut", "clusterIP: None", "value: " + name + "-sut." + ns + ".svc"} {
			if !strings.Contains(manifests, want) {
				t.Errorf("the manifests have no %q: the system under test does not run in a pod of its own", want)
			}
		}
		applyYAML(t, c.Client, manifests)
		collect := func(t *testing.T, out string, extra ...string) (*lockedBuffer, int) {
			args := append([]string{"k8s", "collect", name, "--kubeconfig", c.Kubeconfig, "--namespace", ns,
				"--lead", "4s", "--ready-timeout", "60s", "--no-store", "--out", out}, extra...)
			cmd, _, stderr, done := startChild(t, args...)
			wait(t, done, stderr, 3*time.Minute)
			return stderr, cmd.ProcessState.ExitCode()
		}
		out1 := filepath.Join(dir, "collect1.json")
		stderr1, code := collect(t, out1, "--keep")
		if code != 0 {
			t.Fatalf("collect --keep: exit %d:\n%s", code, stderr1.String())
		}
		if !strings.Contains(stderr1.String(), "the load starts at") {
			t.Errorf("collect did not release the pods:\n%s", stderr1.String())
		}
		res := readJSONResult(t, out1)
		if d, _ := res.Total.Get("delivered"); d != 400 || res.Manifest.Status != pipebench.StatusPassed {
			t.Errorf("merged delivered %v, status %s %v; the plan sends 400", d, res.Manifest.Status, res.Manifest.Reasons)
		}
		// One relay received both shards' items: its own count, observed
		// through its Service, is more than one shard sent (200).
		if acc, _ := res.Total.Get("receiver_accepted.total", "instance", "relay-0"); acc <= 200 || acc > 400 {
			t.Errorf("the relay accepted %v items by its own count; both shards sent to one relay: want 201..400", acc)
		}
		if cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name+"-sut", metav1.GetOptions{}); err != nil || cm.Data["state"] != "ready" {
			t.Errorf("the system under test's ConfigMap: %v, %v", cm, err)
		}
		if l := left(ns); len(l) == 0 {
			t.Errorf("--keep deleted the run's objects")
		}
		out2 := filepath.Join(dir, "collect2.json")
		stderr2, code := collect(t, out2)
		if code != 0 {
			t.Fatalf("second collect: exit %d:\n%s", code, stderr2.String())
		}
		if !strings.Contains(stderr2.String(), "released already") {
			t.Errorf("the second collect released the pods again:\n%s", stderr2.String())
		}
		res2 := readJSONResult(t, out2)
		for _, k := range []string{"sent", "accepted", "delivered", "lost"} {
			a, _ := res.Total.Get(k)
			b, _ := res2.Total.Get(k)
			if a != b {
				t.Errorf("%s: %v, then %v collected again", k, a, b)
			}
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after collect: %v", l)
		}
		// Nothing to collect: the run's name is said, with what to do.
		_, stderr3, code := cli(t, "k8s", "collect", "no-such-run", "--kubeconfig", c.Kubeconfig, "--namespace", ns)
		if code != pipebench.ExitUsage || !strings.Contains(stderr3, "no run no-such-run") {
			t.Errorf("collect of no run: exit %d: %s", code, stderr3)
		}
	})

	t.Run("per-node", func(t *testing.T) {
		ns := "pernode"
		namespace(t, ns)
		sink, arr := newSink(t)
		_ = arr
		scen := writeScenario(t, t.TempDir(), fmt.Sprintf(`
name: k8s-per-node
target: {driver: http, url: %q, connections: 2}
phases:
  - {name: a, duration: 1s, rate: 200/s}
`, sink.Endpoint()))
		before := arr.Delivered()
		out := filepath.Join(dir, "pernode.json")
		_, stderr, done, cmd := launch(t, scen, ns, "--per-node", "--out", out)
		testutil.Eventually(t, 90*time.Second, func() bool {
			_, err := c.Client.AppsV1().DaemonSets(ns).Get(ctx, "run-"+ns, metav1.GetOptions{})
			return err == nil
		}, "no DaemonSet:\n%s", stderr.String())
		wait(t, done, stderr, 3*time.Minute)
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr.String())
		}
		res := readJSONResult(t, out)
		accepted, _ := res.Total.Get("accepted")
		if got := float64(arr.Delivered() - before); accepted != got || accepted != 200 {
			t.Errorf("merged accepted %v, the sink received %v, the plan sends 200", accepted, got)
		}
		if !strings.Contains(stderr.String(), "2 shard(s)") {
			t.Errorf("not one shard per node:\n%s", stderr.String())
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after success: %v", l)
		}
	})

	t.Run("failure", func(t *testing.T) {
		ns := "failure"
		namespace(t, ns)
		sink, _ := newSink(t)
		// The launcher has PB_TARGET; the pods do not (no
		// --env-from-secret): every worker fails its check.
		scen := writeScenario(t, t.TempDir(), `
name: k8s-failing
target: {driver: http, url: "${PB_TARGET}"}
phases:
  - {name: a, duration: 1s, rate: 10/s}
`)
		os.Setenv("PB_TARGET", sink.Endpoint())
		defer os.Unsetenv("PB_TARGET")
		_, stderr, done, cmd := launch(t, scen, ns, "--shards", "2")
		wait(t, done, stderr, 3*time.Minute)
		if code := cmd.ProcessState.ExitCode(); code == 0 {
			t.Fatalf("exit 0 though every shard failed:\n%s", stderr.String())
		}
		if !strings.Contains(stderr.String(), "PB_TARGET") || !strings.Contains(stderr.String(), "failed") {
			t.Errorf("the error does not say which shard failed and why:\n%s", stderr.String())
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after failure: %v", l)
		}
	})

	// The system under test's pod cannot start it (its address is taken):
	// the launcher says so, naming that pod, exits non-zero and leaves
	// nothing behind.
	t.Run("sut-fails", func(t *testing.T) {
		ns := "sutfails"
		namespace(t, ns)
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		scen := writeScenario(t, t.TempDir(), fmt.Sprintf(`
name: k8s-sut-fails
target: {driver: http}
sut: {type: relay, listen: %q}
sink: {type: http}
phases:
  - {name: a, duration: 1s, rate: 10/s}
`, taken.Addr().String()))
		_, stderr, done, cmd := launch(t, scen, ns, "--shards", "1")
		wait(t, done, stderr, 3*time.Minute)
		if code := cmd.ProcessState.ExitCode(); code == 0 {
			t.Fatalf("exit 0 though the system under test could not start:\n%s", stderr.String())
		}
		if !strings.Contains(stderr.String(), "the in-cluster system under test (pod run-"+ns+"-sut") || !strings.Contains(stderr.String(), "address already in use") {
			t.Errorf("the error does not name the system under test's pod and its cause:\n%s", stderr.String())
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after failure: %v", l)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		ns := "interrupt"
		namespace(t, ns)
		// With the in-cluster sink and system under test: their
		// Deployments, ReplicaSets, pods, Services and ConfigMaps go with
		// the rest.
		scen := writeScenario(t, t.TempDir(), `
name: k8s-long
target: {driver: http}
sut: {type: relay}
sink: {type: http}
phases:
  - {name: a, duration: 120s, rate: 20/s}
`)
		_, stderr, done, cmd := launch(t, scen, ns, "--shards", "2")
		// Mid-load: a shard reported items sent.
		stderr.waitFor(t, "running, sent ")
		cmd.Process.Signal(os.Interrupt)
		wait(t, done, stderr, 90*time.Second)
		if code := cmd.ProcessState.ExitCode(); code == 0 {
			t.Errorf("exit 0 after Ctrl-C:\n%s", stderr.String())
		}
		if l := left(ns); len(l) != 0 {
			t.Errorf("left behind after Ctrl-C: %v\n%s", l, stderr.String())
		}
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// `pipebench k8s manifests` needs no cluster: the objects as YAML, and a
// scenario with a literal credential refused without repeating it.
func TestK8sManifestsCommand(t *testing.T) {
	dir := t.TempDir()
	scen := writeScenario(t, dir, `
name: m
target: {driver: http, url: "http://sink:8080/"}
phases:
  - {name: a, duration: 2s, rate: 100/s}
`)
	stdout, stderr, code := cli(t, "k8s", "manifests", scen, "--shards", "4", "--name", "m1", "--namespace", "load", "--image", "pipebench:1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"kind: ServiceAccount", "kind: Role", "kind: RoleBinding", "kind: ConfigMap", "kind: Job",
		"completions: 4", "completionMode: Indexed", "image: pipebench:1", "namespace: load", "pipebench.dev/run: m1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
	stdout, _, code = cli(t, "k8s", "manifests", scen, "--per-node", "--nodes", "a,b", "--name", "m2")
	if code != 0 || !strings.Contains(stdout, "kind: DaemonSet") || !strings.Contains(stdout, "a=1") {
		t.Errorf("per-node: exit %d\n%s", code, stdout)
	}
	secret := writeScenario(t, t.TempDir(), `
name: s
target: {driver: http, url: "http://sink:8080/", secret_headers: {Authorization: "Bearer hunter2"}}
phases:
  - {name: a, duration: 2s, rate: 100/s}
`)
	stdout, stderr, code = cli(t, "k8s", "manifests", secret)
	if code != pipebench.ExitUsage || strings.Contains(stdout+stderr, "hunter2") || !strings.Contains(stderr, "--env-from-secret") {
		t.Errorf("literal credential: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}

	// An embedded system under test runs in a pod of its own, unless
	// --sut-per-shard; a process observer of its processes cannot reach
	// them there, and is refused with what to do.
	withSUT := `
name: g
target: {driver: http}
sut: {type: relay}
sink: {type: http}
phases:
  - {name: a, duration: 2s, rate: 100/s}
`
	stdout, stderr, code = cli(t, "k8s", "manifests", writeScenario(t, t.TempDir(), withSUT), "--name", "g1")
	if code != 0 || !strings.Contains(stdout, "name: g1-sut") || !strings.Contains(stdout, "- sut\n") {
		t.Errorf("system under test: exit %d: %s\n%s", code, stderr, stdout)
	}
	stdout, _, code = cli(t, "k8s", "manifests", writeScenario(t, t.TempDir(), withSUT), "--name", "g2", "--sut-per-shard")
	if code != 0 || strings.Contains(stdout, "g2-sut") {
		t.Errorf("--sut-per-shard: exit %d, and the manifests still have the system's own pod:\n%s", code, stdout)
	}
	_, stderr, code = cli(t, "k8s", "manifests", writeScenario(t, t.TempDir(), withSUT+"observers:\n  - {type: process}\n"), "--name", "g3")
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "--sut-per-shard") || !strings.Contains(stderr, "prometheus") {
		t.Errorf("process observer with the system in its own pod: exit %d: %s", code, stderr)
	}
}

// filterLines drops the lines holding noise and keeps the last n.
func filterLines(s, noise string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, noise) {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Join(out, "\n")
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
		case *appsv1.Deployment:
			_, err = c.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
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
