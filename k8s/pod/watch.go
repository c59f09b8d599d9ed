package pod

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// errGone is the error of a wait on a ConfigMap that was deleted (with its
// run).
var errGone = errors.New("deleted")

// awaitConfigMap waits, for at most timeout, until cond holds for
// ConfigMap ns/name (which may not exist yet), and returns it. It follows
// the one object through a watch restricted to its name (a field
// selector, which a Role's resourceNames allows), re-established when it
// breaks: one list and one open watch, however long the wait, instead of
// a read every poll (1,500 pods polling the run's ConfigMap 4 times a
// second would be 6,000 requests a second). A deleted ConfigMap ends the
// wait with errGone.
func awaitConfigMap(parent context.Context, c Client, ns, name string, timeout time.Duration, cond func(*corev1.ConfigMap) (bool, error)) (*corev1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	cms := c.ConfigMaps(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return cms.Watch(ctx, o)
		},
	}
	var got *corev1.ConfigMap
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.ConfigMap{}, nil, func(ev watch.Event) (bool, error) {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return false, errGone
		}
		done, err := cond(cm)
		if done || err != nil {
			got = cm
		}
		return done, err
	})
	switch {
	case err == nil || errors.Is(err, errGone):
		return got, err
	case parent.Err() != nil:
		return got, parent.Err()
	case ctx.Err() != nil:
		return got, fmt.Errorf("timed out after %s", timeout)
	}
	return got, err
}
