package command

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/cli/buildinfo"
	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/sinktest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/k8s"
)

// `pipebench k8s run` as a user runs it (flags, the launch, the merged
// report, the exit code), against a real kube-apiserver with the real Job
// and garbage-collector controllers (kube-controller-manager). The k8s
// package's own tests cover the launch itself end to end (the in-cluster
// sink and system under test, per-node runs, failures, Ctrl-C, GitOps
// collection, placement, deadlines).
// No kubelet or scheduler runs here: kubetest.Kubelet binds the pods to
// two Node objects and runs each pod's command (pipebench-load k8s worker,
// and the readiness probe pipebench-load k8s ready) as a local process of
// this test binary playing that program, with the pod's environment, a private TMPDIR and a kubeconfig
// holding a token issued for the pod's service account, and reports the
// pods' status through the API (see internal/testkit/kubetest/kubelet.go). The
// launcher itself runs as a child process, as a user runs it.
func TestK8sLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	c := kubetest.Start(t, kubetest.Options{Controllers: []string{"job", "garbagecollector"}})
	kl := c.StartKubelet(t, []string{"node-a", "node-b"}, func(_ *corev1.Pod, argv, env []string) *exec.Cmd {
		// The image's programs are this test binary playing pipebench or
		// pipebench-load.
		if len(argv) == 0 || (argv[0] != "pipebench" && argv[0] != "pipebench-load") {
			return exec.Command("/bin/false")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
		cmd.Env = append(env, "PIPEBENCH_HELPER_ARGS="+strings.Join(argv[1:], "\x1f"), "PIPEBENCH_HELPER_PROGRAM="+argv[0]) // see extension_test.go
		return cmd
	})
	dir := t.TempDir()
	ctx := context.Background()
	namespace := func(t *testing.T, name string) {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// left lists what a run left behind in a namespace.
	left := func(ns string) []string { return c.Left(ctx, ns) }
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
		sink, arr := sinktest.HTTP(t)
		_ = arr
		scen := writeScenario(t, t.TempDir(), scenariotest.TwoPhases("k8s-sharded", sink.Endpoint(), 2, 300, 600))
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
		// The shards run the lean load generator, the probe too.
		if ctr := job.Spec.Template.Spec.Containers[0]; strings.Join(ctr.Command, " ") != "pipebench-load k8s worker" ||
			ctr.ReadinessProbe == nil || ctr.ReadinessProbe.Exec == nil || strings.Join(ctr.ReadinessProbe.Exec.Command, " ") != "pipebench-load k8s ready" {
			t.Errorf("the shards run %q (readiness probe %+v), want pipebench-load k8s worker and ready", ctr.Command, ctr.ReadinessProbe)
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
	// The shards run the load generator's image when the image is not
	// chosen, or the one --load-image names; --image alone runs every
	// pod from it (it holds pipebench-load too).
	if strings.Contains(stdout, "pipebench-load:") {
		t.Errorf("--image alone: a pod runs another image:\n%s", stdout)
	}
	stdout, _, code = cli(t, "k8s", "manifests", scen, "--name", "m3")
	if code != 0 || !strings.Contains(stdout, "image: "+k8s.DefaultLoadImage(buildinfo.Version)+"\n") {
		t.Errorf("no image chosen: exit %d, want the shards on %s:\n%s", code, k8s.DefaultLoadImage(buildinfo.Version), stdout)
	}
	stdout, _, code = cli(t, "k8s", "manifests", scen, "--name", "m4", "--image", "full:1", "--load-image", "lean:1")
	if code != 0 || !strings.Contains(stdout, "image: lean:1\n") || strings.Contains(stdout, "image: full:1\n") {
		t.Errorf("--load-image lean:1: exit %d, want the shards on it:\n%s", code, stdout)
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
	// The three shapes that used to reach the ConfigMap (the whole class
	// is k8s's TestLiteralSecretsRefused): a NATS token URL, a default in
	// ${PW:-...}, a credential in a query string.
	for _, shape := range []string{
		`target: {driver: nats, url: "nats://hunter2@nats.load.svc:4222", subject: s}`,
		`target: {driver: http, url: "http://sink:8080/", secret_headers: {Authorization: "${PW:-hunter2}"}}`,
		`target: {driver: http, url: "http://sink:8080/?access_token=hunter2"}`,
	} {
		f := writeScenario(t, t.TempDir(), "name: s\n"+shape+"\nphases:\n  - {name: a, duration: 2s, rate: 100/s}\n")
		stdout, stderr, code = cli(t, "k8s", "manifests", f)
		if code != pipebench.ExitUsage || strings.Contains(stdout+stderr, "hunter2") || !strings.Contains(stderr, "--env-from-secret") {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", shape, code, stdout, stderr)
		}
	}

	// Pods for a real cluster: sized, placed, patched, deadline and TTL,
	// scrape annotations, a PodMonitor; and the same documents as a
	// kustomize base.
	patch := filepath.Join(dir, "patch.yaml")
	os.WriteFile(patch, []byte("spec:\n  priorityClassName: load-tests\n"), 0o600)
	stdout, stderr, code = cli(t, "k8s", "manifests", scen, "--shards", "2", "--name", "m3", "--node-selector", "pool=load",
		"--toleration", "dedicated=load:NoSchedule", "--pod-patch", patch, "--pod-monitor", "--ttl", "30m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"activeDeadlineSeconds: ", "ttlSecondsAfterFinished: 1800", "pool: load", "key: dedicated",
		"priorityClassName: load-tests", "prometheus.io/scrape: \"true\"", "kind: PodMonitor", "cpu: ", "memory: ", "type: RuntimeDefault"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in the manifests", want)
		}
	}
	base := filepath.Join(t.TempDir(), "base")
	if _, stderr, code = cli(t, "k8s", "manifests", scen, "--name", "m4", "--kustomize", base); code != 0 {
		t.Fatalf("--kustomize: exit %d: %s", code, stderr)
	}
	if k, err := os.ReadFile(filepath.Join(base, "kustomization.yaml")); err != nil || !strings.Contains(string(k), "-job-m4.yaml") {
		t.Errorf("kustomization.yaml: %v\n%s", err, k)
	}
	// Without --name: the scenario's name and the time.
	stdout, _, _ = cli(t, "k8s", "manifests", scen)
	if !regexp.MustCompile(`name: m-20\d{6}-\d{6}\n`).MatchString(stdout) {
		t.Errorf("no name from the scenario and the time in:\n%.400s", stdout)
	}
	stdout, _, code = cli(t, "version")
	if code != 0 || !strings.Contains(stdout, "pipebench ") || !strings.Contains(stdout, "go:      go") || !strings.Contains(stdout, "commit:") {
		t.Errorf("version: exit %d\n%s", code, stdout)
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
