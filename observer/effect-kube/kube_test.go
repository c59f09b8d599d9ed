package effectkube

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

const sentAnno = "pipebench.dev/sent-at"

// A quarantine loop written here cordons N nodes of a real kube-apiserver
// at a set rate, after every node was marked with its event's send time at
// once (a blast). The observer, watching the Nodes, must find what the
// loop was set to: all N effects, the effect rate, the completion time,
// the peak backlog (N, every event sent and none in effect), and the
// event-to-effect latencies the loop produced.
func TestQuarantineLoopAgainstRealAPIServer(t *testing.T) {
	c := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	const n = 20
	const rate = 10.0 // cordons per second
	nodes := c.Client.CoreV1().Nodes()
	for i := range n {
		if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%02d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A node cordoned before the run is not one of its effects.
	if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: corev1.NodeSpec{Unschedulable: true}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := *defaultConfig()
	cfg.Sent = "metadata.annotations[" + sentAnno + "]"
	obs, err := New(ctx, cfg, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()

	// The events: every node gets its send time (a blast of N).
	sent := map[string]time.Time{}
	for i := range n {
		name := fmt.Sprintf("gpu-%02d", i)
		at := time.Now()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, sentAnno, at.UTC().Format(time.RFC3339Nano))
		if _, err := nodes.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		sent[name] = at
	}
	var points [][]float64 // at (s since start), effects, backlog
	observe := func(start time.Time) (effects, backlog float64) {
		pts, err := obs.Observe(ctx, time.Now())
		if err != nil {
			t.Errorf("observe: %v", err)
		}
		for _, p := range pts {
			switch p.Name {
			case "effects":
				effects = p.Value
			case "effect_backlog":
				backlog = p.Value
			}
		}
		points = append(points, []float64{time.Since(start).Seconds(), effects, backlog})
		return
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, b := observe(time.Now())
		return b == n
	}, "the backlog never reached the %d events sent", n)

	// The quarantine loop: one cordon every 1/rate seconds, paced by how
	// many are due, bounded by N.
	start := time.Now()
	cordoned := map[string]time.Time{}
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < n; {
			due := min(n, int(time.Since(start).Seconds()*rate)+1)
			for ; i < due; i++ {
				name := fmt.Sprintf("gpu-%02d", i)
				if _, err := nodes.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
					t.Errorf("cordon %s: %v", name, err)
					return
				}
				cordoned[name] = time.Now()
			}
			<-tick.C
		}
	}()
	peak := 0.0
	testutil.Eventually(t, 60*time.Second, func() bool {
		e, b := observe(start)
		peak = max(peak, b)
		return e == n
	}, "not every cordon was observed")
	<-loopDone
	loopTook := cordoned[fmt.Sprintf("gpu-%02d", n-1)].Sub(start)

	s := obs.Summary()
	if s.Count != n || s.NoSentTime != 0 {
		t.Fatalf("summary %+v, want %d effects, all with a send time", s, n)
	}
	// Completion: the last effect within a poll interval (plus the watch's
	// delivery) of the last cordon.
	took := s.Last.Sub(start)
	if math.Abs((took - loopTook).Seconds()) > 0.5 {
		t.Errorf("observed completion after %v; the loop's last cordon was at %v", took, loopTook)
	}
	// The rate the loop was set to (its own achieved rate bounds what it
	// could show on a loaded machine).
	loopRate := float64(n-1) / loopTook.Seconds()
	effRate := float64(n-1) / s.Last.Sub(s.First).Seconds()
	if math.Abs(effRate-loopRate)/loopRate > 0.2 {
		t.Errorf("effect rate %.1f/s, the loop cordoned at %.1f/s (set %.0f/s)", effRate, loopRate, rate)
	}
	if loopRate < rate*0.5 {
		t.Logf("the loop held only %.1f/s of %.0f/s on this machine", loopRate, rate)
	}
	if peak != n {
		t.Errorf("peak backlog %v, want %d", peak, n)
	}
	// Latency: the median of what the loop produced, within the watch's
	// delivery (generous for a loaded machine) and HDR precision.
	var lats []float64
	for name, at := range cordoned {
		lats = append(lats, at.Sub(sent[name]).Seconds())
	}
	sort.Float64s(lats)
	want := lats[len(lats)/2]
	if got := s.P50.Seconds(); got < want-0.3 || got > want+0.5 {
		t.Errorf("p50 latency %.3fs, the loop's median %.3fs", got, want)
	}
	if s.Max.Seconds() < lats[len(lats)-1]-0.3 {
		t.Errorf("max latency %v below the loop's %.3fs", s.Max, lats[len(lats)-1])
	}
	// Backlog over time falls as the loop works: the last point is 0.
	if last := points[len(points)-1]; last[2] != 0 {
		t.Errorf("backlog at the end %v, want 0", last[2])
	}
}

func TestConfigValidate(t *testing.T) {
	c := defaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := &Config{Field: "a.[b", Sent: "x[y"}
	err := bad.Validate()
	if err == nil {
		t.Fatal("a config without version and resource passed")
	}
	for _, key := range []string{"version:", "resource:", "field:", "sent:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no %s problem in %v", key, err)
		}
	}
	p, err := parsePath("metadata.annotations[pipebench.dev/sent-at]")
	if err != nil || len(p) != 3 || p[2] != "pipebench.dev/sent-at" {
		t.Errorf("parsePath: %q %v", p, err)
	}
}
