package k8s

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/pipebench/pipebench/k8s/pod"
)

// Conn is a connection to a cluster's API server.
type Conn struct {
	Client kubernetes.Interface
	Config *rest.Config
	// Namespace is the one asked for, else the kubeconfig's (or the
	// pod's), else default.
	Namespace string
}

// Connect loads the client configuration: the kubeconfig file given,
// $KUBECONFIG, ~/.kube/config, or the pod's service account; namespace,
// if set, overrides the configuration's. The client keeps to 50 requests
// a second (bursts of 100).
func Connect(kubeconfig, namespace string) (*Conn, error) {
	cfg, ns, err := pod.Config(kubeconfig, namespace)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Conn{Client: c, Config: cfg, Namespace: ns}, nil
}

// Nodes returns the nodes a per-node launch's DaemonSet puts a shard on,
// by name, sorted (see Schedulable).
func Nodes(ctx context.Context, c kubernetes.Interface, pods PodSettings) ([]string, error) {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the nodes: %w", err)
	}
	return Schedulable(list.Items, pods), nil
}

// Schedulable returns the names of the nodes that a DaemonSet whose pods
// have the settings pods runs a shard on: Ready, not cordoned, matching
// the node selector, with every NoSchedule and NoExecute taint tolerated;
// sorted. (The DaemonSet controller also places pods on cordoned nodes:
// those stay idle, out of the run.) Required node affinity is left to the
// DaemonSet controller: a node it skips leaves its shard unready, and the
// launcher says so.
func Schedulable(nodes []corev1.Node, pods PodSettings) []string {
	sel := labels.SelectorFromSet(pods.NodeSelector)
	var out []string
	for _, n := range nodes {
		if n.Spec.Unschedulable || !sel.Matches(labels.Set(n.Labels)) || !tolerated(n.Spec.Taints, pods.Tolerations) {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				out = append(out, n.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// tolerated tells whether every taint that keeps pods off a node
// (NoSchedule, NoExecute) is tolerated.
func tolerated(taints []corev1.Taint, tols []corev1.Toleration) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range tols {
			if tols[j].ToleratesTaint(klog.Background(), t, false) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
