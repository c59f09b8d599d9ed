package k8s

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/pipebench/pipebench/internal/testkit/suitetest"
)

// Names come from the scenario and the time, and are valid object names
// whatever the scenario is called.
func TestDefaultName(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 15, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"quickstart":                         "quickstart-20261126-101500",
		"My Scenario!":                       "my-scenario-20261126-101500",
		"":                                   "pipebench-20261126-101500",
		"42 things":                          "pipebench-42-things-20261126-101500",
		strings.Repeat("very-long-name-", 5): "very-long-name-very-long-name-20261126-101500"[:24] + "-20261126-101500",
	} {
		got := DefaultName(in, at)
		o := Options{Name: got}
		if got != want || !dnsLabel.MatchString(got) || len(got) > 40 {
			t.Errorf("DefaultName(%q) = %q, want %q (%v)", in, got, want, o.Validate())
		}
	}
}

// Requests and limits are sized from the plan's peak rate and
// connections, per shard, and the flags' values win (0 drops one).
func TestPrepareSizesPods(t *testing.T) {
	reg := suitetest.Registry(t)
	scen := []byte(`name: sized
target: {driver: http, url: "http://sink.load.svc:8080/", connections: 64}
phases:
  - {name: a, duration: 10s, rate: 10000/s}
  - {name: b, steps: [{rate: 20000/s, duration: 5s}, {rate: 40000/s, duration: 5s}]}
`)
	p, err := Prepare(reg, "sized.yaml", scen, Setup{Shards: 4, Namespace: "load", Image: "i", Wait: time.Minute}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.Size(4)
	ps := p.Options.Pods
	// Peak 40,000/s over 4 shards: 10,000/s each, 16 connections each.
	cpu, mem := ps.Requests[corev1.ResourceCPU], ps.Requests[corev1.ResourceMemory]
	if cpu.MilliValue() != 600 || mem.Value() != (128+320+16)<<20 {
		t.Errorf("requests %v %v, want 600m and 464Mi", cpu.String(), mem.String())
	}
	if l := ps.Limits[corev1.ResourceCPU]; l.MilliValue() != 1200 {
		t.Errorf("cpu limit %s", l.String())
	}
	if c := ps.SinkRequests[corev1.ResourceCPU]; c.MilliValue() != 2100 {
		t.Errorf("the in-cluster components' cpu request %s: want the whole 40,000/s's 2100m", c.String())
	}
	// The deadline: the plan's 20 s and its drain, the waits and the
	// margin.
	if want := 20*time.Second + p.Plan.Drain.D() + time.Minute + DeadlineMargin; p.Options.Deadline != want {
		t.Errorf("deadline %s, want %s", p.Options.Deadline, want)
	}
	p2, _ := Prepare(reg, "sized.yaml", scen, Setup{Shards: 4, Pods: PodSettings{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("0")}}}, time.Now())
	p2.Size(4)
	if r := p2.Options.Pods.Requests; len(r) != 1 || r.Cpu().String() != "2" {
		t.Errorf("given requests %v: want cpu 2 alone", r)
	}
	if _, err := Prepare(reg, "sized.yaml", scen, Setup{Shards: 1, Deadline: time.Second}, time.Now()); err == nil {
		t.Error("a deadline shorter than the run passed")
	}
}

// The placement flags and the pod patch reach every pod template (the
// shards', the sink's, the system under test's); a patch that is no pod
// template is refused at once.
func TestPodSettingsInEveryTemplate(t *testing.T) {
	tol, err := ParseToleration("dedicated=load:NoSchedule")
	if err != nil || tol.Operator != corev1.TolerationOpEqual || tol.Value != "load" {
		t.Fatalf("%+v %v", tol, err)
	}
	for _, bad := range []string{"=x:NoSchedule", "k:Sometimes"} {
		if _, err := ParseToleration(bad); err == nil {
			t.Errorf("toleration %q passed", bad)
		}
	}
	aff, err := ParseAffinity([]byte("nodeAffinity:\n  requiredDuringSchedulingIgnoredDuringExecution:\n    nodeSelectorTerms:\n    - matchExpressions: [{key: pool, operator: In, values: [load]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseAffinity([]byte("nodeAfinity: {}\n")); err == nil {
		t.Error("a misspelt affinity passed")
	}
	patch := []byte("metadata:\n  labels: {team: perf}\nspec:\n  priorityClassName: load-tests\n  imagePullSecrets: [{name: regcred}]\n")
	o := Options{Name: "p", Namespace: "load", Image: "i", Shards: 2, Scenario: []byte(testScenario),
		Sink: &SinkSpec{Type: "http", Ports: []SinkPort{{Name: "http", Port: 8080}}}, SUT: &SUTSpec{Type: "relay"},
		Pods:     PodSettings{NodeSelector: map[string]string{"pool": "load"}, Tolerations: []corev1.Toleration{tol}, Affinity: aff, Patch: patch, MetricsPort: 9464},
		Deadline: 10 * time.Minute, TTL: time.Hour, PodMonitor: true}
	obj, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct {
		what string
		spec *corev1.PodTemplateSpec
		job  interface{ GetName() string }
	}{{"shards", &obj.Job.Spec.Template, obj.Job}, {"sink", &obj.SinkJob.Spec.Template, obj.SinkJob}, {"sut", &obj.SUTJob.Spec.Template, obj.SUTJob}} {
		s := j.spec.Spec
		if s.NodeSelector["pool"] != "load" || len(s.Tolerations) != 1 || s.Affinity == nil || s.PriorityClassName != "load-tests" ||
			len(s.ImagePullSecrets) != 1 || j.spec.Labels["team"] != "perf" || j.spec.Labels[LabelRun] != "p" {
			t.Errorf("%s: the settings did not reach the pod template: %+v %v", j.what, s, j.spec.Labels)
		}
	}
	if d := obj.Job.Spec.ActiveDeadlineSeconds; d == nil || *d != 600 || *obj.SinkJob.Spec.TTLSecondsAfterFinished != 3600 {
		t.Errorf("deadline %v, ttl %v", d, obj.SinkJob.Spec.TTLSecondsAfterFinished)
	}
	if a := obj.Job.Spec.Template.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9464" {
		t.Errorf("scrape annotations %v", a)
	}
	if obj.PodMonitor == nil || obj.PodMonitor.GetKind() != "PodMonitor" {
		t.Fatalf("no PodMonitor")
	}
	o.Pods.Patch = []byte("spec:\n  containerz: []\n")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--pod-patch") {
		t.Errorf("a patch that is no pod template: %v", err)
	}
}

// The kustomize base holds the very documents of the manifests, one file
// each, listed by its kustomization.yaml.
func TestKustomizeBase(t *testing.T) {
	o := Options{Name: "k", Namespace: "load", Image: "i", Shards: 2, Scenario: []byte(testScenario),
		Sink: &SinkSpec{Type: "http", Ports: []SinkPort{{Name: "http", Port: 8080}}}, Pods: PodSettings{MetricsPort: 9464}, PodMonitor: true}
	obj, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := obj.WriteKustomize(dir); err != nil {
		t.Fatal(err)
	}
	var k struct {
		Kind      string
		Resources []string
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil || yaml.Unmarshal(data, &k) != nil || k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: %v\n%s", err, data)
	}
	docs, _ := obj.documents()
	if len(k.Resources) != len(docs) {
		t.Fatalf("%d resources, %d objects", len(k.Resources), len(docs))
	}
	var joined []string
	for _, f := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		joined = append(joined, string(b))
	}
	var stream strings.Builder
	obj.WriteYAML(&stream)
	if strings.Join(joined, "---\n") != stream.String() {
		t.Errorf("the base's files are not the manifests' documents in order")
	}
	if !strings.HasSuffix(k.Resources[len(k.Resources)-1], "-podmonitor-k.yaml") {
		t.Errorf("resources %v", k.Resources)
	}
}
