package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ReadyFile is the file a worker creates once it waits for the start time;
// `pipebench k8s ready` (the readiness probe) checks it. It is in the
// container's temporary directory.
func ReadyFile() string { return filepath.Join(os.TempDir(), "pipebench-ready") }

// Shard is what a worker runs: its slice of the scenario.
type Shard struct {
	Scenario []byte
	File     string // the scenario's file name (no folder): the same in every shard's plan
	Duration string // --duration, if the launch set it
	Shard    string // "I/N"
}

// Worker is one pod's side of a launch.
type Worker struct {
	Client    kubernetes.Interface
	Namespace string
	Run       string // the run's name (PIPEBENCH_K8S_RUN)
	Pod       string
	Node      string
	// Index is the shard (1-based) of an Indexed Job's pod
	// (JOB_COMPLETION_INDEX + 1); 0 for a DaemonSet's, which finds its
	// shard by its node in the run's ConfigMap.
	Index int
	Log   io.Writer
	// Check compiles the shard without running it (before the pod reports
	// ready).
	Check func(Shard) error
	// Exec runs the shard from start and returns its Result as JSON;
	// progress may be called with the items sent so far.
	Exec func(ctx context.Context, s Shard, start time.Time, progress func(sent float64)) ([]byte, error)
	// Poll is how often the worker looks for the start time (default 250 ms).
	Poll time.Duration
}

// Main runs the worker: it reads the run's ConfigMap, reports ready,
// waits for the start time, runs its shard and stores the Result. Any
// failure is written into the shard's ConfigMap for the launcher before it
// is returned. A DaemonSet's worker stays up afterwards (its pod would be
// restarted otherwise) until ctx ends.
func (w Worker) Main(ctx context.Context) error {
	if w.Poll <= 0 {
		w.Poll = 250 * time.Millisecond
	}
	if w.Log == nil {
		w.Log = io.Discard
	}
	cms := w.Client.CoreV1().ConfigMaps(w.Namespace)
	var run *corev1.ConfigMap
	err := poll(ctx, w.Poll, 2*time.Minute, func() (bool, error) {
		cm, err := cms.Get(ctx, w.Run, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		run = cm
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("read ConfigMap %s/%s: %w", w.Namespace, w.Run, err)
	}
	n, err := strconv.Atoi(run.Data[KeyShards])
	if err != nil || n < 1 {
		return fmt.Errorf("ConfigMap %s: shards %q is not a count", w.Run, run.Data[KeyShards])
	}
	idx := w.Index
	perNode := run.Data[KeyNodes] != ""
	if perNode {
		idx = nodeIndex(run.Data[KeyNodes], w.Node)
		if idx == 0 {
			// A node that joined after the launch: not part of this run.
			fmt.Fprintf(w.Log, "node %q is not one of the run's nodes; idle\n", w.Node)
			<-ctx.Done()
			return nil
		}
	}
	if idx < 1 || idx > n {
		return fmt.Errorf("shard %d is not within 1..%d: is JOB_COMPLETION_INDEX set?", idx, n)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: run.Name, UID: run.UID}
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: ShardName(w.Run, idx), Namespace: w.Namespace,
		Labels:          map[string]string{LabelRun: w.Run, LabelShard: strconv.Itoa(idx), "app.kubernetes.io/managed-by": "pipebench"},
		Annotations:     map[string]string{"pipebench.dev/pod": w.Pod, "pipebench.dev/node": w.Node},
		OwnerReferences: []metav1.OwnerReference{owner},
	}, Data: map[string]string{KeyState: StateWait}}
	if _, err := cms.Create(ctx, mine, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		// A restarted pod starts over.
		err = w.set(ctx, idx, func(cm *corev1.ConfigMap) { cm.Data = mine.Data; cm.BinaryData = nil })
		if err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("create ConfigMap %s: %w", mine.Name, err)
	}
	fail := func(err error) error {
		msg := err.Error()
		if len(msg) > 4000 {
			msg = msg[:4000] + "…"
		}
		_ = w.set(context.Background(), idx, func(cm *corev1.ConfigMap) {
			cm.Data[KeyState], cm.Data[KeyMessage] = StateFailed, msg
		})
		return err
	}
	file := filepath.Base(run.Data[KeyFile])
	if file == "." || file == "/" || file == "" {
		file = "scenario.yaml"
	}
	shard := Shard{Scenario: []byte(run.Data[KeyScenario]), File: file, Duration: run.Data[KeyDuration], Shard: fmt.Sprintf("%d/%d", idx, n)}
	if err := w.Check(shard); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(ReadyFile(), []byte(shard.Shard+"\n"), 0o644); err != nil {
		return fail(fmt.Errorf("write the ready file: %w", err))
	}
	defer os.Remove(ReadyFile())
	fmt.Fprintf(w.Log, "shard %s ready; waiting for the start time\n", shard.Shard)
	var start time.Time
	err = poll(ctx, w.Poll, 24*time.Hour, func() (bool, error) {
		cm, err := cms.Get(ctx, w.Run, metav1.GetOptions{})
		if err != nil {
			return false, nil // the API server may blink; the launcher's deadline bounds the wait
		}
		s := cm.Data[KeyStartAt]
		if s == "" {
			return false, nil
		}
		start, err = time.Parse(time.RFC3339Nano, s)
		return true, err
	})
	if err != nil {
		return fail(fmt.Errorf("start time: %w", err))
	}
	if err := w.set(ctx, idx, func(cm *corev1.ConfigMap) { cm.Data[KeyState] = StateRun }); err != nil {
		return err
	}
	var lastProgress time.Time
	progress := func(sent float64) {
		if time.Since(lastProgress) < time.Second {
			return
		}
		lastProgress = time.Now()
		_ = w.set(ctx, idx, func(cm *corev1.ConfigMap) { cm.Data[KeySent] = strconv.FormatFloat(sent, 'f', 0, 64) })
	}
	result, err := w.Exec(ctx, shard, start, progress)
	if err != nil && len(result) == 0 {
		return fail(err)
	}
	inline, parts, perr := putResult(ctx, w.Client, w.Namespace, w.Run, idx, owner, result)
	if perr != nil {
		return fail(perr)
	}
	err = w.set(ctx, idx, func(cm *corev1.ConfigMap) {
		cm.Data[KeyState] = StateDone
		if err != nil {
			cm.Data[KeyMessage] = err.Error()
		}
		if parts > 0 {
			cm.Data[KeyParts] = strconv.Itoa(parts)
		}
		cm.BinaryData = map[string][]byte{}
		if inline != nil {
			cm.BinaryData[KeyResult] = inline
		}
	})
	if err != nil {
		return fmt.Errorf("store the Result: %w", err)
	}
	fmt.Fprintf(w.Log, "shard %s done: Result stored (%d bytes gzip'd, %d part(s))\n", shard.Shard, len(inline), parts)
	if perNode {
		<-ctx.Done()
	}
	return nil
}

// set changes the shard's ConfigMap, retrying on conflicts.
func (w Worker) set(ctx context.Context, idx int, change func(*corev1.ConfigMap)) error {
	return updateConfigMap(ctx, w.Client, w.Namespace, ShardName(w.Run, idx), change)
}

// nodeIndex finds node in "name=index" lines.
func nodeIndex(lines, node string) int {
	for _, l := range strings.Split(lines, "\n") {
		name, idx, ok := strings.Cut(strings.TrimSpace(l), "=")
		if ok && name == node {
			i, _ := strconv.Atoi(idx)
			return i
		}
	}
	return 0
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
