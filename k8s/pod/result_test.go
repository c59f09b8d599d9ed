package pod

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/kubetest"
)

// A shard Result larger than one ConfigMap may hold is split in parts,
// stored in a real API server and joined back unchanged; a small one
// stays in the shard's own ConfigMap.
func TestResultPartsThroughAPIServer(t *testing.T) {
	c := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	old := PartSize
	PartSize = 4 << 10
	defer func() { PartSize = old }()
	run := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"}}
	run, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, run, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The pods' own client (NewClient), as a shard writes its Result.
	cc, err := NewClient(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: run.Name, UID: run.UID}
	for i, size := range []int{10, 2000} {
		res := &pipebench.Result{Schema: pipebench.ResultSchema, Manifest: pipebench.Manifest{RunID: "x", Scenario: "s"}}
		for range size {
			b := make([]byte, 8)
			rand.Read(b)
			res.Summary = append(res.Summary, hex.EncodeToString(b)) // incompressible
		}
		data, _ := json.Marshal(res)
		idx := i + 1
		inline, parts, id, err := putResult(ctx, cc, "default", "r", idx, owner, data)
		if err != nil {
			t.Fatal(err)
		}
		if size == 10 && (parts != 0 || inline == nil) || size == 2000 && (parts < 2 || inline != nil) {
			t.Fatalf("size %d: %d parts, inline %d bytes", size, parts, len(inline))
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ShardName("r", idx), Labels: map[string]string{LabelShard: "0"}},
			Data: map[string]string{}, BinaryData: map[string][]byte{}}
		cm.Labels[LabelShard] = string(rune('0' + idx))
		if parts > 0 {
			cm.Data[KeyParts], cm.Data[KeyPartsID] = string(rune('0'+parts)), id
		} else {
			cm.BinaryData[KeyResult] = inline
		}
		if parts > 9 {
			t.Fatalf("%d parts", parts)
		}
		got, err := ReadResult(ctx, cc, "default", "r", cm)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Summary, res.Summary) {
			t.Errorf("size %d: the Result came back changed", size)
		}
	}
}
