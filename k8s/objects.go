// Package k8s runs a scenario's shards on Kubernetes: `pipebench k8s run`
// creates the scenario as a ConfigMap, a ServiceAccount with a Role for
// the workers, and an Indexed Job of N pods (or a DaemonSet, one generator
// per node) running `pipebench k8s worker`; it waits until every pod is
// ready, releases them together at a start time written into the
// ConfigMap, follows their progress, collects each shard's Result through
// the API server (gzip'd JSON in ConfigMaps the workers create, split in
// parts above the 1 MiB object limit) and deletes what it created, after
// success, failure or Ctrl-C. Merging the Results is the caller's (the
// same merge as `pipebench merge`).
//
// Objects, all labelled pipebench.dev/run=NAME:
//
//	ServiceAccount NAME, Role NAME, RoleBinding NAME   the workers' identity: ConfigMaps only
//	ConfigMap NAME                                    scenario.yaml, shards, duration, nodes, start-at
//	Service NAME-sink, Deployment NAME-sink           the in-cluster sink, when the scenario has one
//	Service NAME-sut, Deployment NAME-sut             the in-cluster system under test (headless Service)
//	Job NAME (Indexed, N completions) | DaemonSet NAME
//	ConfigMap NAME-shard-I[-part-K]                   made by worker I: state, progress, Result
//	ConfigMap NAME-sink                               made by the sink: endpoints, then its counts
//	ConfigMap NAME-sut                                made by the system under test: endpoints, instances
//
// With an in-cluster sink the shards send to its Service, and the sink
// streams what it receives back to the shard that sent it (feed.go), so
// each shard's Result holds its exact arrival accounts and the merged
// Result the whole run's. A system under test embedded in the scenario
// runs once, in a pod of its own (sutpod.go), and every shard sends to
// it and observes it, so the merged Result's pipeline KPIs are that one
// system's. `pipebench k8s collect NAME` does the
// launcher's part (release, follow, collect, clean up) for objects
// applied from `pipebench k8s manifests`.
package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/pipebench/pipebench"
)

// Labels and keys shared by the launcher and the workers.
const (
	LabelRun   = "pipebench.dev/run"
	LabelShard = "pipebench.dev/shard"
	LabelPart  = "pipebench.dev/part"
	// LabelRole tells the shards' pods (shard) from the in-cluster
	// sink's (sink).
	LabelRole = "pipebench.dev/role"
	RoleShard = "shard"
	RoleSink  = "sink"
	RoleSUT   = "sut"

	KeyScenario = "scenario.yaml"
	KeyShards   = "shards"
	KeyDuration = "duration"
	KeyNodes    = "nodes"
	KeyFile     = "file"
	KeyStartAt  = "start-at"
	// KeyEnded is written by the launcher once it collected every shard:
	// the in-cluster sink then writes its counts into its ConfigMap.
	KeyEnded = "ended-at"

	// EnvSink names, in a shard's pod, the in-cluster sink's host (its
	// Service's DNS name).
	EnvSink = "PIPEBENCH_K8S_SINK"
	// EnvSUT names, in a shard's pod, the in-cluster system under test's
	// host (its headless Service's DNS name).
	EnvSUT = "PIPEBENCH_K8S_SUT"

	KeyState    = "state"
	KeyMessage  = "message"
	KeySent     = "sent"
	KeyParts    = "parts"
	KeyResult   = "result.json.gz"
	StateWait   = "waiting"
	StateRun    = "running"
	StateDone   = "done"
	StateFailed = "failed"

	// DefaultImage is the image the pods run when --image is not given.
	DefaultImage = "ghcr.io/pipebench/pipebench:latest"
)

// Options describe one launch.
type Options struct {
	// Name names every object (a DNS label, at most 40 characters).
	Name      string
	Namespace string
	Image     string
	// Shards is the number of pods of the Indexed Job; with PerNode it is
	// the number of nodes (set by the launcher from Nodes).
	Shards  int
	PerNode bool
	// Nodes are the nodes of a per-node launch, in shard order.
	Nodes []string
	// Scenario is the scenario file's text, as written (its ${VAR}
	// references are resolved in the pods, from their environment).
	Scenario     []byte
	ScenarioFile string
	// Duration, if set, is passed to the workers' runs as --duration.
	Duration string
	// EnvFromSecret names Secrets whose keys become the workers'
	// environment variables (for ${VAR} credentials); only their names are
	// written into the objects.
	EnvFromSecret []string
	// Sink, if set, runs the scenario's sink in the cluster: a Deployment
	// NAME-sink of one pod (pipebench k8s sink) behind a ClusterIP Service
	// NAME-sink, which the shards send to (the scenario's system under
	// test, if embedded, exports to it) and which feeds the arrivals back
	// to the shards (FeedPort).
	Sink *SinkSpec
	// SUT, if set, runs the scenario's embedded system under test in the
	// cluster: a Deployment NAME-sut of one pod (pipebench k8s sut)
	// behind a headless Service NAME-sut, which every shard sends to and
	// observes, instead of one system per shard.
	SUT *SUTSpec
}

// SUTSpec describes the in-cluster system under test.
type SUTSpec struct {
	Type string // the scenario's sut type, for the pod's labels
}

// SinkSpec describes the in-cluster sink: the ports it receives on.
type SinkSpec struct {
	Type  string // the scenario's sink type, for the pod's labels
	Ports []SinkPort
}

// SinkPort is one port of the in-cluster sink.
type SinkPort struct {
	Name string // an IANA service name: http, grpc, ...
	Port int32
}

// SinkName names the in-cluster sink's Deployment, Service and ConfigMap.
func SinkName(run string) string { return run + "-sink" }

// SinkHost is the in-cluster sink's Service DNS name.
func SinkHost(run, namespace string) string { return SinkName(run) + "." + namespace + ".svc" }

// SUTName names the in-cluster system under test's Deployment, Service
// and ConfigMap.
func SUTName(run string) string { return run + "-sut" }

// SUTHost is the in-cluster system under test's Service DNS name.
func SUTHost(run, namespace string) string { return SUTName(run) + "." + namespace + ".svc" }

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate reports every problem of the options.
func (o *Options) Validate() error {
	var errs []error
	if !dnsLabel.MatchString(o.Name) || len(o.Name) > 40 {
		errs = append(errs, fmt.Errorf("--name %q: must be a DNS label of at most 40 characters (lower case letters, digits, '-')", o.Name))
	}
	if o.Namespace == "" || !dnsLabel.MatchString(o.Namespace) {
		errs = append(errs, fmt.Errorf("--namespace %q: must be a namespace name", o.Namespace))
	}
	if o.Image == "" {
		errs = append(errs, errors.New("--image: give the pipebench image the pods run"))
	}
	if o.PerNode {
		if len(o.Nodes) == 0 {
			errs = append(errs, errors.New("--per-node: the cluster has no schedulable node"))
		}
	} else if o.Shards < 1 || o.Shards > 1000 {
		errs = append(errs, fmt.Errorf("--shards %d: must be between 1 and 1000", o.Shards))
	}
	for _, s := range o.EnvFromSecret {
		if !dnsLabel.MatchString(s) && !regexp.MustCompile(`^[a-z0-9.-]+$`).MatchString(s) {
			errs = append(errs, fmt.Errorf("--env-from-secret %q: not a Secret name", s))
		}
	}
	if len(o.Scenario) == 0 {
		errs = append(errs, errors.New("the scenario is empty"))
	}
	if err := CheckNoLiteralSecrets(o.Scenario); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// N is the number of shards.
func (o *Options) N() int {
	if o.PerNode {
		return len(o.Nodes)
	}
	return o.Shards
}

func (o *Options) labels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "pipebench",
		"app.kubernetes.io/managed-by": "pipebench",
		LabelRun:                       o.Name,
	}
}

func (o *Options) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: o.labels()}
}

// Objects are what a launch creates, in creation order.
type Objects struct {
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
	ConfigMap      *corev1.ConfigMap
	Service        *corev1.Service    // the in-cluster sink's; nil without one
	Deployment     *appsv1.Deployment // the in-cluster sink's; nil without one
	SUTService     *corev1.Service    // the in-cluster system under test's (headless); nil without one
	SUTDeployment  *appsv1.Deployment // the in-cluster system under test's; nil without one
	Job            *batchv1.Job       // nil with PerNode
	DaemonSet      *appsv1.DaemonSet  // nil without
}

// Build returns the objects of a launch.
func Build(o Options) (*Objects, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	obj := &Objects{}
	obj.ServiceAccount = &corev1.ServiceAccount{ObjectMeta: o.meta(o.Name)}
	obj.Role = &rbacv1.Role{ObjectMeta: o.meta(o.Name), Rules: []rbacv1.PolicyRule{{
		// The workers read the run's ConfigMap (the scenario and the start
		// time) and write their own (state, progress, Result).
		APIGroups: []string{""}, Resources: []string{"configmaps"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch"},
	}}}
	obj.RoleBinding = &rbacv1.RoleBinding{ObjectMeta: o.meta(o.Name),
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: o.Name, Namespace: o.Namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: o.Name}}
	data := map[string]string{KeyScenario: string(o.Scenario), KeyShards: strconv.Itoa(o.N())}
	if f := filepath.Base(o.ScenarioFile); o.ScenarioFile != "" && f != "." && f != "/" {
		data[KeyFile] = f
	}
	if o.Duration != "" {
		data[KeyDuration] = o.Duration
	}
	if o.PerNode {
		var b strings.Builder
		for i, n := range o.Nodes {
			fmt.Fprintf(&b, "%s=%d\n", n, i+1)
		}
		data[KeyNodes] = b.String()
	}
	obj.ConfigMap = &corev1.ConfigMap{ObjectMeta: o.meta(o.Name), Data: data}

	podLabels := o.labels()
	podLabels[LabelRole] = RoleShard
	env := []corev1.EnvVar{
		{Name: "PIPEBENCH_K8S_RUN", Value: o.Name},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
	}
	if o.Sink != nil {
		env = append(env, corev1.EnvVar{Name: EnvSink, Value: SinkHost(o.Name, o.Namespace)})
	}
	if o.SUT != nil {
		env = append(env, corev1.EnvVar{Name: EnvSUT, Value: SUTHost(o.Name, o.Namespace)})
	}
	var envFrom []corev1.EnvFromSource
	for _, s := range o.EnvFromSecret {
		envFrom = append(envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
	}
	restart := corev1.RestartPolicyNever
	if o.PerNode {
		restart = corev1.RestartPolicyAlways // a DaemonSet's only choice; the workers stay up once done
	}
	grace := int64(15)
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
		Spec: corev1.PodSpec{
			ServiceAccountName:            o.Name,
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            "pipebench",
				Image:           o.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				// A worker that fails says why on its last lines.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Command:                  []string{"pipebench", "k8s", "worker"},
				Env:                      env,
				EnvFrom:                  envFrom,
				// Ready once the worker has read and compiled its shard of
				// the scenario and waits for the start time.
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pipebench", "k8s", "ready"}}},
					PeriodSeconds: 1, FailureThreshold: 1,
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr(true), AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if o.PerNode {
		obj.DaemonSet = &appsv1.DaemonSet{ObjectMeta: o.meta(o.Name), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: o.Name, LabelRole: RoleShard}},
			Template: tmpl,
		}}
	} else {
		n := int32(o.N())
		mode := batchv1.IndexedCompletion
		obj.Job = &batchv1.Job{ObjectMeta: o.meta(o.Name), Spec: batchv1.JobSpec{
			Completions: &n, Parallelism: &n, CompletionMode: &mode,
			BackoffLimit: ptr(int32(0)), // a failed shard fails the run: no retry with another start
			Template:     tmpl,
		}}
	}
	if o.Sink != nil {
		obj.Service, obj.Deployment = sinkObjects(o, tmpl.Spec, envFrom)
	}
	if o.SUT != nil {
		obj.SUTService, obj.SUTDeployment = sutObjects(o, tmpl.Spec, envFrom)
	}
	return obj, nil
}

// sinkObjects returns the in-cluster sink's Service and Deployment: one
// pod running pipebench k8s sink, ready once it listens.
func sinkObjects(o Options, shard corev1.PodSpec, envFrom []corev1.EnvFromSource) (*corev1.Service, *appsv1.Deployment) {
	var sports []corev1.ServicePort
	var cports []corev1.ContainerPort
	for _, p := range append(append([]SinkPort{}, o.Sink.Ports...), SinkPort{Name: "feed", Port: FeedPort}) {
		sports = append(sports, corev1.ServicePort{Name: p.Name, Port: p.Port, TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
		cports = append(cports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: corev1.ProtocolTCP})
	}
	svc := componentService(o, RoleSink, SinkName(o.Name), corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: sports})
	// One sink holds the run's account: never two at once.
	dep := componentDeployment(o, RoleSink, SinkName(o.Name), o.Sink.Type, shard, envFrom, nil)
	dep.Spec.Template.Spec.Containers[0].Ports = cports
	return svc, dep
}

// sutObjects returns the in-cluster system under test's Service and
// Deployment: one pod running pipebench k8s sut, ready once the system
// receives. The Service is headless (no cluster IP, no ports): its name
// resolves to the pod's address, and the system's ports, chosen when it
// starts, are published in ConfigMap NAME-sut.
func sutObjects(o Options, shard corev1.PodSpec, envFrom []corev1.EnvFromSource) (*corev1.Service, *appsv1.Deployment) {
	svc := componentService(o, RoleSUT, SUTName(o.Name), corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone})
	var env []corev1.EnvVar
	if o.Sink != nil {
		env = append(env, corev1.EnvVar{Name: EnvSink, Value: SinkHost(o.Name, o.Namespace)})
	}
	return svc, componentDeployment(o, RoleSUT, SUTName(o.Name), o.SUT.Type, shard, envFrom, env)
}

// componentService returns the Service of an in-cluster component (role),
// selecting its pod.
func componentService(o Options, role, name string, spec corev1.ServiceSpec) *corev1.Service {
	spec.Selector = map[string]string{LabelRun: o.Name, LabelRole: role}
	svc := &corev1.Service{ObjectMeta: o.meta(name), Spec: spec}
	svc.Labels[LabelRole] = role
	return svc
}

// componentDeployment returns the Deployment of an in-cluster component:
// one pod running pipebench k8s ROLE with the shards' image and security
// settings, its pod's address in POD_IP, replaced (never two at once)
// when it goes.
func componentDeployment(o Options, role, name, typ string, shard corev1.PodSpec, envFrom []corev1.EnvFromSource, env []corev1.EnvVar) *appsv1.Deployment {
	sel := map[string]string{LabelRun: o.Name, LabelRole: role}
	labels := o.labels()
	labels[LabelRole] = role
	if typ != "" {
		labels["pipebench.dev/"+role] = typ
	}
	spec := *shard.DeepCopy()
	spec.RestartPolicy = corev1.RestartPolicyAlways
	spec.Affinity = nil
	c := &spec.Containers[0]
	c.Name = role
	c.Command = []string{"pipebench", "k8s", role}
	c.EnvFrom = envFrom
	c.Env = append([]corev1.EnvVar{
		{Name: "PIPEBENCH_K8S_RUN", Value: o.Name},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}, env...)
	dep := &appsv1.Deployment{ObjectMeta: o.meta(name), Spec: appsv1.DeploymentSpec{
		Replicas: ptr(int32(1)),
		Selector: &metav1.LabelSelector{MatchLabels: sel},
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
	}}
	dep.Labels[LabelRole] = role
	return dep
}

// list returns the objects in creation order.
func (obj *Objects) list() []runtime.Object {
	out := []runtime.Object{obj.ServiceAccount, obj.Role, obj.RoleBinding, obj.ConfigMap}
	if obj.Service != nil {
		out = append(out, obj.Service, obj.Deployment)
	}
	if obj.SUTService != nil {
		out = append(out, obj.SUTService, obj.SUTDeployment)
	}
	if obj.Job != nil {
		out = append(out, obj.Job)
	}
	if obj.DaemonSet != nil {
		out = append(out, obj.DaemonSet)
	}
	return out
}

var kinds = map[string]schema.GroupVersionKind{
	"*v1.ServiceAccount": corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	"*v1.ConfigMap":      corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	"*v1.Role":           rbacv1.SchemeGroupVersion.WithKind("Role"),
	"*v1.RoleBinding":    rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	"*v1.Job":            batchv1.SchemeGroupVersion.WithKind("Job"),
	"*v1.DaemonSet":      appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
	"*v1.Service":        corev1.SchemeGroupVersion.WithKind("Service"),
	"*v1.Deployment":     appsv1.SchemeGroupVersion.WithKind("Deployment"),
}

// WriteYAML writes the objects as a YAML stream, one document each, in
// creation order (kubectl apply -f takes it as is).
func (obj *Objects) WriteYAML(w io.Writer) error {
	var buf bytes.Buffer
	for i, o := range obj.list() {
		gvk, ok := kinds[fmt.Sprintf("%T", o)]
		if !ok {
			return fmt.Errorf("no kind for %T", o)
		}
		o = o.DeepCopyObject()
		o.GetObjectKind().SetGroupVersionKind(gvk)
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(stripEmpty(b))
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// stripEmpty drops the empty creationTimestamp and status fields the API
// types marshal, which kubectl ignores but readers trip over.
func stripEmpty(b []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		if t == "creationTimestamp: null" || t == "status: {}" || t == "resources: {}" {
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}

// literal credential finders: a URL's password not written as a ${VAR}
// reference, and a ${VAR} reference alone.
var (
	urlPassword = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s"']+:([^@/\s"']+)@`)
	envRef      = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$`)
)

// CheckNoLiteralSecrets refuses a scenario that writes a credential as a
// literal: the scenario goes into a ConfigMap, readable by anyone who may
// read the namespace's ConfigMaps, and printed by `k8s manifests`.
// Credentials belong in ${VAR} references, resolved in the pods from a
// Secret (--env-from-secret). A credential is the value of a key that
// names one (password, token, secret_headers, ...; every string under
// it) and the password of a URL.
func CheckNoLiteralSecrets(scenario []byte) error {
	var doc any
	if err := yaml.Unmarshal(scenario, &doc); err != nil {
		return nil // the scenario's own parser reports it, with its line
	}
	var bad []string
	var walk func(path string, v any, secret bool)
	walk = func(path string, v any, secret bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(strings.TrimPrefix(path+"."+k, "."), e, secret || pipebench.IsSecretName(k))
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e, secret)
			}
		case string:
			if secret && x != "" && !envRef.MatchString(x) {
				bad = append(bad, path+" holds a literal credential")
			}
			for _, m := range urlPassword.FindAllStringSubmatch(x, -1) {
				if !envRef.MatchString(m[1]) {
					bad = append(bad, path+" is a URL with a literal password")
				}
			}
		}
	}
	walk("", doc, false)
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("the scenario would put credentials into a ConfigMap (%s): write them as ${VAR} and give the pods a Secret holding VAR with --env-from-secret NAME", strings.Join(bad, "; "))
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// pods is the number of pods of a launch: the shards' and the sink's.
func (o *Options) pods() int {
	n := o.N()
	if o.Sink != nil {
		n++
	}
	if o.SUT != nil {
		n++
	}
	return n
}
