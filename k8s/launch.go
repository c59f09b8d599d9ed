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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/k8s/pod"
)

// Launch tunes a launch's waits.
type Launch struct {
	Client kubernetes.Interface
	// Dynamic creates and deletes the PodMonitor (Options.PodMonitor);
	// nil: none.
	Dynamic dynamic.Interface
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
	// Poll is how often the launcher looks at what it watches of the
	// pods and the shards' ConfigMaps (default 500 ms; it costs no API
	// call).
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
	// Timeline is when each step of the launch ended.
	Timeline Timeline
}

// Timeline is when each step of a launch ended (zero: not reached, or
// not this launch's: a start written before Collect).
type Timeline struct {
	Began, Created, Ready, Start, Done, Collected time.Time
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
	began := time.Now()
	obj, err := Build(o)
	if err != nil {
		return nil, err
	}
	// Whatever happens from here on, what was created goes.
	defer func() { err = l.afterCleanup(err, l.cleanup(o.Namespace, o.Name, o.N())) }()
	if err := l.create(ctx, obj); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%d shard(s)", o.N())
	if o.Sink != nil {
		what += " and the in-cluster sink " + SinkName(o.Name)
	}
	fmt.Fprintf(l.Log, "k8s: created %s/%s: %s\n", o.Namespace, o.Name, what)
	created := time.Now()
	col, err = l.drive(ctx, o)
	if col != nil {
		col.Timeline.Began, col.Timeline.Created = began, created
	}
	return col, err
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
	defer func() { err = l.afterCleanup(err, l.cleanup(ns, name, o.N())) }()
	return l.drive(ctx, o)
}

func (l *Launch) defaults() {
	if l.ReadyTimeout <= 0 {
		l.ReadyTimeout = 5 * time.Minute
	}
	if l.Lead <= 0 {
		l.Lead = DefaultLead(0)
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

// afterCleanup is a launch's error once it cleaned up: the launch's own,
// joined with the cleanup's; a cleanup that failed after every Result was
// collected is only a warning (the Results are the run's; what is left
// is said, with how to delete it).
func (l Launch) afterCleanup(err, cerr error) error {
	if cerr == nil {
		return err
	}
	if err == nil {
		fmt.Fprintf(l.Log, "k8s: warning: %v\n", cerr)
		return nil
	}
	return errors.Join(err, cerr)
}

// cleanup deletes the run's objects, unless Keep.
func (l Launch) cleanup(ns, name string, pods int) error {
	if l.Keep {
		fmt.Fprintf(l.Log, "k8s: kept the objects of %s/%s (--keep): delete them with kubectl -n %s delete all,configmaps,serviceaccounts,roles,rolebindings -l %s=%s\n",
			ns, name, ns, LabelRun, name)
		return nil
	}
	return l.cleanupWithin(ns, name, 45*time.Second+time.Duration(pods)*100*time.Millisecond)
}

// drive releases the pods (unless a start time was written already),
// follows them and collects what they measured. It watches the run's pods
// and ConfigMaps (one list and one watch each, through informers) rather
// than reading them every poll: its API calls do not grow with the time
// it waits, only with what changes.
func (l Launch) drive(ctx context.Context, o Options) (*Collected, error) {
	tr, err := l.track(ctx, o)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	cms := l.Client.CoreV1().ConfigMaps(o.Namespace)
	run, err := tr.cms.Get(o.Name)
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s: %w", o.Name, err)
	}
	var start, ready time.Time
	if s := run.Data[KeyStartAt]; s != "" {
		if start, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: start-at %q is not a moment: %w", o.Name, s, err)
		}
		fmt.Fprintf(l.Log, "k8s: released already; the load started at %s\n", start.Format(time.RFC3339Nano))
	} else {
		if err := l.waitReady(ctx, o, tr); err != nil {
			return nil, err
		}
		ready = time.Now()
		start = ready.Add(l.Lead).UTC()
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, KeyStartAt, start.Format(time.RFC3339Nano))
		if _, err := cms.Patch(ctx, o.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("write the start time into ConfigMap %s: %w", o.Name, err)
		}
		fmt.Fprintf(l.Log, "k8s: every pod is ready; the load starts at %s\n", start.Format(time.RFC3339Nano))
	}
	results, done, err := l.follow(ctx, o, tr, start)
	if err != nil {
		return nil, err
	}
	col := &Collected{Shards: results, Timeline: Timeline{Ready: ready, Start: start, Done: done, Collected: time.Now()}}
	// The run ended: the in-cluster sink writes its counts, and the
	// in-cluster sink and system under test end (their Jobs complete).
	patch := fmt.Sprintf(`{"data":{%q:%q}}`, KeyEnded, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := cms.Patch(ctx, o.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		fmt.Fprintf(l.Log, "k8s: warning: could not mark the run ended: %v\n", err)
	} else if o.Sink != nil {
		// The shards' Results already hold what the sink received (the
		// feed); its own account is the check that nothing went astray.
		counts, err := l.endSink(ctx, o, tr)
		if err != nil {
			fmt.Fprintf(l.Log, "k8s: warning: %v\n", err)
		} else {
			col.Sink = counts
		}
	}
	return col, nil
}

// tracker holds the run's pods and ConfigMaps as the API server last
// told them (informers restricted to the run's label).
type tracker struct {
	pods corelisters.PodNamespaceLister
	cms  corelisters.ConfigMapNamespaceLister
	stop func()
}

func (l Launch) track(ctx context.Context, o Options) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactoryWithOptions(l.Client, 0, informers.WithNamespace(o.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = LabelRun + "=" + o.Name }))
	pods := f.Core().V1().Pods()
	cms := f.Core().V1().ConfigMaps()
	pi, ci := pods.Informer(), cms.Informer()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pi.HasSynced, ci.HasSynced) {
		cancel()
		f.Shutdown()
		return nil, fmt.Errorf("watch the pods and ConfigMaps of run %s: %w", o.Name, context.Cause(ctx))
	}
	return &tracker{pods: pods.Lister().Pods(o.Namespace), cms: cms.Lister().ConfigMaps(o.Namespace),
		stop: func() { cancel(); f.Shutdown() }}, nil
}

func (tr *tracker) podList() []*corev1.Pod {
	ps, _ := tr.pods.List(labels.Everything())
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

// shardMaps returns the shards' own ConfigMaps (not their Result parts)
// by shard, 1..n.
func (tr *tracker) shardMaps(n int) map[int]*corev1.ConfigMap {
	list, _ := tr.cms.List(labels.Everything())
	out := map[int]*corev1.ConfigMap{}
	for _, cm := range list {
		if cm.Labels[LabelPart] != "" || cm.Labels[LabelShard] == "" {
			continue
		}
		if idx, err := strconv.Atoi(cm.Labels[LabelShard]); err == nil && idx >= 1 && idx <= n {
			out[idx] = cm
		}
	}
	return out
}

// waitReady waits until N pods are Ready; a pod or component that failed
// ends the wait.
func (l Launch) waitReady(ctx context.Context, o Options, tr *tracker) error {
	deadline := time.Now().Add(l.ReadyTimeout)
	last := ""
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	for {
		ready := 0
		var live []*corev1.Pod
		for _, p := range tr.podList() {
			if p.DeletionTimestamp != nil {
				continue
			}
			live = append(live, p)
			if isReady(p) {
				ready++
			}
		}
		// A worker that could not compile its shard, or a component that
		// could not start, says so in its ConfigMap before its pod ends.
		if f := l.failure(o, tr, live, false); f != nil {
			return f
		}
		if line := fmt.Sprintf("k8s: %d of %d pods ready", ready, o.pods()); line != last {
			fmt.Fprintln(l.Log, line)
			last = line
		}
		if ready >= o.pods() {
			return nil
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

// failure returns what failed, if anything: one of pods that failed (see
// podFailure; started: whether the run had started) or a part whose
// ConfigMap says so. A component's failure (the system under test's, the
// in-cluster sink's) is named before any shard's: the shards load the
// components, so that when one failed the shards may have failed for it,
// and the component's failure is the cause to name.
func (l Launch) failure(o Options, tr *tracker, pods []*corev1.Pod, started bool) *ShardFailure {
	var shard *ShardFailure
	for _, p := range pods {
		f := l.podFailure(o, tr, p, started)
		switch {
		case f == nil:
		case f.SUT || f.Sink:
			return f
		case shard == nil:
			shard = f
		}
	}
	if f := l.failedMap(o, tr); f != nil && (f.SUT || f.Sink || shard == nil) {
		return f
	}
	return shard
}

// failedMap returns the failure a shard's or component's ConfigMap
// reports, if any. A component's (the system under test's, the
// in-cluster sink's) comes first: the shards load it, so that when it
// failed a shard may have failed for it, and the component's is the cause
// to name; shards in the order of their names.
func (l Launch) failedMap(o Options, tr *tracker) *ShardFailure {
	list, _ := tr.cms.List(labels.Everything())
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	var first *ShardFailure
	for _, cm := range list {
		if cm.Data[KeyState] != StateFailed {
			continue
		}
		f := &ShardFailure{Pod: cm.Annotations["pipebench.dev/pod"], Message: cm.Data[KeyMessage]}
		switch {
		case cm.Name == SinkName(o.Name):
			f.Sink = true
			return f
		case cm.Name == SUTName(o.Name):
			f.SUT = true
			return f
		}
		f.Shard, _ = strconv.Atoi(cm.Labels[LabelShard])
		if first == nil {
			first = f
		}
	}
	return first
}

// podFailure returns the failure of a pod that failed, whose container
// restarted (a crash a real kubelet restarts in place), or that ended
// before the start (started false), attributed to the part of the run its
// role label names, never guessed from the state of the ConfigMaps: a
// replacement pod may have reset those meanwhile. The part's own message
// (its ConfigMap's) is preferred to the pod's last lines. nil for a pod
// that is fine.
func (l Launch) podFailure(o Options, tr *tracker, p *corev1.Pod, started bool) *ShardFailure {
	msg := ""
	switch {
	case p.Status.Phase == corev1.PodFailed:
		msg = podMessage(p)
	case p.Status.Phase == corev1.PodSucceeded && !started:
		msg = "ended before the start: " + podMessage(p)
	default:
		for _, s := range p.Status.ContainerStatuses {
			if t := s.LastTerminationState.Terminated; s.RestartCount > 0 && t != nil {
				msg = fmt.Sprintf("restarted %d time(s), last exit %d (%s)", s.RestartCount, t.ExitCode, t.Reason)
				if m := strings.TrimSpace(t.Message); m != "" {
					msg += ": " + m
				}
			}
		}
	}
	if msg == "" {
		return nil
	}
	f := &ShardFailure{Pod: p.Name, Message: msg}
	own := ""
	switch p.Labels[LabelRole] {
	case RoleSink:
		f.Sink, own = true, SinkName(o.Name)
	case RoleSUT:
		f.SUT, own = true, SUTName(o.Name)
	default:
		if s := p.Annotations[batchv1.JobCompletionIndexAnnotation]; s != "" {
			if i, err := strconv.Atoi(s); err == nil {
				f.Shard = i + 1
			}
		} else {
			for i, n := range o.Nodes {
				if n == p.Spec.NodeName {
					f.Shard = i + 1
				}
			}
		}
		if f.Shard > 0 {
			own = ShardName(o.Name, f.Shard)
		}
	}
	if cm, err := tr.cms.Get(own); own != "" && err == nil && cm.Data[KeyState] == StateFailed && cm.Data[KeyMessage] != "" {
		f.Message = cm.Data[KeyMessage]
	}
	return f
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

// follow waits for every shard's Result, printing the run's merged live
// progress.
func (l Launch) follow(ctx context.Context, o Options, tr *tracker, start time.Time) (results []*pipebench.Result, done time.Time, err error) {
	n := o.N()
	deadline := start.Add(l.RunTimeout)
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	last, lastAt := "", time.Time{}
	for {
		byShard := tr.shardMaps(n)
		var sum Progress
		ndone, running := 0, 0
		phases := map[string]bool{}
		for idx := 1; idx <= n; idx++ {
			cm := byShard[idx]
			if cm == nil {
				continue
			}
			switch cm.Data[KeyState] {
			case StateDone:
				ndone++
			case StateRun:
				running++
			}
			p := pod.ReadProgress(cm.Data)
			sum.Sent += p.Sent
			sum.Failed += p.Failed
			if cm.Data[KeyState] == StateRun {
				sum.Rate += p.Rate
				if p.Phase != "" {
					phases[p.Phase] = true
				}
			}
		}
		if ndone == n {
			done = time.Now()
			l.warnLate(byShard)
			fmt.Fprintf(l.Log, "k8s: live: %d/%d shards done, sent %d, failed %d\n", ndone, n, sum.Sent, sum.Failed)
			results, err = l.collect(ctx, o, byShard)
			return results, done, err
		}
		line := fmt.Sprintf("k8s: live: %d/%d shards running, %d done; phase %s; sent %d at %.0f/s, failed %d",
			running, n, ndone, strings.Join(sortedKeys(phases), "+"), sum.Sent, sum.Rate, sum.Failed)
		if line != last && time.Since(lastAt) >= time.Second {
			fmt.Fprintln(l.Log, line)
			last, lastAt = line, time.Now()
		}
		// A part that says it failed in its ConfigMap ends the run, and so
		// does a pod that failed without saying so (killed, evicted, a
		// crash).
		if f := l.failure(o, tr, tr.podList(), true); f != nil {
			return nil, done, f
		}
		if time.Now().After(deadline) {
			var missing []string
			for idx := 1; idx <= n; idx++ {
				if cm := byShard[idx]; cm == nil || cm.Data[KeyState] != StateDone {
					missing = append(missing, strconv.Itoa(idx))
				}
			}
			return nil, done, fmt.Errorf("shards %s gave no Result within %s of the start", strings.Join(missing, ", "), l.RunTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, done, ctx.Err()
		case <-tick.C:
		}
	}
}

// warnLate says how many shards learned the start time only after it.
func (l Launch) warnLate(byShard map[int]*corev1.ConfigMap) {
	n, worst := 0, time.Duration(0)
	for _, cm := range byShard {
		if d, err := time.ParseDuration(cm.Data[KeyLate]); err == nil && d > 0 {
			n++
			worst = max(worst, d)
		}
	}
	if n > 0 {
		fmt.Fprintf(l.Log, "k8s: warning: %d of %d shards learned the start time after it (up to %s late): their load began late; give a longer --lead\n",
			n, len(byShard), worst)
	}
}

// DefaultLead is the time between every pod being ready and the start
// for n shards: 5 s, or 10 ms a shard when that is longer (15 s for
// 1,500), for the start time to reach every shard through its watch.
func DefaultLead(n int) time.Duration {
	return max(5*time.Second, time.Duration(n)*10*time.Millisecond)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"-"}
	}
	return out
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
		r, err := pod.ReadResult(ctx, podClient(l.Client), o.Namespace, o.Name, byShard[i])
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		out = append(out, r)
	}
	fmt.Fprintf(l.Log, "k8s: collected %d shard Results\n", len(out))
	return out, nil
}

// endSink reads the in-cluster sink's counts once it wrote them, after
// the run was marked ended (waiting at most 30 s).
func (l Launch) endSink(ctx context.Context, o Options, tr *tracker) (*SinkCounts, error) {
	var cm *corev1.ConfigMap
	err := poll(ctx, l.Poll, 30*time.Second, func() (bool, error) {
		got, err := tr.cms.Get(SinkName(o.Name))
		if err != nil {
			return false, nil
		}
		cm = got
		return got.Data[KeyState] == StateDone || got.Data[KeyState] == StateFailed, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the in-cluster sink gave no counts: %w", err)
	}
	if cm.Data[KeyState] == StateFailed {
		return nil, fmt.Errorf("the in-cluster sink failed: %s", cm.Data[KeyMessage])
	}
	num := func(k string) uint64 { v, _ := strconv.ParseUint(cm.Data[k], 10, 64); return v }
	return &SinkCounts{Received: num(KeyReceived), Duplicates: num(KeyDuplicates), Faulted: num(KeyFaulted),
		Unmatched: num(KeyUnmatched), Dropped: num(KeyDropped)}, nil
}

func (l Launch) create(ctx context.Context, obj *Objects) error {
	c := l.Client
	ns := obj.ConfigMap.Namespace
	for i := range obj.ServiceAccounts {
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, obj.ServiceAccounts[i], metav1.CreateOptions{}); err != nil {
			return createErr("ServiceAccount", obj.ServiceAccounts[i].Name, err)
		}
		if _, err := c.RbacV1().Roles(ns).Create(ctx, obj.Roles[i], metav1.CreateOptions{}); err != nil {
			return createErr("Role", obj.Roles[i].Name, err)
		}
		if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, obj.RoleBindings[i], metav1.CreateOptions{}); err != nil {
			return createErr("RoleBinding", obj.RoleBindings[i].Name, err)
		}
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, obj.ConfigMap, metav1.CreateOptions{}); err != nil {
		return createErr("ConfigMap", obj.ConfigMap.Name, err)
	}
	for _, sj := range [][2]any{{obj.Service, obj.SinkJob}, {obj.SUTService, obj.SUTJob}, {nil, obj.Job}} {
		if svc, _ := sj[0].(*corev1.Service); svc != nil {
			if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				return createErr("Service", svc.Name, err)
			}
		}
		if job, _ := sj[1].(*batchv1.Job); job != nil {
			if _, err := c.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				return createErr("Job", job.Name, err)
			}
		}
	}
	if obj.DaemonSet != nil {
		if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, obj.DaemonSet, metav1.CreateOptions{}); err != nil {
			return createErr("DaemonSet", obj.DaemonSet.Name, err)
		}
	}
	if obj.PodMonitor != nil {
		if l.Dynamic == nil {
			return errors.New("create the PodMonitor: no dynamic client")
		}
		if _, err := l.Dynamic.Resource(PodMonitorResource).Namespace(ns).Create(ctx, obj.PodMonitor, metav1.CreateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return pipebench.UsageError("the cluster has no PodMonitor resource (monitoring.coreos.com/v1)",
					"install the Prometheus Operator, or leave out --pod-monitor: the shards' pods carry prometheus.io/scrape annotations", err)
			}
			return createErr("PodMonitor", obj.PodMonitor.GetName(), err)
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

// Cleanup deletes every object of the run (by its label), waits up to 45 s
// in all for its pods to go, and says what it could not delete. It uses
// its own context: it runs after a Ctrl-C too.
func (l Launch) Cleanup(ns, name string) error { return l.cleanupWithin(ns, name, 45*time.Second) }

// cleanupWithin is Cleanup taking at most within (a run of many pods
// takes the API server and the kubelets longer to delete).
func (l Launch) cleanupWithin(ns, name string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	c := l.Client
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + name}
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	keep := func(kind string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s of run %s: %w", kind, name, err))
		}
	}
	keep("Jobs", c.BatchV1().Jobs(ns).DeleteCollection(ctx, del, sel))
	keep("DaemonSet", c.AppsV1().DaemonSets(ns).Delete(ctx, name, del))
	keep("Service", c.CoreV1().Services(ns).Delete(ctx, SinkName(name), metav1.DeleteOptions{}))
	keep("Service", c.CoreV1().Services(ns).Delete(ctx, SUTName(name), metav1.DeleteOptions{}))
	if l.Dynamic != nil {
		err := l.Dynamic.Resource(PodMonitorResource).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			keep("PodMonitor", err)
		}
	}
	// The pods go with their owner; deleting them here too does not wait
	// for the garbage collector.
	keep("pods", c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	keep("ConfigMaps", c.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	keep("RoleBindings", c.RbacV1().RoleBindings(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	keep("Roles", c.RbacV1().Roles(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
	keep("ServiceAccounts", c.CoreV1().ServiceAccounts(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
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

// poll calls cond every interval until it is done, fails, ctx ends or the
// timeout passes.
func poll(ctx context.Context, every, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
