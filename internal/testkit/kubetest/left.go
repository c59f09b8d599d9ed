package kubetest

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Left lists, as KIND/NAME, the objects of the kinds a pipebench run
// creates (and those its controllers would make of them) that are in
// namespace ns: what a run left behind once it ended. The namespace's own
// ConfigMap kube-root-ca.crt and ServiceAccount default are not listed;
// a kind the API server does not list is passed over.
func (c *Cluster) Left(ctx context.Context, ns string) []string {
	opts := metav1.ListOptions{}
	kinds := []struct {
		kind, keep string // keep: the namespace's own object of that kind
		list       func() (runtime.Object, error)
	}{
		{"pod", "", func() (runtime.Object, error) { return c.Client.CoreV1().Pods(ns).List(ctx, opts) }},
		{"configmap", "kube-root-ca.crt", func() (runtime.Object, error) { return c.Client.CoreV1().ConfigMaps(ns).List(ctx, opts) }},
		{"serviceaccount", "default", func() (runtime.Object, error) { return c.Client.CoreV1().ServiceAccounts(ns).List(ctx, opts) }},
		{"role", "", func() (runtime.Object, error) { return c.Client.RbacV1().Roles(ns).List(ctx, opts) }},
		{"rolebinding", "", func() (runtime.Object, error) { return c.Client.RbacV1().RoleBindings(ns).List(ctx, opts) }},
		{"job", "", func() (runtime.Object, error) { return c.Client.BatchV1().Jobs(ns).List(ctx, opts) }},
		{"daemonset", "", func() (runtime.Object, error) { return c.Client.AppsV1().DaemonSets(ns).List(ctx, opts) }},
		{"deployment", "", func() (runtime.Object, error) { return c.Client.AppsV1().Deployments(ns).List(ctx, opts) }},
		{"replicaset", "", func() (runtime.Object, error) { return c.Client.AppsV1().ReplicaSets(ns).List(ctx, opts) }},
		{"service", "", func() (runtime.Object, error) { return c.Client.CoreV1().Services(ns).List(ctx, opts) }},
	}
	var out []string
	for _, k := range kinds {
		l, err := k.list()
		if err != nil {
			continue
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			continue
		}
		for _, it := range items {
			if o, err := meta.Accessor(it); err == nil && o.GetName() != k.keep {
				out = append(out, k.kind+"/"+o.GetName())
			}
		}
	}
	return out
}
