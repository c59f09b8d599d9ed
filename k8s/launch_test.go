package k8s

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// When the system under test failed and a shard failed after it (a shard
// loads it), the failure named is the system under test's, whose
// ConfigMap's name sorts after the shard's; shards are named in the order
// of their names; nothing failed, nothing is named.
func TestFailedMapNamesAComponentFirst(t *testing.T) {
	const run, ns = "run-x", "default"
	o := Options{Name: run, Namespace: ns}
	failed := func(name, pod, shard string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{},
				Annotations: map[string]string{"pipebench.dev/pod": pod}},
			Data: map[string]string{KeyState: StateFailed, KeyMessage: pod + " failed"},
		}
		if shard != "" {
			cm.Labels[LabelShard] = shard
		}
		return cm
	}
	running := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ShardName(run, 3), Namespace: ns,
		Labels: map[string]string{LabelShard: "3"}}, Data: map[string]string{KeyState: StateRun}}
	for _, tc := range []struct {
		name string
		cms  []*corev1.ConfigMap
		want string // the pod named; empty: none
		sut  bool
	}{
		{"sut and shard", []*corev1.ConfigMap{failed(ShardName(run, 1), "shard-1-pod", "1"), failed(SUTName(run), "sut-pod", ""), running}, "sut-pod", true},
		{"sink and shard", []*corev1.ConfigMap{failed(ShardName(run, 2), "shard-2-pod", "2"), failed(SinkName(run), "sink-pod", "")}, "sink-pod", false},
		{"two shards", []*corev1.ConfigMap{failed(ShardName(run, 2), "shard-2-pod", "2"), failed(ShardName(run, 1), "shard-1-pod", "1"), running}, "shard-1-pod", false},
		{"none", []*corev1.ConfigMap{running}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, cm := range tc.cms {
				if err := idx.Add(cm); err != nil {
					t.Fatal(err)
				}
			}
			tr := &tracker{cms: corelisters.NewConfigMapLister(idx).ConfigMaps(ns)}
			f := Launch{}.failedMap(o, tr)
			switch {
			case tc.want == "" && f != nil:
				t.Fatalf("named %+v, want none", f)
			case tc.want == "":
			case f == nil:
				t.Fatalf("named none, want %s", tc.want)
			case f.Pod != tc.want || f.SUT != tc.sut || f.Message != tc.want+" failed":
				t.Errorf("named %+v, want pod %s (system under test: %v)", f, tc.want, tc.sut)
			}
		})
	}
}

// A shard's pod that failed (it waited for the system under test, which
// failed) does not hide the system under test's own failure, in the wait
// for readiness as during the run; alone, it is named.
func TestFailureNamesTheSystemUnderTestBeforeAShardPod(t *testing.T) {
	const run, ns = "run-x", "default"
	o := Options{Name: run, Namespace: ns}
	shardPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: run + "-0-abcde", Namespace: ns,
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "waited for the system under test"},
	}
	sutMap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: SUTName(run), Namespace: ns,
			Annotations: map[string]string{"pipebench.dev/pod": run + "-sut-fghij"}},
		Data: map[string]string{KeyState: StateFailed, KeyMessage: "address already in use"},
	}
	for _, started := range []bool{false, true} {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		tr := &tracker{cms: corelisters.NewConfigMapLister(idx).ConfigMaps(ns)}
		if f := (Launch{}).failure(o, tr, []*corev1.Pod{shardPod}, started); f == nil || f.Shard != 1 || f.SUT || f.Pod != shardPod.Name {
			t.Errorf("started %v, the shard's pod alone: named %+v, want shard 1", started, f)
		}
		if err := idx.Add(sutMap); err != nil {
			t.Fatal(err)
		}
		f := Launch{}.failure(o, tr, []*corev1.Pod{shardPod}, started)
		if f == nil || !f.SUT || f.Pod != run+"-sut-fghij" || f.Message != "address already in use" {
			t.Errorf("started %v, with the system under test failed: named %+v, want the system under test", started, f)
		}
	}
}
