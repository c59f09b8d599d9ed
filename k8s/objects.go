// Package k8s runs a scenario's shards on Kubernetes: `pipebench k8s run`
// creates the scenario as a ConfigMap, a ServiceAccount with a Role for
// the workers, and an Indexed Job of N pods (or a DaemonSet, one generator
// per node) running `pipebench-load k8s worker`; it waits until every pod is
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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/pipebench/pipebench"
)

// The programs of the image (tools/image) that the pods run.
const (
	// ProgramLoad, the load generator alone, runs the shards and the
	// in-cluster sink: they map only what generating load needs.
	ProgramLoad = "pipebench-load"
	// ProgramFull (pipebench-k8s, named pipebench in the image) runs the
	// system under test's pod, and every pod of a scenario that embeds a
	// system under test (sut:), which pipebench-load cannot read.
	ProgramFull = "pipebench"
)

const (
	// ImageRepository is where the release workflow pushes the image of
	// each tagged version (.github/workflows/release.yml).
	ImageRepository = "ghcr.io/pipebench/pipebench"
	// LoadImageRepository is where it pushes the load generator's image
	// (pipebench-load alone: tools/image build -load).
	LoadImageRepository = "ghcr.io/pipebench/pipebench-load"
)

// Options describe one launch.
type Options struct {
	// Name names every object (a DNS label, at most 40 characters).
	Name      string
	Namespace string
	// Image is the image of the pods that run ProgramFull; LoadImage, if
	// set, the image of those that run ProgramLoad (the shards and the
	// in-cluster sink, unless the scenario embeds a system under test),
	// else they run from Image, which holds pipebench-load too.
	Image, LoadImage string
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
	// NAME-sink of one pod (pipebench-load k8s sink) behind a ClusterIP Service
	// NAME-sink, which the shards send to (the scenario's system under
	// test, if embedded, exports to it) and which feeds the arrivals back
	// to the shards (FeedPort).
	Sink *SinkSpec
	// SUT, if set, runs the scenario's embedded system under test in the
	// cluster: a Job NAME-sut of one pod (pipebench k8s sut) behind a
	// headless Service NAME-sut, which every shard sends to and observes,
	// instead of one system per shard.
	SUT *SUTSpec
	// EmbedsSUT tells that the scenario embeds a system under test (sut:),
	// in its own pod (SUT) or in each shard's: every pod then runs
	// ProgramFull, which carries it.
	EmbedsSUT bool
	// Pods shape every pod for the cluster: resources, placement, a
	// patch, the shards' metrics port.
	Pods PodSettings
	// Deadline, if set, is every Job's activeDeadlineSeconds: the Job,
	// and with it its pods, ends then whatever happens (Prepare sets it
	// from the plan's length and the launch's waits, plus a margin).
	Deadline time.Duration
	// TTL, if set, is every Job's ttlSecondsAfterFinished: a finished Job
	// is deleted that long after, with its pods (objects applied by a
	// GitOps tool and never collected do not stay forever).
	TTL time.Duration
	// ProgressEvery is how often each shard writes its progress (0:
	// DefaultProgressEvery of the shards).
	ProgressEvery time.Duration
	// PodMonitor adds a Prometheus Operator PodMonitor selecting the
	// shards' metrics port (Pods.MetricsPort must be set).
	PodMonitor bool
}

// PodSettings shape the pods of a launch for a real cluster.
type PodSettings struct {
	// Requests and Limits are the shards' containers' (DefaultResources
	// sizes them from the plan); SinkRequests and SinkLimits the in-cluster
	// sink's and system under test's, which take every shard's load.
	Requests, Limits         corev1.ResourceList
	SinkRequests, SinkLimits corev1.ResourceList
	// NodeSelector, Tolerations and Affinity place every pod (load
	// generators are kept off the nodes under test this way).
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	Affinity     *corev1.Affinity
	// Patch, if set, is a strategic merge patch (YAML or JSON) of a pod
	// template (metadata and spec), applied to every pod's, as kubectl
	// patch applies one: anything the flags do not cover (a priority
	// class, volumes, a sidecar, an image pull secret).
	Patch []byte
	// MetricsPort, if not 0, is the port each shard serves the run's
	// metrics on (/metrics on the pod's address), with the
	// prometheus.io/scrape annotations on its pod.
	MetricsPort int
	// MetricsLinger, if set, is how long each shard waits, its run over,
	// for a last scrape of its final values before it reports its Result
	// (and its pod may go): 0 waits for none, and a scraper can miss the
	// last values.
	MetricsLinger time.Duration
}

// SUTSpec describes the in-cluster system under test.
type SUTSpec struct {
	Type string // the scenario's sut type, for the pod's labels
}

// SinkHost is the in-cluster sink's Service DNS name.
func SinkHost(run, namespace string) string { return SinkName(run) + "." + namespace + ".svc" }

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
	if o.Deadline < 0 || o.TTL < 0 || o.ProgressEvery < 0 {
		errs = append(errs, errors.New("--active-deadline, --ttl and the progress period must not be negative"))
	}
	if p := o.Pods.MetricsPort; p < 0 || p > 65535 || p == FeedPort || (p > 0 && p <= 1024) {
		errs = append(errs, fmt.Errorf("--metrics-port %d: must be above 1024 (the pods run as a non-root user) and not %d (the arrivals feed)", p, FeedPort))
	}
	if o.PodMonitor && o.Pods.MetricsPort == 0 {
		errs = append(errs, errors.New("--pod-monitor needs --metrics-port: the PodMonitor selects the shards' metrics port"))
	}
	if len(o.Pods.Patch) > 0 {
		if _, err := patchTemplate(corev1.PodTemplateSpec{}, o.Pods.Patch); err != nil {
			errs = append(errs, fmt.Errorf("--pod-patch: %w", err))
		}
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
	// ServiceAccounts, Roles and RoleBindings are one identity per kind
	// of pod: the shards' (NAME), the in-cluster sink's (NAME-sink) and
	// system under test's (NAME-sut), each allowed only what its pods do
	// (see roleRules).
	ServiceAccounts []*corev1.ServiceAccount
	Roles           []*rbacv1.Role
	RoleBindings    []*rbacv1.RoleBinding
	ConfigMap       *corev1.ConfigMap
	Service         *corev1.Service // the in-cluster sink's; nil without one
	SinkJob         *batchv1.Job    // the in-cluster sink's; nil without one
	SUTService      *corev1.Service // the in-cluster system under test's (headless); nil without one
	SUTJob          *batchv1.Job    // the in-cluster system under test's; nil without one
	Job             *batchv1.Job    // the shards'; nil with PerNode
	DaemonSet       *appsv1.DaemonSet
	// PodMonitor is the Prometheus Operator's PodMonitor of the shards'
	// metrics, with PodMonitor.
	PodMonitor *unstructured.Unstructured
}

// Build returns the objects of a launch.
func Build(o Options) (*Objects, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	obj := &Objects{}
	obj.identity(o, o.Name, roleRules(o, RoleShard))
	if o.Sink != nil {
		obj.identity(o, SinkName(o.Name), roleRules(o, RoleSink))
	}
	if o.SUT != nil {
		obj.identity(o, SUTName(o.Name), roleRules(o, RoleSUT))
	}
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
	if o.ProgressEvery > 0 {
		data[KeyProgressEvery] = o.ProgressEvery.String()
	}
	if o.Pods.MetricsPort > 0 {
		data[KeyMetricsPort] = strconv.Itoa(o.Pods.MetricsPort)
		if o.Pods.MetricsLinger > 0 {
			data[KeyMetricsLinger] = o.Pods.MetricsLinger.String()
		}
	}
	obj.ConfigMap = &corev1.ConfigMap{ObjectMeta: o.meta(o.Name), Data: data}

	env := podEnv(o.Name, true)
	env = append(env, corev1.EnvVar{Name: EnvNode, ValueFrom: fieldRef("spec.nodeName")})
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
	tmpl := o.template(RoleShard, o.Name, o.program(), "worker", env, envFrom, o.Pods.Requests, o.Pods.Limits)
	// Ready once the worker has read and compiled its shard of the
	// scenario and waits for the start time.
	tmpl.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{o.program(), "k8s", "ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	if p := o.Pods.MetricsPort; p > 0 {
		tmpl.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(p), "prometheus.io/path": "/metrics"}
		tmpl.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(p), Protocol: corev1.ProtocolTCP}}
	}
	if o.PerNode {
		// A DaemonSet's only choice; the workers stay up once done.
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	tmpl, err := patchTemplate(tmpl, o.Pods.Patch)
	if err != nil {
		return nil, fmt.Errorf("--pod-patch: %w", err)
	}
	if o.PerNode {
		obj.DaemonSet = &appsv1.DaemonSet{ObjectMeta: o.meta(o.Name), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: o.Name, LabelRole: RoleShard}},
			Template: tmpl,
		}}
	} else {
		obj.Job = o.job(o.Name, int32(o.N()), tmpl)
		mode := batchv1.IndexedCompletion
		obj.Job.Spec.CompletionMode = &mode
	}
	if o.Sink != nil {
		if obj.Service, obj.SinkJob, err = sinkObjects(o, envFrom); err != nil {
			return nil, err
		}
	}
	if o.SUT != nil {
		if obj.SUTService, obj.SUTJob, err = sutObjects(o, envFrom); err != nil {
			return nil, err
		}
	}
	if o.PodMonitor {
		obj.PodMonitor = podMonitor(o)
	}
	return obj, nil
}

// identity adds the ServiceAccount, Role and RoleBinding named name.
func (obj *Objects) identity(o Options, name string, rules []rbacv1.PolicyRule) {
	obj.ServiceAccounts = append(obj.ServiceAccounts, &corev1.ServiceAccount{ObjectMeta: o.meta(name)})
	obj.Roles = append(obj.Roles, &rbacv1.Role{ObjectMeta: o.meta(name), Rules: rules})
	obj.RoleBindings = append(obj.RoleBindings, &rbacv1.RoleBinding{ObjectMeta: o.meta(name),
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: o.Namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}})
}

// roleRules are what the pods of one role do with the API, and nothing
// more, every object by name where the verb allows it:
//
//   - every pod reads the run's ConfigMap (get, and list and watch
//     restricted to its name by a field selector, which resourceNames
//     allows), and its own ConfigMap it creates and updates;
//   - a shard also reads the in-cluster sink's and system under test's
//     ConfigMaps (their endpoints), and the system under test the sink's;
//   - create cannot be restricted by name (the API server authorizes it
//     before the object's name is known): a pod may create ConfigMaps,
//     which is how the shards' ConfigMaps (NAME-shard-I) and their
//     Result parts (NAME-shard-I-ID-part-K, created only, never updated,
//     so that no update right is needed on unknown names) come to be.
//
// No pod may read or change anything else: no Secret, no other
// ConfigMap, no other kind of object.
func roleRules(o Options, role string) []rbacv1.PolicyRule {
	read := []string{o.Name}
	var own []string
	switch role {
	case RoleShard:
		if o.Sink != nil {
			read = append(read, SinkName(o.Name))
		}
		if o.SUT != nil {
			read = append(read, SUTName(o.Name))
		}
		for i := 1; i <= o.N(); i++ {
			own = append(own, ShardName(o.Name, i))
		}
	case RoleSink:
		own = []string{SinkName(o.Name)}
	case RoleSUT:
		if o.Sink != nil {
			read = append(read, SinkName(o.Name))
		}
		own = []string{SUTName(o.Name)}
	}
	cm := []string{"configmaps"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: cm, Verbs: []string{"get", "list", "watch"}, ResourceNames: read},
		{APIGroups: []string{""}, Resources: cm, Verbs: []string{"get", "update", "patch"}, ResourceNames: own},
		{APIGroups: []string{""}, Resources: cm, Verbs: []string{"create"}},
	}
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

// podEnv is what every pod of the run reads (PodFromEnv); ip adds the
// pod's address.
func podEnv(run string, ip bool) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: EnvRun, Value: run},
		{Name: EnvNamespace, ValueFrom: fieldRef("metadata.namespace")},
		{Name: EnvPod, ValueFrom: fieldRef("metadata.name")},
	}
	if ip {
		env = append(env, corev1.EnvVar{Name: EnvIP, ValueFrom: fieldRef("status.podIP")})
	}
	return env
}

// program is the program of the image that runs the shards and the
// in-cluster sink: ProgramLoad, or ProgramFull for a scenario that embeds
// a system under test.
func (o *Options) program() string {
	if o.EmbedsSUT {
		return ProgramFull
	}
	return ProgramLoad
}

// image is the image a pod running program starts from.
func (o *Options) image(program string) string {
	if program == ProgramLoad && o.LoadImage != "" {
		return o.LoadImage
	}
	return o.Image
}

// template is the pod template of one role: PROGRAM k8s COMMAND with its
// own service account, the placement and security settings every pod
// shares, and the resources given.
func (o *Options) template(role, account, program, command string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource, req, lim corev1.ResourceList) corev1.PodTemplateSpec {
	labels := o.labels()
	labels[LabelRole] = role
	grace := int64(15)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			ServiceAccountName:            account,
			AutomountServiceAccountToken:  ptr(true), // every pod reports through its ConfigMap
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			NodeSelector:                  o.Pods.NodeSelector,
			Tolerations:                   o.Pods.Tolerations,
			Affinity:                      o.Pods.Affinity,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            role,
				Image:           o.image(program),
				ImagePullPolicy: corev1.PullIfNotPresent,
				// A pod that fails says why on its last lines.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Command:                  []string{program, "k8s", command},
				Env:                      env,
				EnvFrom:                  envFrom,
				Resources:                corev1.ResourceRequirements{Requests: req, Limits: lim},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr(true), AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// job is a Job of n pods of tmpl, none retried (a failed pod fails the
// run: no retry with another start), ended at the deadline and deleted
// TTL after it finished.
func (o *Options) job(name string, n int32, tmpl corev1.PodTemplateSpec) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: o.meta(name), Spec: batchv1.JobSpec{
		Completions: &n, Parallelism: &n, BackoffLimit: ptr(int32(0)), Template: tmpl,
	}}
	if o.Deadline > 0 {
		j.Spec.ActiveDeadlineSeconds = ptr(int64(o.Deadline.Round(time.Second) / time.Second))
	}
	if o.TTL > 0 {
		j.Spec.TTLSecondsAfterFinished = ptr(int32(o.TTL.Round(time.Second) / time.Second))
	}
	if tmpl.Labels[LabelRole] != RoleShard {
		j.Labels[LabelRole] = tmpl.Labels[LabelRole]
	}
	return j
}

// patchTemplate applies a strategic merge patch (YAML or JSON) to a pod
// template.
func patchTemplate(t corev1.PodTemplateSpec, patch []byte) (corev1.PodTemplateSpec, error) {
	if len(bytes.TrimSpace(patch)) == 0 {
		return t, nil
	}
	pj, err := yaml.YAMLToJSON(patch)
	if err != nil {
		return t, fmt.Errorf("not YAML or JSON: %w", err)
	}
	orig, err := json.Marshal(t)
	if err != nil {
		return t, err
	}
	out, err := strategicpatch.StrategicMergePatch(orig, pj, corev1.PodTemplateSpec{})
	if err != nil {
		return t, fmt.Errorf("not a patch of a pod template (metadata, spec): %w", err)
	}
	var got corev1.PodTemplateSpec
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		return t, fmt.Errorf("not a patch of a pod template (metadata, spec): %w", err)
	}
	return got, nil
}

// sinkObjects returns the in-cluster sink's Service and Job: one pod
// running pipebench-load k8s sink, ready once it listens, done once it wrote
// its counts after the run.
func sinkObjects(o Options, envFrom []corev1.EnvFromSource) (*corev1.Service, *batchv1.Job, error) {
	var sports []corev1.ServicePort
	var cports []corev1.ContainerPort
	for _, p := range append(append([]SinkPort{}, o.Sink.Ports...), SinkPort{Name: "feed", Port: FeedPort}) {
		sports = append(sports, corev1.ServicePort{Name: p.Name, Port: p.Port, TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
		cports = append(cports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: corev1.ProtocolTCP})
	}
	svc := componentService(o, RoleSink, SinkName(o.Name), corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: sports})
	job, err := componentJob(o, RoleSink, SinkName(o.Name), o.Sink.Type, envFrom, nil)
	if err != nil {
		return nil, nil, err
	}
	job.Spec.Template.Spec.Containers[0].Ports = cports
	return svc, job, nil
}

// sutObjects returns the in-cluster system under test's Service and Job:
// one pod running pipebench k8s sut, ready once the system receives,
// done once the run ended. The Service is headless (no cluster IP, no
// ports): its name resolves to the pod's address, and the system's ports,
// chosen when it starts, are published in ConfigMap NAME-sut.
func sutObjects(o Options, envFrom []corev1.EnvFromSource) (*corev1.Service, *batchv1.Job, error) {
	svc := componentService(o, RoleSUT, SUTName(o.Name), corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone})
	var env []corev1.EnvVar
	if o.Sink != nil {
		env = append(env, corev1.EnvVar{Name: EnvSink, Value: SinkHost(o.Name, o.Namespace)})
	}
	job, err := componentJob(o, RoleSUT, SUTName(o.Name), o.SUT.Type, envFrom, env)
	return svc, job, err
}

// componentService returns the Service of an in-cluster component (role),
// selecting its pod.
func componentService(o Options, role, name string, spec corev1.ServiceSpec) *corev1.Service {
	spec.Selector = map[string]string{LabelRun: o.Name, LabelRole: role}
	svc := &corev1.Service{ObjectMeta: o.meta(name), Spec: spec}
	svc.Labels[LabelRole] = role
	return svc
}

// componentJob returns the Job of an in-cluster component: one pod
// running PROGRAM k8s ROLE under its own service account (the system
// under test's pod ProgramFull, the sink's the shards' program), with the
// placement and security settings of the shards, its pod's address in
// POD_IP. A pod that fails is not replaced: one component holds the run's
// account, and its failure is the run's.
func componentJob(o Options, role, name, typ string, envFrom []corev1.EnvFromSource, env []corev1.EnvVar) (*batchv1.Job, error) {
	prog := o.program()
	if role == RoleSUT {
		prog = ProgramFull
	}
	tmpl := o.template(role, name, prog, role, append(podEnv(o.Name, true), env...), envFrom, o.Pods.SinkRequests, o.Pods.SinkLimits)
	if typ != "" {
		tmpl.Labels["pipebench.dev/"+role] = typ
	}
	tmpl, err := patchTemplate(tmpl, o.Pods.Patch)
	if err != nil {
		return nil, err
	}
	return o.job(name, 1, tmpl), nil
}

// podMonitor is the Prometheus Operator's PodMonitor of the shards'
// metrics port.
func podMonitor(o Options) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PodMonitor",
		"metadata": map[string]any{
			"name": o.Name, "namespace": o.Namespace,
			"labels": map[string]any{"app.kubernetes.io/name": "pipebench", "app.kubernetes.io/managed-by": "pipebench", LabelRun: o.Name},
		},
		"spec": map[string]any{
			"selector":            map[string]any{"matchLabels": map[string]any{LabelRun: o.Name, LabelRole: RoleShard}},
			"podMetricsEndpoints": []any{map[string]any{"port": "metrics", "path": "/metrics", "interval": "5s"}},
		},
	}}
	return u
}

// PodMonitorResource is the PodMonitor's API resource.
var PodMonitorResource = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}

// list returns the objects in creation order.
func (obj *Objects) list() []runtime.Object {
	var out []runtime.Object
	for i := range obj.ServiceAccounts {
		out = append(out, obj.ServiceAccounts[i], obj.Roles[i], obj.RoleBindings[i])
	}
	out = append(out, obj.ConfigMap)
	if obj.Service != nil {
		out = append(out, obj.Service, obj.SinkJob)
	}
	if obj.SUTService != nil {
		out = append(out, obj.SUTService, obj.SUTJob)
	}
	if obj.Job != nil {
		out = append(out, obj.Job)
	}
	if obj.DaemonSet != nil {
		out = append(out, obj.DaemonSet)
	}
	if obj.PodMonitor != nil {
		out = append(out, obj.PodMonitor)
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
}

// document is one object as YAML.
type document struct {
	kind, name string
	yaml       []byte
}

// documents returns the objects as YAML documents, in creation order.
func (obj *Objects) documents() ([]document, error) {
	var out []document
	for _, o := range obj.list() {
		o = o.DeepCopyObject()
		if _, ok := o.(*unstructured.Unstructured); !ok {
			gvk, ok := kinds[fmt.Sprintf("%T", o)]
			if !ok {
				return nil, fmt.Errorf("no kind for %T", o)
			}
			o.GetObjectKind().SetGroupVersionKind(gvk)
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		m, _ := meta.Accessor(o)
		out = append(out, document{kind: strings.ToLower(o.GetObjectKind().GroupVersionKind().Kind), name: m.GetName(), yaml: stripEmpty(b)})
	}
	return out, nil
}

// WriteYAML writes the objects as a YAML stream, one document each, in
// creation order (kubectl apply -f takes it as is).
func (obj *Objects) WriteYAML(w io.Writer) error {
	docs, err := obj.documents()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(d.yaml)
	}
	_, err = w.Write(buf.Bytes())
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

// envRef finds ${VAR} and ${VAR:-default} references (as the scenario
// decoder resolves them) and $$, an escaped '$'.
var envRef = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// authScheme is what may stand before a credential's reference in a
// credential's value: "Bearer ${TOKEN}".
var authScheme = regexp.MustCompile(`(?i)^\s*(bearer|basic|token|apikey|api-key|digest|negotiate|dsn)?\s*$`)

// CheckNoLiteralSecrets refuses a scenario that writes a credential as a
// literal anywhere pipebench would hide it in a Result: the scenario goes
// into a ConfigMap, readable by anyone who may read the namespace's
// ConfigMaps, and printed by `k8s manifests`. Credentials belong in
// ${VAR} references without a default, resolved in the pods from a
// Secret (--env-from-secret). What counts as a credential is what the
// root package redacts, judged on each string of the scenario as the
// pods would read it with no variable set (a default in ${VAR:-default}
// is a literal): the value under a key that names a credential
// (pipebench.IsSecretName: password, token, secret_headers, ...) or a
// header's value whose name is not on the root package's list of headers
// known to carry no secret (pipebench.SafeHeader); any text
// pipebench.RedactText changes (a URL's password, a NATS token URL's
// token, a query parameter's value but for a few known harmless); and the
// default of a variable named like one (${API_TOKEN:-...}). The error
// names where, never what.
func CheckNoLiteralSecrets(scenario []byte) error {
	var doc any
	if err := yaml.Unmarshal(scenario, &doc); err != nil {
		return nil // the scenario's own parser reports it, with its line
	}
	var bad []string
	var walk func(path, key string, v any, secret bool)
	walk = func(path, key string, v any, secret bool) {
		switch x := v.(type) {
		case map[string]any:
			headers := pipebench.IsHeadersKey(key)
			for k, e := range x {
				p := strings.TrimPrefix(path+"."+k, ".")
				if literalSecret(k, false) != "" {
					bad = append(bad, p+": the key itself "+literalSecret(k, false))
				}
				walk(p, k, e, secret || pipebench.IsSecretName(k) || headers && !pipebench.SafeHeader(k))
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), key, e, secret)
			}
		case string:
			if why := literalSecret(x, secret); why != "" {
				bad = append(bad, path+" "+why)
			}
		}
	}
	walk("", "", doc, false)
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("the scenario would put credentials into a ConfigMap (%s): write them as ${VAR} with no default and give the pods a Secret holding VAR with --env-from-secret NAME", strings.Join(bad, "; "))
	}
	return nil
}

// literalSecret says why s, a string of the scenario (under a key naming
// a credential when secret), holds a literal credential; "" when it does
// not.
func literalSecret(s string, secret bool) string {
	// s as a pod reads it with no variable set, each reference without a
	// default standing as pipebench.Redacted: where RedactText would
	// hide a reference, it hides Redacted, which changes nothing.
	var defaulted []string
	filled := envRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sub := envRef.FindStringSubmatch(m)
		if sub[2] == "" {
			return pipebench.Redacted
		}
		if sub[3] != "" && pipebench.IsSecretName(sub[1]) {
			defaulted = append(defaulted, sub[1])
		}
		return sub[3]
	})
	switch {
	case len(defaulted) > 0:
		return "gives the credential " + strings.Join(defaulted, ", ") + " a default"
	case pipebench.RedactText(filled) != filled:
		return "holds a credential in a URL (a password, a token, a query parameter)"
	case secret && !authScheme.MatchString(strings.ReplaceAll(filled, pipebench.Redacted, "")):
		return "holds a literal credential"
	}
	return ""
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
