package pod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Keys of the in-cluster sink's ConfigMap.
const (
	KeyEndpoint  = "endpoint"
	KeyEndpoints = "endpoints" // JSON: protocol -> endpoint
	// The sink's own account, written once the run ended.
	KeyReceived   = "received" // unique items
	KeyDuplicates = "duplicates"
	KeyFaulted    = "faulted"
	KeyUnmatched  = "unmatched"
	KeyDropped    = "dropped" // feed records that reached no shard
	StateReady    = "ready"
)

// SinkCounts is the in-cluster sink's own account of the run.
type SinkCounts struct {
	Received, Duplicates, Faulted, Unmatched, Dropped uint64
}

// SinkStarted is what the sink pod's Start returns.
type SinkStarted struct {
	// Endpoint and Endpoints are where the sink receives, on its pod's
	// address; the shards put the Service's name in its place.
	Endpoint  string
	Endpoints map[string]string
	// Feed serves the arrivals to the shards.
	Feed *Feed
	// Faults, if set, is called at the run's start time: it applies the
	// plan's fault policies phase by phase.
	Faults func(ctx context.Context, start time.Time)
	// Counts returns the sink's own account.
	Counts func() SinkCounts
}

// SinkPod is the in-cluster sink's side of a launch.
type SinkPod struct {
	// The sink and the feed listen on the pod's address, IP.
	InPod
	// Start starts the scenario's sink on IP from the run's ConfigMap
	// (scenario, file, duration).
	Start func(ctx context.Context, run *corev1.ConfigMap) (*SinkStarted, error)
}

// InPod is what an in-cluster component (the sink, the system under
// test) knows of its pod and its run.
type InPod struct {
	Client    Client
	Namespace string
	Run       string
	Pod       string
	// IP is the pod's address (POD_IP).
	IP   string
	Log  io.Writer
	Poll time.Duration
}

// defaults fills Poll and Log; a pod without its address cannot serve
// (what says what the address is for).
func (p *InPod) defaults(what string) error {
	if p.Poll <= 0 {
		p.Poll = 250 * time.Millisecond
	}
	if p.Log == nil {
		p.Log = io.Discard
	}
	if p.IP == "" {
		return errors.New("POD_IP is not set: " + what + " on the pod's address")
	}
	return nil
}

// open fills the defaults (what says what the pod's address is for),
// waits for the run's ConfigMap and creates the component's own; ended is
// true when that one already holds an outcome (see OpenOwn).
func (p *InPod) open(ctx context.Context, what, name, role string) (run *corev1.ConfigMap, own *Own, ended bool, err error) {
	if err := p.defaults(what); err != nil {
		return nil, nil, false, err
	}
	run, err = awaitConfigMap(ctx, p.Client, p.Namespace, p.Run, 2*time.Minute, func(*corev1.ConfigMap) (bool, error) { return true, nil })
	if err != nil {
		return nil, nil, false, fmt.Errorf("read ConfigMap %s/%s: %w", p.Namespace, p.Run, err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: run.Name, UID: run.UID}
	own, ended, err = OpenOwn(ctx, p.Client, p.Namespace, name, owner,
		map[string]string{LabelRun: p.Run, LabelRole: role}, map[string]string{"pipebench.dev/pod": p.Pod})
	return run, own, ended, err
}

// startInPod opens the component's own ConfigMap (see open) and starts
// the component with start, from the run's ConfigMap. stop is true when
// Main has nothing more to do: the ConfigMap already held an outcome (err
// is the failure it recorded, if any), or opening or starting failed (a
// failure to start is recorded as the component's).
func startInPod[S any](ctx context.Context, p *InPod, what, name, role string, start func(context.Context, *corev1.ConfigMap) (*S, error)) (st *S, own *Own, stop bool, err error) {
	run, own, ended, err := p.open(ctx, what, name, role)
	if err != nil {
		return nil, nil, true, err
	}
	if ended {
		return nil, own, true, own.Ended(ctx)
	}
	if st, err = start(ctx, run); err != nil {
		return nil, own, true, own.Fail(err)
	}
	return st, own, false, nil
}

// Ended is the error of a component started again after it ended: the
// outcome recorded stands.
func (o *Own) Ended(ctx context.Context) error {
	cm, err := o.client.ConfigMaps(o.ns).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if cm.Data[KeyState] == StateFailed {
		return fmt.Errorf("failed before this pod started (ConfigMap %s): %s", o.name, cm.Data[KeyMessage])
	}
	return nil
}

// Main runs the sink: it starts it and the feed, publishes its endpoints
// in ConfigMap NAME-sink, reports ready, applies the faults from the start
// time, writes its counts once the launcher says the run ended, and stays
// up until ctx ends (its Deployment would restart it otherwise).
func (p SinkPod) Main(ctx context.Context) error {
	st, mine, stop, err := startInPod(ctx, &p.InPod, "the sink listens", SinkName(p.Run), RoleSink, p.Start)
	if stop {
		return err
	}
	fail := mine.Fail
	ln, err := net.Listen("tcp", net.JoinHostPort(p.IP, strconv.Itoa(FeedPort)))
	if err != nil {
		return fail(fmt.Errorf("the arrivals feed: %w", err))
	}
	srv := &http.Server{Handler: st.Feed, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	eps, _ := json.Marshal(st.Endpoints)
	unready, err := mine.ready(ctx, "sink", func(cm *corev1.ConfigMap) {
		cm.Data[KeyEndpoint], cm.Data[KeyEndpoints] = st.Endpoint, string(eps)
	})
	if err != nil {
		return err
	}
	defer unready()
	fmt.Fprintf(p.Log, "sink receiving on %s; arrivals feed on %s\n", st.Endpoint, ln.Addr())

	// The start time, then the end of the run.
	started := false
	_, err = awaitConfigMap(ctx, p.Client, p.Namespace, p.Run, 1<<62, func(cm *corev1.ConfigMap) (bool, error) {
		if s := cm.Data[KeyStartAt]; s != "" && !started && st.Faults != nil {
			if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
				started = true
				go st.Faults(ctx, at)
			}
		}
		return cm.Data[KeyEnded] != "", nil
	})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, errGone) {
			return nil // deleted with the run
		}
		return fail(err)
	}
	c := st.Counts()
	c.Dropped = st.Feed.Dropped()
	if err := mine.set(ctx, func(cm *corev1.ConfigMap) {
		cm.Data[KeyState] = StateDone
		cm.Data[KeyReceived] = strconv.FormatUint(c.Received, 10)
		cm.Data[KeyDuplicates] = strconv.FormatUint(c.Duplicates, 10)
		cm.Data[KeyFaulted] = strconv.FormatUint(c.Faulted, 10)
		cm.Data[KeyUnmatched] = strconv.FormatUint(c.Unmatched, 10)
		cm.Data[KeyDropped] = strconv.FormatUint(c.Dropped, 10)
	}); err != nil {
		return err
	}
	fmt.Fprintf(p.Log, "run ended: received %d unique items, %d duplicates\n", c.Received, c.Duplicates)
	return nil
}

// Own is the ConfigMap a pod (a shard, the sink, the
// system under test) reports through: its state, where it receives, why
// it failed.
type Own struct {
	client   Client
	ns, name string

	mu  sync.Mutex
	cur *corev1.ConfigMap // as last written; nil: read it first
}

// apiBackoff paces the retries of a request the API server refused for
// the moment: about two minutes in all, since 1,500 pods writing at once
// meet its limits (429) and a busy server times out.
var apiBackoff = wait.Backoff{Steps: 12, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: 15 * time.Second}

// retriable tells whether the API server's refusal is for the moment.
func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// set applies change to the ConfigMap as this pod last wrote it, reading
// it again only after a conflict: one request a change, not two. Refusals
// for the moment are retried (apiBackoff).
func (o *Own) set(ctx context.Context, change func(*corev1.ConfigMap)) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	cms := o.client.ConfigMaps(o.ns)
	return retry.OnError(apiBackoff, retriable, func() error {
		if o.cur == nil {
			got, err := cms.Get(ctx, o.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			o.cur = got
		}
		cm := o.cur.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		change(cm)
		got, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			o.cur = nil
		}
		if err != nil {
			return err
		}
		o.cur = got
		return nil
	})
}

// ready records the component ready in its ConfigMap, with what publish
// writes there (where it receives), then creates the ready file holding
// who (markReady) and returns what removes it; failing to create the file
// fails the component.
func (o *Own) ready(ctx context.Context, who string, publish func(*corev1.ConfigMap)) (unready func(), err error) {
	if err := o.set(ctx, func(cm *corev1.ConfigMap) {
		cm.Data[KeyState] = StateReady
		publish(cm)
	}); err != nil {
		return nil, err
	}
	if unready, err = markReady(who); err != nil {
		return nil, o.Fail(err)
	}
	return unready, nil
}

// Fail records err as the component's failure (the launcher reports it)
// and returns it.
func (o *Own) Fail(err error) error {
	msg := err.Error()
	if len(msg) > 4000 {
		msg = msg[:4000] + "…"
	}
	_ = o.set(context.Background(), func(cm *corev1.ConfigMap) { cm.Data[KeyState], cm.Data[KeyMessage] = StateFailed, msg })
	return err
}

// OpenOwn creates a pod's own ConfigMap (name), owned by the run's
// ConfigMap so that it goes with the run, in state waiting. A pod that
// finds it there already (a restarted or replacement pod) takes it over
// but never erases an outcome: a ConfigMap that says failed or done stays
// as it is and ended is true, so that the launcher reads the first
// failure, and names its culprit, whenever it looks. Otherwise it starts
// over (the shards then see the component's new address).
func OpenOwn(ctx context.Context, c Client, ns, name string, owner metav1.OwnerReference, labels, annotations map[string]string) (own *Own, ended bool, err error) {
	own = &Own{client: c, ns: ns, name: name}
	labels["app.kubernetes.io/managed-by"] = "pipebench"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns, Labels: labels, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{owner},
	}, Data: map[string]string{KeyState: StateWait}}
	var created *corev1.ConfigMap
	err = retry.OnError(apiBackoff, retriable, func() (err error) {
		created, err = c.ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if err == nil {
		own.cur = created
		return own, false, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return own, false, fmt.Errorf("create ConfigMap %s: %w", name, err)
	}
	err = own.set(ctx, func(got *corev1.ConfigMap) {
		if st := got.Data[KeyState]; st == StateFailed || st == StateDone {
			ended = true
			return
		}
		got.Data = cm.Data
		got.BinaryData = nil
		got.Annotations = annotations
	})
	return own, ended, err
}

// waitReadyConfigMap waits until the in-cluster component (what) whose
// ConfigMap is ns/name says it is ready, and returns that ConfigMap; a
// component that failed ends the wait with its message.
func waitReadyConfigMap(ctx context.Context, c Client, ns, name, what string, timeout time.Duration) (*corev1.ConfigMap, error) {
	cm, err := awaitConfigMap(ctx, c, ns, name, timeout, func(got *corev1.ConfigMap) (bool, error) {
		switch got.Data[KeyState] {
		case StateFailed:
			return false, fmt.Errorf("the in-cluster %s failed: %s", what, got.Data[KeyMessage])
		case StateReady, StateDone:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the in-cluster %s (ConfigMap %s): %w", what, name, err)
	}
	return cm, nil
}

// SinkEndpoints waits until the in-cluster sink of run is ready and
// returns its endpoints with host (its Service's name) in place of its
// pod's address, and the feed's URL.
func SinkEndpoints(ctx context.Context, c Client, ns, run, host string, timeout time.Duration) (target string, targets map[string]string, feed string, err error) {
	cm, err := waitReadyConfigMap(ctx, c, ns, SinkName(run), "sink", timeout)
	if err != nil {
		return "", nil, "", err
	}
	if target, err = Rehost(cm.Data[KeyEndpoint], host); err != nil {
		return "", nil, "", err
	}
	var eps map[string]string
	if s := cm.Data[KeyEndpoints]; s != "" && s != "null" {
		if err := json.Unmarshal([]byte(s), &eps); err != nil {
			return "", nil, "", fmt.Errorf("ConfigMap %s: endpoints: %w", SinkName(run), err)
		}
	}
	if len(eps) > 0 {
		targets = map[string]string{}
		for k, v := range eps {
			if targets[k], err = Rehost(v, host); err != nil {
				return "", nil, "", err
			}
		}
	}
	feed = "http://" + net.JoinHostPort(host, strconv.Itoa(FeedPort)) + FeedPath
	return target, targets, feed, nil
}
