package k8s

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	kpod "github.com/pipebench/pipebench/k8s/pod"
)

// Each kind of pod may do, through the API server's own RBAC authorizer,
// what it does and nothing else: a SubjectAccessReview for its service
// account for every verb it uses on every object it touches (allowed),
// and for the neighbours' objects, other ConfigMaps, Secrets, pods and
// deletions (denied).
func TestRolesLeastPrivilege(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	c := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	ns := "default"
	o := Options{Name: "r", Namespace: ns, Image: "pipebench:test", Shards: 2, Scenario: []byte(testScenario),
		Sink: &SinkSpec{Type: "http", Ports: []SinkPort{{Name: "http", Port: 8080}}}, SUT: &SUTSpec{Type: "relay"}}
	obj, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Launch{Client: c.Client}).create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	// The pods run as their own service accounts.
	for _, tc := range []struct{ what, got, want string }{
		{"shards", obj.Job.Spec.Template.Spec.ServiceAccountName, "r"},
		{"sink", obj.SinkJob.Spec.Template.Spec.ServiceAccountName, "r-sink"},
		{"system under test", obj.SUTJob.Spec.Template.Spec.ServiceAccountName, "r-sut"},
	} {
		if tc.got != tc.want {
			t.Errorf("the %s' pods run as %q, want %q", tc.what, tc.got, tc.want)
		}
	}
	type access struct {
		verb, resource, name string
		field                string // a field selector, for list and watch
		allowed              bool
	}
	byName := func(name string) string { return "metadata.name=" + name }
	cm := "configmaps"
	common := func(own string) []access {
		return []access{
			{"get", cm, "r", "", true},
			{"list", cm, "r", byName("r"), true},
			{"watch", cm, "r", byName("r"), true},
			{"create", cm, "", "", true}, // cannot be restricted by name
			{"get", cm, own, "", true},
			{"update", cm, own, "", true},
			{"update", cm, "r", "", false}, // the start time is the launcher's
			{"patch", cm, "r", "", false},
			{"delete", cm, own, "", false},
			{"list", cm, "", "", false}, // every ConfigMap
			{"watch", cm, "", "", false},
			{"get", cm, "other", "", false},
			{"get", "secrets", "pipebench-creds", "", false},
			{"list", "secrets", "", "", false},
			{"get", "pods", "", "", false},
			{"create", "pods", "", "", false},
			{"get", "serviceaccounts", "r", "", false},
		}
	}
	for _, tc := range []struct {
		account string
		checks  []access
	}{
		{"r", append(common("r-shard-2"),
			access{"get", cm, "r-shard-1", "", true},
			access{"get", cm, "r-sink", "", true},
			access{"watch", cm, "r-sink", byName("r-sink"), true},
			access{"get", cm, "r-sut", "", true},
			access{"update", cm, "r-sink", "", false},
			access{"update", cm, "r-sut", "", false},
			access{"update", cm, "r-shard-3", "", false}, // no such shard
		)},
		{"r-sink", append(common("r-sink"),
			access{"update", cm, "r-shard-1", "", false},
			access{"get", cm, "r-sut", "", false},
			access{"update", cm, "r-sut", "", false},
		)},
		{"r-sut", append(common("r-sut"),
			access{"get", cm, "r-sink", "", true},
			access{"update", cm, "r-sink", "", false},
			access{"update", cm, "r-shard-1", "", false},
		)},
	} {
		for _, a := range tc.checks {
			sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + ns + ":" + tc.account,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: a.verb, Resource: a.resource, Name: a.name,
					FieldSelector: fieldSelector(a.field)},
			}}
			got, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != a.allowed {
				t.Errorf("%s: %s %s %q %s: allowed %v, want %v (%s)", tc.account, a.verb, a.resource, a.name, a.field, got.Status.Allowed, a.allowed, got.Status.Reason)
			}
		}
	}
}

func fieldSelector(s string) *authzv1.FieldSelectorAttributes {
	if s == "" {
		return nil
	}
	return &authzv1.FieldSelectorAttributes{RawSelector: s}
}

// The race behind "a worker failed" for a system under test that could
// not start: its pod failed and wrote its failure into its ConfigMap, but
// a replacement pod reset that ConfigMap before the launcher looked, and
// the launcher, which named the culprit from the ConfigMaps' states,
// blamed a worker. Played here deterministically against the API server:
// the failed pod of each role, with its ConfigMap already reset, or never
// written (a crash), or a container restarted in place (what a real
// kubelet does to a Deployment's pod). The launcher names the role the
// pod's labels say, and a component started again never erases a
// recorded failure.
func TestCulpritNamedByRole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	c := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	o := Options{Name: "r", Namespace: "default", Shards: 2, Nodes: nil,
		Sink: &SinkSpec{Type: "http"}, SUT: &SUTSpec{Type: "relay"}}
	run, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{LabelRun: "r"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: run.Name, UID: run.UID}
	// No service account controller runs: the pods' account, by hand.
	if _, err := c.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l := Launch{Client: c.Client, Log: io.Discard, Poll: 50 * time.Millisecond, ReadyTimeout: 10 * time.Second}
	for i, tc := range []struct {
		role, pod string
		annot     map[string]string
		restarted bool
		check     func(*ShardFailure) bool
	}{
		{RoleSUT, "r-sut-x1", nil, false, func(f *ShardFailure) bool { return f.SUT && f.Pod == "r-sut-x1" }},
		{RoleSink, "r-sink-x1", nil, false, func(f *ShardFailure) bool { return f.Sink && f.Pod == "r-sink-x1" }},
		{RoleShard, "r-1-x1", map[string]string{"batch.kubernetes.io/job-completion-index": "1"}, false, func(f *ShardFailure) bool { return f.Shard == 2 && f.Pod == "r-1-x1" }},
		{RoleSUT, "r-sut-x2", nil, true, func(f *ShardFailure) bool { return f.SUT && f.Pod == "r-sut-x2" }},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.pod, Annotations: tc.annot,
			Labels: map[string]string{LabelRun: "r", LabelRole: tc.role}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		pod, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		term := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "listen tcp 127.0.0.1:9: bind: address already in use"}
		if tc.restarted {
			pod.Status.Phase = corev1.PodRunning
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 1, LastTerminationState: corev1.ContainerState{Terminated: term},
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		} else {
			pod.Status.Phase = corev1.PodFailed
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: term}}}
		}
		if _, err := c.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := l.track(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		err = l.waitReady(ctx, o, tr)
		tr.stop()
		f, ok := err.(*ShardFailure)
		if !ok || !tc.check(f) || !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("case %d (%s pod failed, its ConfigMap saying nothing): %v", i, tc.role, err)
		}
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, tc.pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}

	// A component that failed, started again: the failure stays, and the
	// new start is told so instead of resetting it.
	own, ended, err := kpod.OpenOwn(ctx, podClient(c.Client), "default", "r-sut", owner, map[string]string{LabelRun: "r", LabelRole: RoleSUT}, map[string]string{"pipebench.dev/pod": "r-sut-x1"})
	if err != nil || ended {
		t.Fatalf("first open: ended %v, %v", ended, err)
	}
	own.Fail(fmt.Errorf("start the relay system under test: address already in use"))
	own2, ended, err := kpod.OpenOwn(ctx, podClient(c.Client), "default", "r-sut", owner, map[string]string{LabelRun: "r", LabelRole: RoleSUT}, map[string]string{"pipebench.dev/pod": "r-sut-x2"})
	if err != nil || !ended {
		t.Fatalf("the replacement reset the failure: ended %v, %v", ended, err)
	}
	got, _ := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "r-sut", metav1.GetOptions{})
	if got.Data[KeyState] != StateFailed || got.Annotations["pipebench.dev/pod"] != "r-sut-x1" || !strings.Contains(own2.Ended(ctx).Error(), "address already in use") {
		t.Errorf("after a replacement: %v %v", got.Data, got.Annotations)
	}
	tr, err := l.track(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.stop()
	if f, ok := l.waitReady(ctx, o, tr).(*ShardFailure); !ok || !f.SUT || f.Pod != "r-sut-x1" {
		t.Errorf("the launcher does not name the failed system under test's pod: %v", f)
	}
}
