package k8s

import (
	"context"
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// The PodMonitor a launch creates is accepted by an API server that
// serves the Prometheus Operator's resource (its CustomResourceDefinition,
// installed here with a schema that keeps any field), selects the shards'
// metrics port, and goes with the run's other objects.
func TestPodMonitorCreatedAndDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	c := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "podmonitors.monitoring.coreos.com"},
		"spec": map[string]any{
			"group": "monitoring.coreos.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "podmonitors", "singular": "podmonitor", "kind": "PodMonitor", "listKind": "PodMonitorList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := Options{Name: "pm", Namespace: "default", Image: "i", Shards: 2, Scenario: []byte(testScenario), Pods: PodSettings{MetricsPort: 9464}, PodMonitor: true}
	obj, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	l := Launch{Client: c.Client, Dynamic: dyn, Log: io.Discard}
	// The resource is served once the definition is established.
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, err := dyn.Resource(PodMonitorResource).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil
	}, "the PodMonitor resource was never served")
	if err := l.create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(PodMonitorResource).Namespace("default").Get(ctx, "pm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eps, _, _ := unstructured.NestedSlice(got.Object, "spec", "podMetricsEndpoints")
	sel, _, _ := unstructured.NestedStringMap(got.Object, "spec", "selector", "matchLabels")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || sel[LabelRun] != "pm" || sel[LabelRole] != RoleShard {
		t.Errorf("PodMonitor spec %v", got.Object["spec"])
	}
	if err := l.Cleanup("default", "pm"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(PodMonitorResource).Namespace("default").Get(ctx, "pm", metav1.GetOptions{}); err == nil {
		t.Error("the PodMonitor outlived its run")
	}
}
