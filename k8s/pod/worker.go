package pod

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadyFile is the file a worker creates once it waits for the start time;
// `pipebench-load k8s ready` (the readiness probe) checks it. It is in the
// container's temporary directory.
func ReadyFile() string { return filepath.Join(os.TempDir(), "pipebench-ready") }

// markReady creates the ready file, holding who is ready (a shard's
// "I/N", "sink", "sut"), and returns what removes it.
func markReady(who string) (unready func(), err error) {
	if err := os.WriteFile(ReadyFile(), []byte(who+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write the ready file: %w", err)
	}
	return func() { os.Remove(ReadyFile()) }, nil
}

// Shard is what a worker runs: its slice of the scenario.
type Shard struct {
	Scenario []byte
	File     string // the scenario's file name (no folder): the same in every shard's plan
	Duration string // --duration, if the launch set it
	Shard    string // "I/N"
	// Index (1-based) and Count are the slice, as in Shard.
	Index, Count int
	// MetricsPort, if not 0, is the port on the pod's address where the
	// shard serves the run's metrics for Prometheus (/metrics).
	MetricsPort int
	// MetricsLinger is how long the shard waits for a last scrape of its
	// final metrics before it reports its Result.
	MetricsLinger time.Duration
}

// Progress is what a shard reports while it runs, in its ConfigMap: the
// launcher adds up the shards' into the run's live progress.
type Progress struct {
	Sent, Failed uint64
	Phase        string
	Rate         float64 // items/s sent over the last interval
	// Final marks the shard's last report, with its Result's counts: it
	// is written whatever the period.
	Final bool
}

// Worker is one pod's side of a launch.
type Worker struct {
	Client    Client
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
	// progress may be called with what was sent so far, as often as it
	// likes (the worker writes it at the run's progress period).
	Exec func(ctx context.Context, s Shard, start time.Time, progress func(Progress)) ([]byte, error)
	// Ready, if set, is called once the shard waits for its start time
	// (default: write ReadyFile, which the readiness probe checks); the
	// returned func is called when the worker ends.
	Ready func(Shard) (func(), error)
}

// Main runs the worker: it reads the run's ConfigMap, reports ready,
// waits for the start time, runs its shard and stores the Result. Any
// failure is written into the shard's ConfigMap for the launcher before it
// is returned. A DaemonSet's worker stays up afterwards (its pod would be
// restarted otherwise) until ctx ends, and a worker restarted after its
// shard ended (done or failed) changes nothing: the shard's account
// stands.
func (w Worker) Main(ctx context.Context) error {
	if w.Log == nil {
		w.Log = io.Discard
	}
	run, err := awaitConfigMap(ctx, w.Client, w.Namespace, w.Run, 2*time.Minute, func(*corev1.ConfigMap) (bool, error) { return true, nil })
	if err != nil {
		return fmt.Errorf("read ConfigMap %s/%s: %w", w.Namespace, w.Run, err)
	}
	n, err := strconv.Atoi(run.Data[KeyShards])
	if err != nil || n < 1 {
		return fmt.Errorf("ConfigMap %s: shards %q is not a count", w.Run, run.Data[KeyShards])
	}
	idx := w.Index
	perNode := run.Data[KeyNodes] != ""
	idle := func() error {
		if perNode {
			<-ctx.Done()
		}
		return nil
	}
	if perNode {
		idx = nodeIndex(run.Data[KeyNodes], w.Node)
		if idx == 0 {
			// A node that joined after the launch: not part of this run.
			fmt.Fprintf(w.Log, "node %q is not one of the run's nodes; idle\n", w.Node)
			return idle()
		}
	}
	if idx < 1 || idx > n {
		return fmt.Errorf("shard %d is not within 1..%d: is %s set?", idx, n, EnvJobIndex)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: run.Name, UID: run.UID}
	own, ended, err := OpenOwn(ctx, w.Client, w.Namespace, ShardName(w.Run, idx), owner,
		map[string]string{LabelRun: w.Run, LabelShard: strconv.Itoa(idx)},
		map[string]string{"pipebench.dev/pod": w.Pod, "pipebench.dev/node": w.Node})
	if err != nil {
		return err
	}
	if ended {
		fmt.Fprintf(w.Log, "shard %d/%d ended before this pod started; idle\n", idx, n)
		return idle()
	}
	shard := Shard{Scenario: []byte(run.Data[KeyScenario]), File: scenarioFile(run.Data[KeyFile]), Duration: run.Data[KeyDuration],
		Shard: fmt.Sprintf("%d/%d", idx, n), Index: idx, Count: n}
	shard.MetricsPort, _ = strconv.Atoi(run.Data[KeyMetricsPort])
	shard.MetricsLinger, _ = time.ParseDuration(run.Data[KeyMetricsLinger])
	if err := w.Check(shard); err != nil {
		return own.Fail(err)
	}
	ready := w.Ready
	if ready == nil {
		ready = func(s Shard) (func(), error) { return markReady(s.Shard) }
	}
	unready, err := ready(shard)
	if err != nil {
		return own.Fail(err)
	}
	defer unready()
	fmt.Fprintf(w.Log, "shard %s ready; waiting for the start time\n", shard.Shard)
	var start time.Time
	_, err = awaitConfigMap(ctx, w.Client, w.Namespace, w.Run, 24*time.Hour, func(cm *corev1.ConfigMap) (bool, error) {
		s := cm.Data[KeyStartAt]
		if s == "" {
			return false, nil
		}
		var err error
		start, err = time.Parse(time.RFC3339Nano, s)
		return true, err
	})
	if err != nil {
		return own.Fail(fmt.Errorf("start time: %w", err))
	}
	// A shard that learned the start time after it says so: the start
	// barrier did not hold for it (the launcher warns: --lead).
	late := time.Since(start)
	if err := own.set(ctx, func(cm *corev1.ConfigMap) {
		cm.Data[KeyState] = StateRun
		if late > 0 {
			cm.Data[KeyLate] = late.Round(time.Millisecond).String()
		}
	}); err != nil {
		return err
	}
	every := progressEvery(run.Data[KeyProgressEvery], n)
	var lastProgress time.Time
	progress := func(p Progress) {
		if !p.Final && time.Since(lastProgress) < every {
			return
		}
		lastProgress = time.Now()
		_ = own.set(ctx, func(cm *corev1.ConfigMap) { writeProgress(cm.Data, p) })
	}
	result, err := w.Exec(ctx, shard, start, progress)
	if err != nil && len(result) == 0 {
		return own.Fail(err)
	}
	inline, parts, partsID, perr := putResult(ctx, w.Client, w.Namespace, w.Run, idx, owner, result)
	if perr != nil {
		return own.Fail(perr)
	}
	err = own.set(ctx, func(cm *corev1.ConfigMap) {
		cm.Data[KeyState] = StateDone
		if err != nil {
			cm.Data[KeyMessage] = err.Error()
		}
		if parts > 0 {
			cm.Data[KeyParts], cm.Data[KeyPartsID] = strconv.Itoa(parts), partsID
		}
		cm.BinaryData = map[string][]byte{}
		if inline != nil {
			cm.BinaryData[KeyResult] = inline
		}
	})
	if err != nil {
		return fmt.Errorf("store the Result: %w", err)
	}
	fmt.Fprintf(w.Log, "shard %s done: Result stored (%d bytes gzip'd inline, %d part(s))\n", shard.Shard, len(inline), parts)
	return idle()
}

// scenarioFile is the scenario's file name as the pods name it.
func scenarioFile(f string) string {
	f = filepath.Base(f)
	if f == "." || f == "/" || f == "" {
		return "scenario.yaml"
	}
	return f
}

// progressEvery is how often a shard writes its progress: the run's
// setting, else once a second per 50 shards (at least once a second), so
// that the shards together write at most 50 times a second, well under an
// API server's default limits, however many they are.
func progressEvery(s string, shards int) time.Duration {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	return DefaultProgressEvery(shards)
}

// DefaultProgressEvery is the progress period of a run of n shards: one
// write a second per 50 shards.
func DefaultProgressEvery(n int) time.Duration {
	return max(time.Second, time.Duration(n)*time.Second/50)
}

// Keys of a shard's progress in its ConfigMap.
const (
	// KeyLate is how long after the start time the shard learned it.
	KeyLate     = "late"
	KeyFailed   = "failed"
	KeyPhase    = "phase"
	KeyRate     = "rate"
	KeyProgress = "progress-at"
)

func writeProgress(d map[string]string, p Progress) {
	d[KeySent] = strconv.FormatUint(p.Sent, 10)
	d[KeyFailed] = strconv.FormatUint(p.Failed, 10)
	d[KeyPhase] = p.Phase
	d[KeyRate] = strconv.FormatFloat(p.Rate, 'f', 1, 64)
	d[KeyProgress] = time.Now().UTC().Format(time.RFC3339Nano)
}

// ReadProgress reads a shard's progress from its ConfigMap's data.
func ReadProgress(d map[string]string) Progress {
	var p Progress
	p.Sent, _ = strconv.ParseUint(d[KeySent], 10, 64)
	p.Failed, _ = strconv.ParseUint(d[KeyFailed], 10, 64)
	p.Rate, _ = strconv.ParseFloat(d[KeyRate], 64)
	p.Phase = d[KeyPhase]
	return p
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
