package kubetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// Kubelet plays the scheduler's and the kubelets' parts for a test, and
// nothing else. What it simulates, exactly:
//
//   - Nodes: it creates one Node object per name, with a Ready condition,
//     and lifts the not-ready taint the API server puts on new nodes (the
//     node lifecycle controller's part). No machine stands behind them.
//   - Scheduling: a pod without spec.nodeName is bound (the Binding
//     subresource, as kube-scheduler does) to the node its node affinity
//     names (DaemonSet pods), else to the next of the nodes, in turn,
//     whose labels match the pod's nodeSelector and whose NoSchedule and
//     NoExecute taints the pod tolerates (kube-scheduler's filters for
//     those two fields; no other filter, no scoring, no resources). A pod
//     no node fits stays Pending.
//   - Containers: the first container of a pod bound to one of its nodes
//     runs as a local process made by the test's Command function from the
//     container's command and args, with the container's environment
//     (values and the downward API fields metadata.name,
//     metadata.namespace, spec.nodeName, metadata.annotations[...],
//     metadata.labels[...] resolved as the kubelet does), TMPDIR set to a
//     directory of the pod's own (its private /tmp), and KUBECONFIG set to a
//     kubeconfig holding a token the API server issued for the pod's
//     service account through the TokenRequest API (a real kubelet mounts
//     such a token; the process reads it through KUBECONFIG instead of the
//     in-cluster files). Images are not pulled: the image name is ignored.
//   - Pod addresses: each pod gets an address of its own on the loopback
//     network, 127.A.B.N (A and B random per Kubelet, N counting up), as
//     its status.podIP (and POD_IP-style fieldRefs to status.podIP);
//     status.hostIP is 127.0.0.1. A process that listens on its pod's
//     address so gets a port space of its own, as in a pod's network
//     namespace; nothing stops it listening elsewhere.
//   - Service names: an environment value that is exactly a Service's DNS
//     name, SVC.NS.svc or SVC.NS.svc.cluster.local, is replaced by the
//     address of a Ready pod the Service's selector picks, which is what
//     cluster DNS and kube-proxy together deliver to one client; the pod
//     stays Pending until such a pod exists. Only whole values are
//     resolved: no DNS server runs, and no other name resolves. Ports are
//     not translated: the Service's port must equal its target port.
//   - Probes: an exec readiness probe runs the same way, every 200 ms; its
//     exit code sets the pod's Ready condition. Without a probe the pod is
//     Ready once started.
//   - Status: Pending → Running (Ready when the probe passes) → Succeeded
//     or Failed with the process's exit code, written through the pod's
//     status subresource. Restarts are not simulated: a process that ends
//     leaves its pod Succeeded or Failed, whatever its restart policy.
//   - Deletion: a pod marked for deletion gets SIGTERM, then SIGKILL after
//     its grace period (at most 10 s), and is then removed with grace 0 as
//     the kubelet confirms a deletion.
//   - Stand-ins (KubeletOptions.Standin, for runs of many pods): a pod the
//     test plays in its own process gets no process and no token; it is
//     bound, given an address and set Running as above, and Ready once
//     the test says its container is; its deletion ends it at once. Only
//     its status is simulated, as a kubelet would write it.
//
// The Kubelet follows the pods through one watch (an informer), not a
// list every round, and acts on up to 16 pods at once.
type Kubelet struct {
	c       *Cluster
	nodes   []string
	ourSet  map[string]bool
	command func(pod *corev1.Pod, argv, env []string) *exec.Cmd
	standin func(pod *corev1.Pod, ip string) (ready func() bool, stop func())
	dir     string
	lister  corelisters.PodLister
	busy    map[string]bool // pods with an action under way, guarded by mu
	sem     chan struct{}

	mu     sync.Mutex
	pods   map[string]*podProc // by namespace/name/uid
	next   int
	ipBase [2]byte
	nextIP int
	ips    map[string]string
	stop   context.CancelFunc
	done   chan struct{}
}

type podProc struct {
	cmd         *exec.Cmd // nil for a stand-in
	stop        func()    // a stand-in's end
	exited      chan struct{}
	code        int
	terminating bool // guarded by Kubelet.mu
}

// StartKubelet creates the nodes and starts playing the kubelet until the
// test ends. command makes the process of a container: argv is its command
// and args, env its environment.
func (c *Cluster) StartKubelet(t testing.TB, nodes []string, command func(pod *corev1.Pod, argv, env []string) *exec.Cmd) *Kubelet {
	t.Helper()
	return c.StartKubeletWith(t, KubeletOptions{Nodes: nodes, Command: command})
}

// KubeletOptions configure StartKubeletWith.
type KubeletOptions struct {
	// Nodes are the Node objects created, Ready, untainted.
	Nodes []string
	// Command makes the process of a pod's container (see StartKubelet).
	Command func(pod *corev1.Pod, argv, env []string) *exec.Cmd
	// Standin, if set, is asked for every pod bound to a node before its
	// process is made: when it returns a ready func, the pod is a
	// stand-in the test plays itself (see Kubelet), Ready once ready()
	// says so; stop is called when the pod is deleted. It returns nil for
	// a pod the Kubelet runs as a process.
	Standin func(pod *corev1.Pod, ip string) (ready func() bool, stop func())
}

// StartKubeletWith is StartKubelet with options.
func (c *Cluster) StartKubeletWith(t testing.TB, o KubeletOptions) *Kubelet {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := &Kubelet{c: c, nodes: o.Nodes, ourSet: map[string]bool{}, command: o.Command, standin: o.Standin, dir: t.TempDir(),
		pods: map[string]*podProc{}, busy: map[string]bool{}, sem: make(chan struct{}, 16), stop: cancel, done: make(chan struct{})}
	rand.Read(k.ipBase[:])
	k.ipBase[0] = 1 + k.ipBase[0]%254 // never 127.0.x.x, where the cluster itself listens
	var wg sync.WaitGroup
	errs := make(chan error, len(o.Nodes))
	for _, n := range o.Nodes {
		k.ourSet[n] = true
		wg.Add(1)
		k.sem <- struct{}{}
		go func() {
			defer func() { <-k.sem; wg.Done() }()
			if err := c.createNode(ctx, n); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		cancel()
		t.Fatalf("kubetest: %v", err)
	}
	f := informers.NewSharedInformerFactory(c.Client, 0)
	k.lister = f.Core().V1().Pods().Lister()
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		t.Fatalf("kubetest: the pods' informer did not sync")
	}
	go func() { <-k.done; f.Shutdown() }()
	go k.loop(ctx)
	t.Cleanup(k.Stop)
	return k
}

// createNode creates a Ready node with no taint.
func (c *Cluster) createNode(ctx context.Context, n string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}
	created, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", n, err)
	}
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", n, err)
	}
	// The API server taints a new node not-ready; the node lifecycle
	// controller (not run here) lifts the taint once the node is Ready.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var keep []corev1.Taint
		for _, tn := range cur.Spec.Taints {
			if tn.Key != corev1.TaintNodeNotReady {
				keep = append(keep, tn)
			}
		}
		cur.Spec.Taints = keep
		_, err = c.Client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s taints: %w", n, err)
	}
	return nil
}

// Stop ends the kubelet and kills the processes still running.
func (k *Kubelet) Stop() {
	k.stop()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pods {
		select {
		case <-p.exited:
		default:
			if p.cmd == nil {
				p.stop()
				continue
			}
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
}

func (k *Kubelet) loop(ctx context.Context) {
	defer close(k.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		k.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (k *Kubelet) ours(node string) bool { return k.ourSet[node] }

// act runs f for the pod key on one of up to 16 goroutines, unless an
// action on that pod is under way.
func (k *Kubelet) act(key string, f func()) {
	k.mu.Lock()
	if k.busy[key] {
		k.mu.Unlock()
		return
	}
	k.busy[key] = true
	k.mu.Unlock()
	k.sem <- struct{}{}
	go func() {
		defer func() {
			<-k.sem
			k.mu.Lock()
			delete(k.busy, key)
			k.mu.Unlock()
		}()
		f()
	}()
}

// sync does one round over every pod, as the watch last told them.
func (k *Kubelet) sync(ctx context.Context) {
	pods, err := k.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		key := pod.Namespace + "/" + pod.Name + "/" + string(pod.UID)
		k.mu.Lock()
		p := k.pods[key]
		k.mu.Unlock()
		confirm := func(pod *corev1.Pod) {
			_ = k.c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		}
		switch {
		case pod.DeletionTimestamp != nil:
			if pod.Spec.NodeName == "" || !k.ours(pod.Spec.NodeName) {
				continue
			}
			if p == nil {
				k.act(key, func() { confirm(pod) })
				continue
			}
			k.mu.Lock()
			started := p.terminating
			p.terminating = true
			k.mu.Unlock()
			if !started {
				go func(pod *corev1.Pod) {
					k.terminate(p, pod)
					confirm(pod)
				}(pod.DeepCopy())
			} else {
				select {
				case <-p.exited:
					k.act(key, func() { confirm(pod) })
				default:
				}
			}
		case pod.Spec.NodeName == "":
			pod := pod.DeepCopy()
			k.act(key, func() { k.bind(ctx, pod) })
		case !k.ours(pod.Spec.NodeName):
		case p == nil && pod.Status.Phase == "" || p == nil && pod.Status.Phase == corev1.PodPending:
			pod := pod.DeepCopy()
			k.act(key, func() { k.run(ctx, key, pod) })
		}
	}
}

func (k *Kubelet) bind(ctx context.Context, pod *corev1.Pod) {
	node := affinityNode(pod)
	if node == "" {
		k.mu.Lock()
		for range k.nodes {
			n := k.nodes[k.next%len(k.nodes)]
			k.next++
			if k.fits(ctx, pod, n) {
				node = n
				break
			}
		}
		k.mu.Unlock()
		if node == "" {
			return
		}
	} else if !k.ours(node) {
		return
	}
	_ = k.c.Client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}

// fits tells whether the pod may go to node: its nodeSelector matches the
// node's labels, and it tolerates the node's NoSchedule and NoExecute
// taints.
func (k *Kubelet) fits(ctx context.Context, pod *corev1.Pod, node string) bool {
	n, err := k.c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	if !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[j].ToleratesTaint(klog.Background(), t, false) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// affinityNode is the node a DaemonSet pod's required node affinity names.
func affinityNode(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// run starts the pod's first container and follows it.
func (k *Kubelet) run(ctx context.Context, key string, pod *corev1.Pod) {
	if len(pod.Spec.Containers) == 0 {
		return
	}
	ctr := pod.Spec.Containers[0]
	dir := filepath.Join(k.dir, pod.Namespace+"-"+pod.Name+"-"+string(pod.UID)[:8])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		k.fail(ctx, pod, err.Error())
		return
	}
	ip := k.podIP(key)
	if k.standin != nil {
		if ready, stop := k.standin(pod, ip); ready != nil {
			k.runStandin(ctx, key, pod, ctr, ip, ready, stop)
			return
		}
	}
	env, err := k.env(ctx, pod, ctr, dir, ip)
	if errors.Is(err, errNotYet) {
		return // the next round tries again
	}
	if err != nil {
		k.fail(ctx, pod, err.Error())
		return
	}
	argv := append(append([]string{}, ctr.Command...), ctr.Args...)
	cmd := k.command(pod, argv, env)
	log, err := os.Create(filepath.Join(dir, "container.log"))
	if err != nil {
		k.fail(ctx, pod, err.Error())
		return
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = childproc.DieWithParent()
	if err := cmd.Start(); err != nil {
		log.Close()
		k.fail(ctx, pod, "start: "+err.Error())
		return
	}
	p := &podProc{cmd: cmd, exited: make(chan struct{})}
	k.mu.Lock()
	k.pods[key] = p
	k.mu.Unlock()
	go func() {
		err := cmd.Wait()
		log.Close()
		p.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
			if p.code < 0 {
				p.code = 137
			}
		} else if err != nil {
			p.code = 128
		}
		close(p.exited)
	}()
	k.setRunning(ctx, pod, ctr, ip)
	go k.follow(ctx, pod, ctr, p, env, filepath.Join(dir, "container.log"))
}

// setRunning writes the status of a pod whose container started, with
// its address.
func (k *Kubelet) setRunning(ctx context.Context, pod *corev1.Pod, ctr corev1.Container, ip string) {
	now := metav1.Now()
	k.status(ctx, pod, func(s *corev1.PodStatus) {
		s.Phase, s.StartTime, s.HostIP, s.PodIP = corev1.PodRunning, &now, "127.0.0.1", ip
		s.PodIPs = []corev1.PodIP{{IP: ip}}
		s.Conditions = conditions(false)
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: ctr.Name, Image: ctr.Image, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	})
}

// runStandin plays the status of a pod the test runs itself.
func (k *Kubelet) runStandin(ctx context.Context, key string, pod *corev1.Pod, ctr corev1.Container, ip string, ready func() bool, stop func()) {
	p := &podProc{exited: make(chan struct{})}
	var once sync.Once
	p.stop = func() { once.Do(func() { stop(); close(p.exited) }) }
	k.mu.Lock()
	k.pods[key] = p
	k.mu.Unlock()
	k.setRunning(ctx, pod, ctr, ip)
	go k.awaitReady(ctx, pod, p, ready)
}

// awaitReady reports the pod ready once ready holds, asking every 200 ms,
// unless ctx ends or the pod's process exits first.
func (k *Kubelet) awaitReady(ctx context.Context, pod *corev1.Pod, p *podProc, ready func() bool) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.exited:
			return
		case <-tick.C:
			if ready() {
				k.status(ctx, pod, func(s *corev1.PodStatus) { setReady(s, true) })
				return
			}
		}
	}
}

// follow runs the readiness probe until the process ends, then reports how
// it ended.
func (k *Kubelet) follow(ctx context.Context, pod *corev1.Pod, ctr corev1.Container, p *podProc, env []string, logPath string) {
	if probe := ctr.ReadinessProbe; probe == nil || probe.Exec == nil {
		k.status(ctx, pod, func(s *corev1.PodStatus) { setReady(s, true) })
	} else {
		k.awaitReady(ctx, pod, p, func() bool { return k.command(pod, probe.Exec.Command, env).Run() == nil })
	}
	select {
	case <-ctx.Done():
		return
	case <-p.exited:
	}
	phase, reason := corev1.PodSucceeded, "Completed"
	if p.code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	k.status(ctx, pod, func(s *corev1.PodStatus) {
		s.Phase = phase
		setReady(s, false)
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: ctr.Name, Image: ctr.Image, Started: ptr(false),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(p.code), Reason: reason,
				Message: lastLines(logPath, 5), FinishedAt: now}}}}
	})
}

func (k *Kubelet) terminate(p *podProc, pod *corev1.Pod) {
	select {
	case <-p.exited:
		return
	default:
	}
	if p.cmd == nil {
		p.stop()
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	grace := 10 * time.Second
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
		grace = time.Duration(*g) * time.Second
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// env resolves the container's environment as the kubelet does, plus the
// pod's TMPDIR and KUBECONFIG (see Kubelet).
func (k *Kubelet) env(ctx context.Context, pod *corev1.Pod, ctr corev1.Container, dir, ip string) ([]string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := k.c.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %s: %w", sa, err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(kc, k.c.Config.Host, tr.Status.Token, pod.Namespace); err != nil {
		return nil, err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "KUBECONFIG=" + kc, "HOSTNAME=" + pod.Name}
	for _, e := range ctr.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "status.podIP":
				v = ip
			case "status.hostIP":
				v = "127.0.0.1"
			default:
				v = fieldValue(pod, e.ValueFrom.FieldRef.FieldPath)
			}
		}
		if m := serviceName.FindStringSubmatch(v); m != nil {
			addr, err := k.resolve(ctx, m[3], m[1])
			if err != nil {
				return nil, err
			}
			if addr != "" {
				v = addr
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

// errNotYet: a Service the pod's environment names has no Ready pod yet.
var errNotYet = errors.New("not yet")

var serviceName = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.cluster\.local)?$`)

// podIP returns the address of the pod key, the same on every call.
func (k *Kubelet) podIP(key string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ips == nil {
		k.ips = map[string]string{}
	}
	if ip, ok := k.ips[key]; ok {
		return ip
	}
	k.nextIP++
	ip := fmt.Sprintf("127.%d.%d.%d", k.ipBase[0], (int(k.ipBase[1])+k.nextIP/254)%256, 1+k.nextIP%254)
	k.ips[key] = ip
	return ip
}

// resolve returns the address of a Ready pod Service ns/name selects;
// "" when there is no such Service (the name stays as it is), errNotYet
// when it selects no Ready pod yet.
func (k *Kubelet) resolve(ctx context.Context, ns, name string) (string, error) {
	svc, err := k.c.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil || len(svc.Spec.Selector) == 0 {
		return "", errNotYet
	}
	pods, err := k.c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return "", errNotYet
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(p) {
			return p.Status.PodIP, nil
		}
	}
	return "", errNotYet
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func fieldValue(pod *corev1.Pod, path string) string {
	switch {
	case path == "metadata.name":
		return pod.Name
	case path == "metadata.namespace":
		return pod.Namespace
	case path == "metadata.uid":
		return string(pod.UID)
	case path == "spec.nodeName":
		return pod.Spec.NodeName
	case path == "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	case strings.HasPrefix(path, "metadata.annotations['"):
		return pod.Annotations[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.annotations['"), "']")]
	case strings.HasPrefix(path, "metadata.labels['"):
		return pod.Labels[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.labels['"), "']")]
	}
	return ""
}

func (k *Kubelet) fail(ctx context.Context, pod *corev1.Pod, msg string) {
	k.status(ctx, pod, func(s *corev1.PodStatus) {
		s.Phase, s.Message, s.Reason = corev1.PodFailed, msg, "KubeletSimulation"
	})
}

// status changes the pod's status, retrying on conflicts.
func (k *Kubelet) status(ctx context.Context, pod *corev1.Pod, change func(*corev1.PodStatus)) {
	pods := k.c.Client.CoreV1().Pods(pod.Namespace)
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		change(&cur.Status)
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

func conditions(ready bool) []corev1.PodCondition {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	now := metav1.Now()
	return []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: st, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: st, LastTransitionTime: now},
	}
}

func setReady(s *corev1.PodStatus, ready bool) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	if len(s.Conditions) == 0 {
		s.Conditions = conditions(ready)
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == corev1.PodReady || s.Conditions[i].Type == corev1.ContainersReady {
			if s.Conditions[i].Status != st {
				s.Conditions[i].Status, s.Conditions[i].LastTransitionTime = st, metav1.Now()
			}
		}
	}
	for i := range s.ContainerStatuses {
		s.ContainerStatuses[i].Ready = ready
	}
}

// ContainerLog returns the tail of the log of the pod's process, for
// failure messages.
func (k *Kubelet) ContainerLog(pod *corev1.Pod, lines int) string {
	return lastLines(filepath.Join(k.dir, pod.Namespace+"-"+pod.Name+"-"+string(pod.UID)[:8], "container.log"), lines)
}

// Logs returns the tails of every container log, for failure messages.
func (k *Kubelet) Logs(lines int) string {
	var b strings.Builder
	ents, _ := os.ReadDir(k.dir)
	for _, e := range ents {
		fmt.Fprintf(&b, "--- %s\n%s\n", e.Name(), lastLines(filepath.Join(k.dir, e.Name(), "container.log"), lines))
	}
	return b.String()
}

func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

func ptr[T any](v T) *T { return &v }
