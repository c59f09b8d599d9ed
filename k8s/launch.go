package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipebench/pipebench"
)

// Launch tunes a launch's waits.
type Launch struct {
	Client kubernetes.Interface
	// Log receives progress lines; nil: discarded.
	Log io.Writer
	// ReadyTimeout bounds the wait for every pod to be ready (default 5m).
	ReadyTimeout time.Duration
	// Lead is how long after every pod is ready the load starts (default
	// 5 s): the workers must read the start time before it comes.
	Lead time.Duration
	// RunTimeout bounds the wait for the Results after the start (the
	// plan's length plus its drain plus a margin: the caller knows it).
	RunTimeout time.Duration
	// Poll is how often the launcher looks at the pods and the shards'
	// ConfigMaps (default 500 ms).
	Poll time.Duration
	// Keep leaves the run's objects in place after it (for a look at the
	// pods, or when a GitOps tool owns them); Cleanup deletes them later.
	Keep bool
}

// Collected is what a launch brings back: every shard's Result, in shard
// order, and, with an in-cluster sink, the sink's own account (nil when
// there was none or it gave none).
type Collected struct {
	Shards []*pipebench.Result
	Sink   *SinkCounts
}

// ShardFailure is the error of a run whose shard failed.
type ShardFailure struct {
	Shard   int
	Pod     string
	Message string
	Sink    bool // the in-cluster sink failed
	SUT     bool // the in-cluster system under test failed
}

func (e *ShardFailure) Error() string {
	where := fmt.Sprintf("shard %d", e.Shard)
	switch {
	case e.Sink:
		where = "the in-cluster sink"
	case e.SUT:
		where = "the in-cluster system under test"
	case e.Shard == 0:
		where = "a worker"
	}
	if e.Pod != "" {
		where += " (pod " + e.Pod + ")"
	}
	return where + " failed: " + e.Message
}

// Run creates the objects, waits until every pod is ready, releases them
// at one start time, follows them, collects the shards' Results (and the
// in-cluster sink's counts) and deletes what it created, whatever happens
// (a cancelled ctx, like Ctrl-C, included), unless Keep.
func (l Launch) Run(ctx context.Context, o Options) (col *Collected, err error) {
	l.defaults()
	obj, err := Build(o)
	if err != nil {
		return nil, err
	}
	// Whatever happens from here on, what was created goes.
	defer func() {
		if cerr := l.cleanup(o.Namespace, o.Name); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if err := l.create(ctx, obj); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%d shard(s)", o.N())
	if o.Sink != nil {
		what += " and the in-cluster sink " + SinkName(o.Name)
	}
	fmt.Fprintf(l.Log, "k8s: created %s/%s: %s\n", o.Namespace, o.Name, what)
	return l.drive(ctx, o)
}

// Collect does the launcher's part for a run whose objects were applied
// from `pipebench k8s manifests` (by kubectl or a GitOps tool): it
// releases the pods at a start time if no start time was written yet
// (once every pod is ready), follows them, collects the Results and the
// in-cluster sink's counts, and deletes the run's objects unless Keep.
func (l Launch) Collect(ctx context.Context, ns, name string) (col *Collected, err error) {
	l.defaults()
	run, err := l.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, pipebench.UsageError(fmt.Sprintf("no run %s in namespace %s (no ConfigMap %s)", name, ns, name),
			"give the --name the manifests were made with, and its --namespace", nil)
	}
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", ns, name, err)
	}
	if run.Labels[LabelRun] != name {
		return nil, pipebench.UsageError(fmt.Sprintf("ConfigMap %s/%s is not a pipebench run", ns, name), "give the name of a run made by pipebench k8s manifests", nil)
	}
	o := Options{Name: name, Namespace: ns}
	n, err := strconv.Atoi(run.Data[KeyShards])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("ConfigMap %s: shards %q is not a count", name, run.Data[KeyShards])
	}
	o.Shards = n
	if nodes := strings.TrimSpace(run.Data[KeyNodes]); nodes != "" {
		o.PerNode = true
		for _, l := range strings.Split(nodes, "\n") {
			if node, _, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
				o.Nodes = append(o.Nodes, node)
			}
		}
	}
	if _, err := l.Client.CoreV1().Services(ns).Get(ctx, SinkName(name), metav1.GetOptions{}); err == nil {
		o.Sink = &SinkSpec{}
	}
	if _, err := l.Client.CoreV1().Services(ns).Get(ctx, SUTName(name), metav1.GetOptions{}); err == nil {
		o.SUT = &SUTSpec{}
	}
	defer func() {
		if cerr := l.cleanup(ns, name); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	return l.drive(ctx, o)
}

func (l *Launch) defaults() {
	if l.ReadyTimeout <= 0 {
		l.ReadyTimeout = 5 * time.Minute
	}
	if l.Lead <= 0 {
		l.Lead = 5 * time.Second
	}
	if l.RunTimeout <= 0 {
		l.RunTimeout = time.Hour
	}
	if l.Poll <= 0 {
		l.Poll = 500 * time.Millisecond
	}
	if l.Log == nil {
		l.Log = io.Discard
	}
}

// cleanup deletes the run's objects, unless Keep.
func (l Launch) cleanup(ns, name string) error {
	if l.Keep {
		fmt.Fprintf(l.Log, "k8s: kept the objects of %s/%s (--keep): delete them with kubectl -n %s delete all,configmaps,serviceaccounts,roles,rolebindings -l %s=%s\n",
			ns, name, ns, LabelRun, name)
		return nil
	}
	return l.Cleanup(ns, name)
}

// drive releases the pods (unless a start time was written already),
// follows them and collects what they measured.
func (l Launch) drive(ctx context.Context, o Options) (*Collected, error) {
	cms := l.Client.CoreV1().ConfigMaps(o.Namespace)
	run, err := cms.Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s: %w", o.Name, err)
	}
	var start time.Time
	if s := run.Data[KeyStartAt]; s != "" {
		if start, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: start-at %q is not a moment: %w", o.Name, s, err)
		}
		fmt.Fprintf(l.Log, "k8s: released already; the load started at %s\n", start.Format(time.RFC3339Nano))
	} else {
		if err := l.waitReady(ctx, o); err != nil {
			return nil, err
		}
		start = time.Now().Add(l.Lead).UTC()
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, KeyStartAt, start.Format(time.RFC3339Nano))
		if _, err := cms.Patch(ctx, o.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("write the start time into ConfigMap %s: %w", o.Name, err)
		}
		fmt.Fprintf(l.Log, "k8s: every pod is ready; the load starts at %s\n", start.Format(time.RFC3339Nano))
	}
	results, err := l.follow(ctx, o, start)
	if err != nil {
		return nil, err
	}
	col := &Collected{Shards: results}
	if o.Sink != nil {
		// The shards' Results already hold what the sink received (the
		// feed); its own account is the check that nothing went astray.
		counts, err := l.endSink(ctx, o.Namespace, o.Name)
		if err != nil {
			fmt.Fprintf(l.Log, "k8s: warning: %v\n", err)
		} else {
			col.Sink = counts
		}
	}
	return col, nil
}

func (l Launch) create(ctx context.Context, obj *Objects) error {
	c := l.Client
	ns := obj.ConfigMap.Namespace
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, obj.ServiceAccount, metav1.CreateOptions{}); err != nil {
		return createErr("ServiceAccount", obj.ServiceAccount.Name, err)
	}
	if _, err := c.RbacV1().Roles(ns).Create(ctx, obj.Role, metav1.CreateOptions{}); err != nil {
		return createErr("Role", obj.Role.Name, err)
	}
	if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, obj.RoleBinding, metav1.CreateOptions{}); err != nil {
		return createErr("RoleBinding", obj.RoleBinding.Name, err)
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, obj.ConfigMap, metav1.CreateOptions{}); err != nil {
		return createErr("ConfigMap", obj.ConfigMap.Name, err)
	}
	if obj.Service != nil {
		if _, err := c.CoreV1().Services(ns).Create(ctx, obj.Service, metav1.CreateOptions{}); err != nil {
			return createErr("Service", obj.Service.Name, err)
		}
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, obj.Deployment, metav1.CreateOptions{}); err != nil {
			return createErr("Deployment", obj.Deployment.Name, err)
		}
	}
	if obj.SUTService != nil {
		if _, err := c.CoreV1().Services(ns).Create(ctx, obj.SUTService, metav1.CreateOptions{}); err != nil {
			return createErr("Service", obj.SUTService.Name, err)
		}
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, obj.SUTDeployment, metav1.CreateOptions{}); err != nil {
			return createErr("Deployment", obj.SUTDeployment.Name, err)
		}
	}
	if obj.Job != nil {
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, obj.Job, metav1.CreateOptions{}); err != nil {
			return createErr("Job", obj.Job.Name, err)
		}
	}
	if obj.DaemonSet != nil {
		if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, obj.DaemonSet, metav1.CreateOptions{}); err != nil {
			return createErr("DaemonSet", obj.DaemonSet.Name, err)
		}
	}
	return nil
}

func createErr(kind, name string, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return pipebench.UsageError(fmt.Sprintf("%s %s already exists", kind, name),
			"another run uses this name: give another --name, or delete the old run's objects (label "+LabelRun+"="+name+")", nil)
	}
	return fmt.Errorf("create %s %s: %w", kind, name, err)
}

func (l Launch) pods(ctx context.Context, o Options) ([]corev1.Pod, error) {
	list, err := l.Client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + o.Name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitReady waits until N pods are Ready; a pod that failed ends the wait.
func (l Launch) waitReady(ctx context.Context, o Options) error {
	deadline := time.Now().Add(l.ReadyTimeout)
	last := ""
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	for {
		pods, err := l.pods(ctx, o)
		if err == nil {
			ready := 0
			for i := range pods {
				p := &pods[i]
				if p.DeletionTimestamp != nil {
					continue
				}
				if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
					if f := l.failedShard(ctx, o); f != nil {
						return f
					}
					return &ShardFailure{Pod: p.Name, Message: "ended before the start: " + podMessage(p)}
				}
				if isReady(p) {
					ready++
				}
			}
			// A worker that could not compile its shard says so in its
			// ConfigMap before its pod ends.
			if f := l.failedShard(ctx, o); f != nil {
				return f
			}
			if line := fmt.Sprintf("k8s: %d of %d pods ready", ready, o.pods()); line != last {
				fmt.Fprintln(l.Log, line)
				last = line
			}
			if ready >= o.pods() {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not every pod was ready within %s (%s): see kubectl -n %s describe pods -l %s=%s",
				l.ReadyTimeout, strings.TrimPrefix(last, "k8s: "), o.Namespace, LabelRun, o.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// failedShard returns the failure a shard's ConfigMap reports, if any.
func (l Launch) failedShard(ctx context.Context, o Options) *ShardFailure {
	list, err := l.Client.CoreV1().ConfigMaps(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + o.Name + "," + LabelShard})
	if err != nil {
		return nil
	}
	for _, cm := range list.Items {
		if cm.Data[KeyState] == StateFailed {
			idx, _ := strconv.Atoi(cm.Labels[LabelShard])
			return &ShardFailure{Shard: idx, Pod: cm.Annotations["pipebench.dev/pod"], Message: cm.Data[KeyMessage]}
		}
	}
	if o.Sink != nil {
		if cm, err := l.Client.CoreV1().ConfigMaps(o.Namespace).Get(ctx, SinkName(o.Name), metav1.GetOptions{}); err == nil && cm.Data[KeyState] == StateFailed {
			return &ShardFailure{Sink: true, Pod: cm.Annotations["pipebench.dev/pod"], Message: cm.Data[KeyMessage]}
		}
	}
	if o.SUT != nil {
		if cm, err := l.Client.CoreV1().ConfigMaps(o.Namespace).Get(ctx, SUTName(o.Name), metav1.GetOptions{}); err == nil && cm.Data[KeyState] == StateFailed {
			return &ShardFailure{SUT: true, Pod: cm.Annotations["pipebench.dev/pod"], Message: cm.Data[KeyMessage]}
		}
	}
	return nil
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podMessage(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			msg := fmt.Sprintf("exit %d (%s)", t.ExitCode, t.Reason)
			if m := strings.TrimSpace(t.Message); m != "" {
				msg += ": " + m
			}
			return msg
		}
	}
	if p.Status.Message != "" {
		return p.Status.Message
	}
	return string(p.Status.Phase)
}

// follow waits for every shard's Result, printing each shard's progress.
func (l Launch) follow(ctx context.Context, o Options, start time.Time) ([]*pipebench.Result, error) {
	n := o.N()
	deadline := start.Add(l.RunTimeout)
	cms := l.Client.CoreV1().ConfigMaps(o.Namespace)
	seen := map[int]string{}
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	for {
		list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + o.Name + "," + LabelShard})
		if err == nil {
			byShard := map[int]*corev1.ConfigMap{}
			for i := range list.Items {
				cm := &list.Items[i]
				if cm.Labels[LabelPart] != "" {
					continue
				}
				idx, err := strconv.Atoi(cm.Labels[LabelShard])
				if err != nil || idx < 1 || idx > n {
					continue
				}
				byShard[idx] = cm
			}
			done := 0
			for idx := 1; idx <= n; idx++ {
				cm := byShard[idx]
				if cm == nil {
					continue
				}
				state := cm.Data[KeyState]
				line := state
				if s := cm.Data[KeySent]; s != "" {
					line += ", sent " + s
				}
				if seen[idx] != line {
					seen[idx] = line
					fmt.Fprintf(l.Log, "k8s: shard %d/%d: %s\n", idx, n, line)
				}
				switch state {
				case StateFailed:
					return nil, &ShardFailure{Shard: idx, Message: cm.Data[KeyMessage]}
				case StateDone:
					done++
				}
			}
			if done == n {
				return l.collect(ctx, o, byShard)
			}
		}
		// A pod that failed without saying so in its ConfigMap (killed,
		// evicted, a crash) ends the run too.
		if pods, err := l.pods(ctx, o); err == nil {
			for i := range pods {
				if p := &pods[i]; p.Status.Phase == corev1.PodFailed {
					if f := l.failedShard(ctx, o); f != nil {
						return nil, f
					}
					return nil, &ShardFailure{Pod: p.Name, Message: podMessage(p)}
				}
			}
		}
		if time.Now().After(deadline) {
			var missing []string
			for idx := 1; idx <= n; idx++ {
				if seen[idx] == "" || !strings.HasPrefix(seen[idx], StateDone) {
					missing = append(missing, strconv.Itoa(idx))
				}
			}
			return nil, fmt.Errorf("shards %s gave no Result within %s of the start", strings.Join(missing, ", "), l.RunTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// collect reads every shard's Result.
func (l Launch) collect(ctx context.Context, o Options, byShard map[int]*corev1.ConfigMap) ([]*pipebench.Result, error) {
	out := make([]*pipebench.Result, 0, len(byShard))
	idxs := make([]int, 0, len(byShard))
	for i := range byShard {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		r, err := ReadResult(ctx, l.Client, o.Namespace, o.Name, byShard[i])
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		out = append(out, r)
	}
	fmt.Fprintf(l.Log, "k8s: collected %d shard Results\n", len(out))
	return out, nil
}

// Cleanup deletes every object of the run (by its label), waits up to 30 s
// for its pods to go, and says what it could not delete. It uses its own
// context: it runs after a Ctrl-C too.
func (l Launch) Cleanup(ns, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c := l.Client
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + name}
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	keep := func(kind string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", kind, name, err))
		}
	}
	keep("Job", c.BatchV1().Jobs(ns).Delete(ctx, name, del))
	keep("DaemonSet", c.AppsV1().DaemonSets(ns).Delete(ctx, name, del))
	keep("Deployment", c.AppsV1().Deployments(ns).Delete(ctx, SinkName(name), del))
	keep("Deployment", c.AppsV1().Deployments(ns).Delete(ctx, SUTName(name), del))
	// The Deployment's ReplicaSet carries the run's label (its pod
	// template's): deleted here, it makes no new pod meanwhile.
	keep("ReplicaSets", c.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, del, sel))
	keep("Service", c.CoreV1().Services(ns).Delete(ctx, SinkName(name), metav1.DeleteOptions{}))
	keep("Service", c.CoreV1().Services(ns).Delete(ctx, SUTName(name), metav1.DeleteOptions{}))
	// The pods go with their owner; deleting them here too does not wait
	// for the garbage collector.
	keep("pods", c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	keep("ConfigMaps", c.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	keep("RoleBinding", c.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	keep("Role", c.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	keep("ServiceAccount", c.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	for {
		list, err := c.CoreV1().Pods(ns).List(ctx, sel)
		if err == nil && len(list.Items) == 0 {
			break
		}
		if ctx.Err() != nil {
			left := 0
			if list != nil {
				left = len(list.Items)
			}
			errs = append(errs, fmt.Errorf("%d pod(s) of run %s still terminating: check kubectl -n %s get pods -l %s=%s", left, name, ns, LabelRun, name))
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleanup: %w", errors.Join(errs...))
	}
	fmt.Fprintf(l.logw(), "k8s: deleted the objects of %s/%s\n", ns, name)
	return nil
}

func (l Launch) logw() io.Writer {
	if l.Log == nil {
		return io.Discard
	}
	return l.Log
}
