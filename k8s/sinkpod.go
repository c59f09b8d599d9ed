package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	Client    kubernetes.Interface
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

// open waits for the run's ConfigMap and creates the component's own.
func (p *InPod) open(ctx context.Context, name, role string) (*corev1.ConfigMap, ownConfigMap, error) {
	return openComponent(ctx, p.Client, p.Namespace, p.Run, name, role, p.Pod, p.Poll)
}

// Main runs the sink: it starts it and the feed, publishes its endpoints
// in ConfigMap NAME-sink, reports ready, applies the faults from the start
// time, writes its counts once the launcher says the run ended, and stays
// up until ctx ends (its Deployment would restart it otherwise).
func (p SinkPod) Main(ctx context.Context) error {
	if err := p.defaults("the sink listens"); err != nil {
		return err
	}
	run, mine, err := p.open(ctx, SinkName(p.Run), RoleSink)
	if err != nil {
		return err
	}
	fail := mine.fail
	st, err := p.Start(ctx, run)
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(p.IP, strconv.Itoa(FeedPort)))
	if err != nil {
		return fail(fmt.Errorf("the arrivals feed: %w", err))
	}
	srv := &http.Server{Handler: st.Feed, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	eps, _ := json.Marshal(st.Endpoints)
	if err := p.set(ctx, func(cm *corev1.ConfigMap) {
		cm.Data[KeyState], cm.Data[KeyEndpoint], cm.Data[KeyEndpoints] = StateReady, st.Endpoint, string(eps)
	}); err != nil {
		return err
	}
	if err := os.WriteFile(ReadyFile(), []byte("sink\n"), 0o644); err != nil {
		return fail(fmt.Errorf("write the ready file: %w", err))
	}
	defer os.Remove(ReadyFile())
	fmt.Fprintf(p.Log, "sink receiving on %s; arrivals feed on %s\n", st.Endpoint, ln.Addr())

	// The start time, then the end of the run.
	started := false
	cms := p.Client.CoreV1().ConfigMaps(p.Namespace)
	err = poll(ctx, p.Poll, 1<<62, func() (bool, error) {
		cm, err := cms.Get(ctx, p.Run, metav1.GetOptions{})
		if err != nil {
			return false, nil // the API server may blink
		}
		if s := cm.Data[KeyStartAt]; s != "" && !started && st.Faults != nil {
			if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
				started = true
				go st.Faults(ctx, at)
			}
		}
		return cm.Data[KeyEnded] != "", nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil // deleted with the run
		}
		return fail(err)
	}
	c := st.Counts()
	c.Dropped = st.Feed.Dropped()
	if err := p.set(ctx, func(cm *corev1.ConfigMap) {
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
	<-ctx.Done()
	return nil
}

func (p SinkPod) set(ctx context.Context, change func(*corev1.ConfigMap)) error {
	return updateConfigMap(ctx, p.Client, p.Namespace, SinkName(p.Run), change)
}

// ownConfigMap is the ConfigMap an in-cluster component (the sink, the
// system under test) reports through: its state, where it receives, why
// it failed.
type ownConfigMap struct {
	client   kubernetes.Interface
	ns, name string
}

func (o ownConfigMap) set(ctx context.Context, change func(*corev1.ConfigMap)) error {
	return updateConfigMap(ctx, o.client, o.ns, o.name, change)
}

// fail records err as the component's failure (the launcher reports it)
// and returns it.
func (o ownConfigMap) fail(err error) error {
	msg := err.Error()
	if len(msg) > 4000 {
		msg = msg[:4000] + "…"
	}
	_ = o.set(context.Background(), func(cm *corev1.ConfigMap) { cm.Data[KeyState], cm.Data[KeyMessage] = StateFailed, msg })
	return err
}

// openComponent waits for the run's ConfigMap and creates the component's
// own (name), owned by it so that it goes with the run, in state waiting;
// a restarted component resets it (the shards then see its new address).
func openComponent(ctx context.Context, c kubernetes.Interface, ns, run, name, role, pod string, every time.Duration) (*corev1.ConfigMap, ownConfigMap, error) {
	mine := ownConfigMap{client: c, ns: ns, name: name}
	rcm, err := waitConfigMap(ctx, c, ns, run, every, 2*time.Minute)
	if err != nil {
		return nil, mine, fmt.Errorf("read ConfigMap %s/%s: %w", ns, run, err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: rcm.Name, UID: rcm.UID}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels:          map[string]string{LabelRun: run, LabelRole: role, "app.kubernetes.io/managed-by": "pipebench"},
		Annotations:     map[string]string{"pipebench.dev/pod": pod},
		OwnerReferences: []metav1.OwnerReference{owner},
	}, Data: map[string]string{KeyState: StateWait}}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if err := mine.set(ctx, func(got *corev1.ConfigMap) { got.Data = cm.Data }); err != nil {
			return nil, mine, err
		}
	} else if err != nil {
		return nil, mine, fmt.Errorf("create ConfigMap %s: %w", name, err)
	}
	return rcm, mine, nil
}

// waitConfigMap waits until ConfigMap ns/name exists and returns it.
func waitConfigMap(ctx context.Context, c kubernetes.Interface, ns, name string, every, timeout time.Duration) (*corev1.ConfigMap, error) {
	var got *corev1.ConfigMap
	err := poll(ctx, every, timeout, func() (bool, error) {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		got = cm
		return err == nil, err
	})
	return got, err
}

// waitReadyConfigMap waits until the in-cluster component (what) whose
// ConfigMap is ns/name says it is ready, and returns that ConfigMap; a
// component that failed ends the wait with its message.
func waitReadyConfigMap(ctx context.Context, c kubernetes.Interface, ns, name, what string, timeout time.Duration) (*corev1.ConfigMap, error) {
	var cm *corev1.ConfigMap
	err := poll(ctx, 250*time.Millisecond, timeout, func() (bool, error) {
		got, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		switch got.Data[KeyState] {
		case StateFailed:
			return false, fmt.Errorf("the in-cluster %s failed: %s", what, got.Data[KeyMessage])
		case StateReady, StateDone:
			cm = got
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the in-cluster %s (ConfigMap %s): %w", what, name, err)
	}
	return cm, nil
}

// updateConfigMap applies change to ConfigMap ns/name, retrying on
// conflicts.
func updateConfigMap(ctx context.Context, c kubernetes.Interface, ns, name string, change func(*corev1.ConfigMap)) error {
	cms := c.CoreV1().ConfigMaps(ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		change(cm)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// SinkEndpoints waits until the in-cluster sink of run is ready and
// returns its endpoints with host (its Service's name) in place of its
// pod's address, and the feed's URL.
func SinkEndpoints(ctx context.Context, c kubernetes.Interface, ns, run, host string, timeout time.Duration) (target string, targets map[string]string, feed string, err error) {
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

// endSink tells the in-cluster sink that the run ended and reads its
// counts (waiting at most 30 s).
func (l Launch) endSink(ctx context.Context, ns, run string) (*SinkCounts, error) {
	cms := l.Client.CoreV1().ConfigMaps(ns)
	patch := fmt.Sprintf(`{"data":{%q:%q}}`, KeyEnded, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := cms.Patch(ctx, run, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		return nil, fmt.Errorf("tell the sink the run ended: %w", err)
	}
	var cm *corev1.ConfigMap
	err := poll(ctx, l.Poll, 30*time.Second, func() (bool, error) {
		got, err := cms.Get(ctx, SinkName(run), metav1.GetOptions{})
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
