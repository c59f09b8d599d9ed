package pod

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// PartSize is the most Result bytes (gzip'd) one ConfigMap holds. An
// object in the API server may be at most 1 MiB (etcd's request limit
// is about 1.5 MiB); this leaves room for the object's metadata. A larger
// Result is split over ConfigMaps NAME-shard-I-part-K (K from 1), each
// PartSize or less, which the launcher joins in order; a shard's Result
// of any size is collected, at the cost of one object per 900 KiB.
var PartSize = 900 << 10

// ShardName is the name of shard i's ConfigMap.
func ShardName(run string, i int) string { return fmt.Sprintf("%s-shard-%d", run, i) }

// partName names part k of shard i's Result written under id: a new name
// for every writing, so that a worker only ever creates parts (its Role
// cannot name them in advance) and never overwrites another's.
func partName(run string, i, k int, id string) string {
	if id == "" {
		return fmt.Sprintf("%s-shard-%d-part-%d", run, i, k)
	}
	return fmt.Sprintf("%s-shard-%d-%s-part-%d", run, i, id, k)
}

// KeyPartsID is the id in the names of a shard's Result parts.
const KeyPartsID = "parts-id"

// maxParts bounds the parts a shard's ConfigMap may say its Result has:
// the most a Result of pipebench.MaxResultSize compresses into, were it
// not compressed at all.
func maxParts() int { return pipebench.MaxResultSize/PartSize + 1 }

// gz compresses data.
func gz(data []byte) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// putResult stores a shard's Result JSON: in the shard's ConfigMap when it
// fits, else in parts (written first, so that the launcher never sees a
// done shard whose parts are missing), each a new ConfigMap named with a
// fresh id. It returns the binary data the shard's ConfigMap carries, or
// the number of parts and their id.
func putResult(ctx context.Context, c Client, ns, run string, i int, owner metav1.OwnerReference, resultJSON []byte) (inline []byte, parts int, id string, err error) {
	z := gz(resultJSON)
	if len(z) <= PartSize {
		return z, 0, "", nil
	}
	b := make([]byte, 4)
	rand.Read(b)
	id = hex.EncodeToString(b)
	cms := c.ConfigMaps(ns)
	for k := 0; k*PartSize < len(z); k++ {
		chunk := z[k*PartSize : min((k+1)*PartSize, len(z))]
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: partName(run, i, k+1, id), Namespace: ns,
				Labels: map[string]string{LabelRun: run, LabelShard: strconv.Itoa(i), LabelPart: strconv.Itoa(k + 1),
					"app.kubernetes.io/managed-by": "pipebench"},
				OwnerReferences: []metav1.OwnerReference{owner}},
			BinaryData: map[string][]byte{KeyResult: chunk},
		}
		err := retry.OnError(apiBackoff, retriable, func() error {
			_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil // a retry of a create that went through
			}
			return err
		})
		if err != nil {
			return nil, 0, "", fmt.Errorf("write part %d of the Result: %w", k+1, err)
		}
		parts++
	}
	return nil, parts, id, nil
}

// ReadResult reads the Result of a done shard from its ConfigMap (and its
// parts).
func ReadResult(ctx context.Context, c Client, ns, run string, cm *corev1.ConfigMap) (*pipebench.Result, error) {
	z := cm.BinaryData[KeyResult]
	if p := cm.Data[KeyParts]; p != "" {
		parts, err := strconv.Atoi(p)
		if err != nil || parts < 1 || parts > maxParts() {
			return nil, fmt.Errorf("ConfigMap %s: parts %q is not a count", cm.Name, p)
		}
		i, _ := strconv.Atoi(cm.Labels[LabelShard])
		for k := 1; k <= parts; k++ {
			part, err := c.ConfigMaps(ns).Get(ctx, partName(run, i, k, cm.Data[KeyPartsID]), metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("part %d of %d of the Result: %w", k, parts, err)
			}
			z = append(z, part.BinaryData[KeyResult]...)
		}
	}
	if len(z) == 0 {
		return nil, fmt.Errorf("ConfigMap %s holds no Result", cm.Name)
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s: the Result is not gzip'd: %w", cm.Name, err)
	}
	// Decoded as it is inflated, within a Result file's limit and a
	// shard's bounds (kpi.DecodeShard): a ConfigMap anyone with write
	// access to the namespace changed cannot make the launcher hold more.
	lr := &io.LimitedReader{R: r, N: pipebench.MaxResultSize + 1}
	res, err := kpi.DecodeShard(lr)
	if lr.N <= 0 {
		return nil, fmt.Errorf("ConfigMap %s: the Result inflates to more than %s, the most pipebench reads of a Result", cm.Name, pipebench.FormatBytes(pipebench.MaxResultSize))
	}
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s: not a pipebench Result of a shard: %w", cm.Name, err)
	}
	return res, nil
}
