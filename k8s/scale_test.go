package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/sinktest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	kpod "github.com/pipebench/pipebench/k8s/pod"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/sut/all"
)

// envTestLaunch tells this test binary to be the launcher of a per-node
// run (k8s run's part: Prepare, Nodes, Launch.Run, the merge) in a process
// of its own, so that its memory and API calls are its own; its value is
// the launch's settings as JSON, and it prints its figures as JSON.
const envTestLaunch = "PIPEBENCH_K8S_TEST_LAUNCH"

type launchSpec struct {
	Kubeconfig, Namespace, Name, Scenario string
	Lead, ReadyTimeout                    time.Duration
}

type launchFigures struct {
	Shards                                int
	Sent                                  float64
	Status                                string
	ApplyToReady, Barrier, Collect, Merge time.Duration
	Total                                 time.Duration
	Start                                 time.Time
	Calls                                 map[string]int64
	MaxRSSKiB                             int64
	HeapAfterMergeMiB                     float64
	Err                                   string
}

// countingTransport counts the API requests by verb and resource.
type countingTransport struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	calls map[string]int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	res := ""
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			res = parts[i+2]
		}
	}
	if res == "" && len(parts) > 0 {
		res = parts[len(parts)-1]
	}
	verb := r.Method
	if r.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	c.mu.Lock()
	c.calls[verb+" "+res]++
	c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

// counted returns a client of cfg (at the rate Connect sets, 50 a second)
// whose requests are counted.
func counted(cfg *rest.Config, qps float32) (kubernetes.Interface, *countingTransport) {
	ct := &countingTransport{calls: map[string]int64{}}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { ct.rt = rt; return ct }
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	return c, ct
}

// testLaunch is the launcher process of BenchmarkPerNode.
func testLaunch(spec string) int {
	var s launchSpec
	out := json.NewEncoder(os.Stdout)
	var f launchFigures
	fail := func(err error) int { f.Err = err.Error(); out.Encode(f); return 1 }
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fail(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return fail(err)
	}
	client, ct := counted(cfg, 50)
	reg, err := all.Registry()
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	p, err := Prepare(reg, "scale.yaml", []byte(s.Scenario), Setup{Name: s.Name, Namespace: s.Namespace, Image: "pipebench:test", PerNode: true}, time.Now())
	if err != nil {
		return fail(err)
	}
	o := p.Options
	if o.Nodes, err = Nodes(ctx, client, o.Pods); err != nil {
		return fail(err)
	}
	p.Options = o
	p.Size(o.N())
	l := Launch{Client: client, Log: os.Stderr, ReadyTimeout: s.ReadyTimeout, Lead: s.Lead, RunTimeout: p.Length + 5*time.Minute, Poll: time.Second}
	col, err := l.Run(ctx, p.Options)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	merged, err := kpi.Merge(col.Shards, reg)
	if err != nil {
		return fail(err)
	}
	f.Merge = time.Since(t0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.HeapAfterMergeMiB = float64(ms.HeapInuse) / (1 << 20)
	tl := col.Timeline
	f.Shards, f.Status, f.Start = len(col.Shards), string(merged.Manifest.Status), tl.Start
	f.Sent, _ = merged.Total.Get("sent")
	f.ApplyToReady, f.Collect, f.Total = tl.Ready.Sub(tl.Began), tl.Collected.Sub(tl.Done), time.Since(tl.Began)
	f.Calls = ct.calls
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	f.MaxRSSKiB = ru.Maxrss
	out.Encode(f)
	return 0
}

// BenchmarkPerNode is the references' scale: a per-node run (a DaemonSet)
// over PIPEBENCH_BENCH_NODES Node objects (default 1,500) against the real
// API server, etcd and controller manager (its DaemonSet controller at
// 100 requests a second instead of its default 20), the launcher in a
// process of its own. It prints: the time from apply to every pod ready,
// the start barrier's spread (when the shards learned the start time,
// and when their load began by their Results), the time to collect and
// to merge every Result, the launcher's API calls by kind and its peak
// memory.
//
// Simulated: the kubelets (internal/testkit/kubetest). PIPEBENCH_BENCH_SAMPLE
// pods (default 4) run as processes with their own service account's
// token, as in the other tests; the kubelet answers for the others as
// their kubelet's status would (bound, Running, Ready when their shard
// waits for the start), and this process plays their containers: each a
// real k8s.Worker with a client of the shards' service account (through
// its RBAC Role), doing every API call a worker does (its ConfigMap, the
// watch of the start time, progress, its Result). Their runs are not all
// real: the first played shard to start runs its slice of the plan for
// real (execute.Run, against an HTTP sink on loopback) and every other
// played shard stores that Result under its own slice and run id (1,500
// runners in one process on two cores starve each other, and what is
// measured here is the launch, not the load). The Results the launcher
// collects and merges are so as large and as many as a real run's.
//
//	go test -run '^$' -bench PerNode -benchtime 1x -timeout 30m ./k8s/
func BenchmarkPerNode(b *testing.B) {
	nodes := envInt("PIPEBENCH_BENCH_NODES", 1500)
	sample := envInt("PIPEBENCH_BENCH_SAMPLE", 4)
	c := kubetest.Start(b, kubetest.Options{Controllers: []string{"daemonset", "garbagecollector"}, ControllerQPS: 100})
	ctx := context.Background()
	sink, arr := sinktest.HTTP(b)
	ns, name := "scale", "scale-run"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// Rate 1/s per shard for 3 s: a few items each, so that what is
	// measured is the launcher's and the control plane's part.
	scen := fmt.Sprintf(`
name: scale
target: {driver: http, url: %q, connections: 1}
workload: {generator: event, size: 64}
interval: 1s
drain: 2s
phases:
  - {name: a, duration: 3s, rate: %d/s}
`, sink.Endpoint(), nodes)
	reg := suitetest.Registry(b)
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%04d", i+1)
	}
	sampled := map[string]bool{}
	for _, n := range names[:min(sample, nodes)] {
		sampled[n] = true
	}
	// The stand-ins' client: the shards' service account's token.
	var (
		saClient kubernetes.Interface
		saCalls  *countingTransport
		saOnce   sync.Once
		saErr    error
	)
	standinClient := func() (kubernetes.Interface, error) {
		saOnce.Do(func() {
			tr, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{}, metav1.CreateOptions{})
			if err != nil {
				saErr = err
				return
			}
			cfg := &rest.Config{Host: c.Config.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			saClient, saCalls = counted(cfg, 2000)
		})
		return saClient, saErr
	}
	var (
		mu       sync.Mutex
		learned  []time.Time
		failed   atomic.Int64
		tmplOnce sync.Once
		tmpl     []byte
		tmplErr  error
	)
	logs := filepath.Join(b.TempDir(), "standins.log")
	logf, _ := os.Create(logs)
	defer logf.Close()
	kl := c.StartKubeletWith(b, kubetest.KubeletOptions{
		Nodes: names,
		Command: func(_ *corev1.Pod, argv, env []string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(env, envTestPod+"="+strings.Join(argv[1:], " "), envTestProgram+"="+argv[0])
			return cmd
		},
		Standin: func(pod *corev1.Pod, ip string) (func() bool, func()) {
			if sampled[pod.Spec.NodeName] {
				return nil, nil
			}
			client, err := standinClient()
			if err != nil {
				b.Errorf("the stand-ins' token: %v", err)
				return nil, nil
			}
			var ready atomic.Bool
			wctx, cancel := context.WithCancel(ctx)
			w := kpod.Worker{Client: podClient(client), Namespace: ns, Run: name, Pod: pod.Name, Node: pod.Spec.NodeName, Log: io.Discard,
				Ready: func(kpod.Shard) (func(), error) { ready.Store(true); return func() {}, nil }}
			w.Check = func(s kpod.Shard) error {
				_, err := kpod.CompilePlan(reg, s.File, s.Scenario, s.Duration)
				return err
			}
			w.Exec = func(ctx context.Context, s kpod.Shard, start time.Time, progress func(Progress)) ([]byte, error) {
				mu.Lock()
				learned = append(learned, time.Now())
				mu.Unlock()
				plan, err := s.Plan(reg, start)
				if err != nil {
					return nil, err
				}
				// The first played shard runs its slice for real; the
				// others record what it recorded, under their own slice.
				tmplOnce.Do(func() {
					out := execute.Run(ctx, plan, execute.Params{Registry: reg, ToolVersion: "bench", Keep: execute.Keep{NoStore: true, Quiet: true},
						Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Progress: func(pr runner.Progress) { progress(kpod.ProgressOf(pr)) }})
					if out.Result == nil {
						tmplErr = fmt.Errorf("the played shards' run: %v", out.Err)
						return
					}
					tmpl, tmplErr = json.Marshal(out.Result)
				})
				if tmplErr != nil {
					return nil, tmplErr
				}
				var res pipebench.Result
				if err := json.Unmarshal(tmpl, &res); err != nil {
					return nil, err
				}
				res.Plan = plan.Redacted()
				res.Manifest.RunID += fmt.Sprintf("-%d", s.Index)
				sent, _ := res.Total.Get("sent")
				progress(Progress{Sent: uint64(sent), Final: true})
				return json.Marshal(&res)
			}
			go func() {
				if err := w.Main(wctx); err != nil && wctx.Err() == nil {
					failed.Add(1)
					fmt.Fprintf(logf, "%s: %v\n", pod.Name, err)
				}
			}()
			return ready.Load, cancel
		},
	})
	_ = kl
	b.ResetTimer()
	spec, _ := json.Marshal(launchSpec{Kubeconfig: c.Kubeconfig, Namespace: ns, Name: name, Scenario: scen, Lead: 15 * time.Second, ReadyTimeout: 10 * time.Minute})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envTestLaunch+"="+string(spec))
	launchLog := filepath.Join(b.TempDir(), "launcher.log")
	lf, _ := os.Create(launchLog)
	cmd.Stderr = lf
	outb, err := cmd.Output()
	lf.Close()
	b.StopTimer()
	var f launchFigures
	if jerr := json.Unmarshal(outb, &f); jerr != nil || err != nil || f.Err != "" {
		tail, _ := os.ReadFile(launchLog)
		standins, _ := os.ReadFile(logs)
		b.Fatalf("launcher: %v %v %s\n%s\nstand-ins:\n%s", err, jerr, f.Err, lastLinesOf(string(tail), 30), lastLinesOf(string(standins), 10))
	}
	mu.Lock()
	sort.Slice(learned, func(i, j int) bool { return learned[i].Before(learned[j]) })
	var spread, lastBefore time.Duration
	if len(learned) > 0 {
		spread = learned[len(learned)-1].Sub(learned[0])
		lastBefore = f.Start.Sub(learned[len(learned)-1])
	}
	mu.Unlock()
	var calls []string
	var total int64
	for k, v := range f.Calls {
		calls = append(calls, fmt.Sprintf("%s %d", k, v))
		total += v
	}
	sort.Strings(calls)
	var saTotal int64
	if saCalls != nil {
		saCalls.mu.Lock()
		for _, v := range saCalls.calls {
			saTotal += v
		}
		saCalls.mu.Unlock()
	}
	b.ReportMetric(f.ApplyToReady.Seconds(), "s-apply-to-ready")
	b.ReportMetric(spread.Seconds(), "s-barrier-spread")
	b.ReportMetric(f.Collect.Seconds(), "s-collect")
	b.ReportMetric(f.Merge.Seconds(), "s-merge")
	b.ReportMetric(float64(total), "launcher-api-calls")
	b.ReportMetric(float64(f.MaxRSSKiB)/1024, "launcher-MiB")
	fmt.Printf(`per-node run over %d nodes (%d pods run as processes, %d played in this process), %d shards merged, status %s
  sent %.0f by the merged Result (the played shards' Results copies of one real run); %d arrived at the sink from the shards that ran
  apply to every pod ready   %6.1f s
  start barrier              the %d played shards learned the start time within %.2f s of each other, the last %.1f s before it (lead 15 s)
  collecting %d Results      %6.1f s after the last shard was done
  merging them               %6.2f s
  launcher total             %6.1f s, peak RSS %.0f MiB, heap after the merge %.0f MiB
  launcher API calls         %d in all: %s
  the played shards' calls   %d (%.1f per shard), %d failed
`, nodes, min(sample, nodes), nodes-min(sample, nodes), f.Shards, f.Status, f.Sent, arr.Delivered(),
		f.ApplyToReady.Seconds(), len(learned), spread.Seconds(), lastBefore.Seconds(), f.Shards, f.Collect.Seconds(), f.Merge.Seconds(),
		f.Total.Seconds(), float64(f.MaxRSSKiB)/1024, f.HeapAfterMergeMiB, total, strings.Join(calls, ", "),
		saTotal, float64(saTotal)/float64(max(1, nodes-sample)), failed.Load())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func lastLinesOf(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
