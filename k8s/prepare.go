package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
	"github.com/pipebench/pipebench/k8s/pod"
)

// Setup is what a person chooses for a launch besides the scenario: the
// flags of `pipebench k8s run` and `k8s manifests`.
type Setup struct {
	// Name names every object; "" derives one from the scenario's name and
	// the time (DefaultName).
	Name      string
	Namespace string
	// Image and LoadImage are Options'.
	Image, LoadImage string
	// Shards is the number of generator pods; ShardsSet says the person
	// gave it (it goes against PerNode).
	Shards    int
	ShardsSet bool
	PerNode   bool
	// Duration, if set, scales every phase so the load lasts this long.
	Duration      time.Duration
	EnvFromSecret []string
	// SinkPerShard and SUTPerShard keep the sink and the system under
	// test in each shard's pod instead of one in the cluster.
	SinkPerShard, SUTPerShard bool
	// Pods are the pods' settings; resources left empty are sized from
	// the plan (DefaultResources). A resource given as 0 is left out.
	Pods PodSettings
	// Wait is how long the launch may wait for every pod to be ready and
	// then for the start (Prepare adds it to the Jobs' deadline).
	Wait time.Duration
	// Deadline overrides the Jobs' activeDeadlineSeconds (0: the plan's
	// length and drain, plus Wait, plus DeadlineMargin).
	Deadline time.Duration
	// TTL is the Jobs' ttlSecondsAfterFinished (0: none).
	TTL        time.Duration
	PodMonitor bool
}

// DeadlineMargin is what a Job's deadline leaves beyond the plan's length
// and drain and the launch's waits: image pulls, start-up, the Result's
// upload.
const DeadlineMargin = 5 * time.Minute

// Prepared is a launch ready to go: its options, and the plan it runs.
type Prepared struct {
	Options Options
	Plan    pipebench.Plan
	// Length is the load's planned length plus its drain.
	Length time.Duration
}

// Prepare reads the scenario (its text, under its file name) with the
// plug-ins of reg and checks it and the setup: it returns the launch's
// options, or a usage error saying what to change. now names the run
// when the setup does not.
func Prepare(reg *pipebench.Registry, file string, data []byte, s Setup, now time.Time) (*Prepared, error) {
	dur := ""
	if s.Duration > 0 {
		dur = s.Duration.String()
	}
	plan, err := pod.CompilePlan(reg, file, data, dur)
	if err != nil {
		return nil, err
	}
	if s.PerNode && s.ShardsSet {
		return nil, pipebench.UsageError("--shards and --per-node go separately", "--per-node runs one shard per node", nil)
	}
	if !s.PerNode {
		if _, err := plan.Slice(0, max(s.Shards, 1)); err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("the scenario cannot be split in %d shards", s.Shards), "", err)
		}
	}
	name := s.Name
	if name == "" {
		name = DefaultName(plan.Scenario, now)
	}
	o := Options{Name: name, Namespace: s.Namespace, Image: s.Image, LoadImage: s.LoadImage, Shards: s.Shards, PerNode: s.PerNode,
		Scenario: data, ScenarioFile: filepath.Base(file), EnvFromSecret: s.EnvFromSecret, Duration: dur,
		Pods: s.Pods, TTL: s.TTL, PodMonitor: s.PodMonitor, EmbedsSUT: plan.SUT != nil}
	if !s.SinkPerShard {
		o.Sink, _ = pod.SharedSink(reg, plan.Sink, "")
	}
	if o.SUT, err = sharedSUT(&plan, o.Sink, s.SUTPerShard); err != nil {
		return nil, err
	}
	length := plan.Duration() + plan.Drain.D()
	o.Deadline = s.Deadline
	if o.Deadline == 0 {
		o.Deadline = length + s.Wait + DeadlineMargin
	}
	if o.Deadline < length {
		return nil, pipebench.UsageError(fmt.Sprintf("--active-deadline %s is shorter than the run (%s of load and drain)", o.Deadline, length),
			"give a longer one, or leave it out: the default is the run's length plus the waits plus "+DeadlineMargin.String(), nil)
	}
	return &Prepared{Options: o, Plan: plan, Length: length}, nil
}

// Size fills the pods' requests and limits left empty from the plan, for
// n shards (DefaultResources), and drops the resources given as 0.
func (p *Prepared) Size(n int) {
	ps := &p.Options.Pods
	shard := DefaultResources(p.Plan, max(n, 1))
	whole := DefaultResources(p.Plan, 1)
	fill := func(dst *corev1.ResourceList, def corev1.ResourceList) {
		if *dst == nil {
			*dst = def
		}
		for k, v := range *dst {
			if v.IsZero() {
				delete(*dst, k)
			}
		}
	}
	fill(&ps.Requests, shard.Requests)
	fill(&ps.Limits, shard.Limits)
	fill(&ps.SinkRequests, whole.Requests)
	fill(&ps.SinkLimits, whole.Limits)
}

// sharedSUT returns how the plan's embedded system under test runs in the
// cluster: once, in a pod of its own, when it can export to the
// in-cluster sink (or the scenario has no sink); nil when it runs in each
// shard's pod (no system under test, --sut-per-shard, or a sink that runs
// in each shard, like nats). A process observer of the system's processes
// cannot reach them in another pod: that is refused, with what to do.
func sharedSUT(plan *pipebench.Plan, sink *SinkSpec, perShard bool) (*SUTSpec, error) {
	if plan.SUT == nil || perShard || (plan.Sink != nil && sink == nil) {
		return nil, nil
	}
	for _, o := range plan.Observers {
		if o.Type == "process" {
			return nil, pipebench.UsageError(
				fmt.Sprintf("observer %q reads the processes of the system under test, which runs in a pod of its own in the cluster", o.Name),
				"observe its memory and CPU through its metrics (the prometheus observer, e.g. preset otelcol), or give --sut-per-shard to run it in each shard's pod", nil)
		}
	}
	return &SUTSpec{Type: plan.SUT.Type}, nil
}

// DefaultName names a run after its scenario and the time (UTC, to the
// second): lower case letters, digits and '-', at most 40 characters,
// like checkout-load-20261126-101500.
func DefaultName(scenario string, now time.Time) string {
	var b strings.Builder
	dash := true
	for _, r := range strings.ToLower(scenario) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	stamp := now.UTC().Format("20060102-150405")
	base := strings.Trim(b.String(), "-")
	if len(base) > 40-len(stamp)-1 {
		base = strings.TrimRight(base[:40-len(stamp)-1], "-")
	}
	if base == "" || base[0] < 'a' {
		base = strings.TrimSuffix("pipebench-"+base, "-")
		if len(base) > 40-len(stamp)-1 {
			base = strings.TrimRight(base[:40-len(stamp)-1], "-")
		}
	}
	return base + "-" + stamp
}

// Resources are a container's requests and limits.
type Resources struct {
	Requests, Limits corev1.ResourceList
}

// DefaultResources sizes the container of one of n shards from the plan:
// the shard's peak rate (r items/s, the plan's peak over n) and its
// connections (c). CPU: 100m plus 50m per 1,000 items/s (one core holds
// about 20,000/s open-model through the HTTP driver on the machines this
// was measured on), at most 4 cores; memory: 128 MiB plus 32 MiB per 1,000
// items/s (sends in flight, histograms) plus 1 MiB per connection, at most
// 8 GiB. Limits are twice the requests (CPU at least 500m): room for
// bursts, and a bound an admission policy accepts. n = 1 sizes what takes
// the whole load (the in-cluster sink, the system under test).
func DefaultResources(plan pipebench.Plan, n int) Resources {
	r := peakRate(plan) / float64(max(n, 1))
	conns := float64(connections(plan))
	if n > 1 {
		conns = max(1, conns/float64(n))
	}
	cpu := min(0.1+r/20000, 4)
	mem := min(128+32*r/1000+conns, 8192) // MiB
	q := func(milli int64) resource.Quantity { return *resource.NewMilliQuantity(milli, resource.DecimalSI) }
	mi := func(m float64) resource.Quantity { return *resource.NewQuantity(int64(m)<<20, resource.BinarySI) }
	return Resources{
		Requests: corev1.ResourceList{corev1.ResourceCPU: q(int64(cpu * 1000)), corev1.ResourceMemory: mi(mem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: q(int64(max(cpu*2, 0.5) * 1000)), corev1.ResourceMemory: mi(mem * 2)},
	}
}

// peakRate is the highest rate the plan asks for in any phase (a blast,
// which has none, counts as 20,000/s: one core's worth).
func peakRate(plan pipebench.Plan) float64 {
	peak := 0.0
	for _, ph := range plan.Phases {
		pr := ph.Profile
		rates := []pipebench.Rate{pr.Rate, pr.From, pr.To}
		for _, st := range pr.Steps {
			rates = append(rates, st.Rate)
		}
		if pr.Burst != nil {
			rates = append(rates, pr.Burst.Rate)
		}
		for _, r := range rates {
			peak = max(peak, float64(r))
		}
		if ph.Blast() {
			peak = max(peak, 20000)
		}
	}
	return peak
}

// connections is the target's connections setting, 1 when it has none.
func connections(plan pipebench.Plan) int {
	b, err := json.Marshal(plan.Target.Config)
	if err != nil {
		return 1
	}
	var c struct {
		Connections int `json:"connections"`
	}
	if json.Unmarshal(b, &c) != nil || c.Connections < 1 {
		return 1
	}
	return c.Connections
}

// Check compares the in-cluster sink's own count with what the shards
// matched from its feed and writes both to log: a sink that received
// items no shard matched was sent to by something else than the run's
// shards, or its feed broke. It returns whether they agree (true without
// an in-cluster sink).
func (c *Collected) Check(log io.Writer) bool {
	s := c.Sink
	if s == nil {
		return true
	}
	var delivered float64
	for _, r := range c.Shards {
		if r.Total != nil {
			v, _ := r.Total.Get("delivered")
			delivered += v
		}
	}
	fmt.Fprintf(log, "k8s: the in-cluster sink received %d unique items (%d duplicates, %d unmatched, %d faulted); the shards matched %.0f of them\n",
		s.Received, s.Duplicates, s.Unmatched, s.Faulted, delivered)
	if uint64(delivered) == s.Received {
		return true
	}
	fmt.Fprintf(log, "k8s: warning: %d items reached the sink but no shard (%d held for no shard beyond the feed's bound): items sent by something else than this run's shards, or a broken feed\n",
		int64(s.Received)-int64(delivered), s.Dropped)
	return false
}

// ParseResources reads --requests or --limits: cpu=500m,memory=256Mi as
// a map. A value of 0 leaves that resource out (Size drops it).
func ParseResources(flag string, m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("%s %s=%s: not a quantity", flag, k, v), "write it like cpu=500m,memory=256Mi (0 leaves one out)", nil)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// ParseToleration reads --toleration: KEY[=VALUE][:EFFECT], an empty
// effect tolerating every effect; KEY alone (or KEY:EFFECT) tolerates
// the taint whatever its value.
func ParseToleration(s string) (corev1.Toleration, error) {
	kv, effect, _ := strings.Cut(s, ":")
	key, value, hasValue := strings.Cut(kv, "=")
	t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffect(effect)}
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return t, pipebench.UsageError(fmt.Sprintf("--toleration %q: unknown effect %q", s, effect), "write KEY[=VALUE][:NoSchedule|PreferNoSchedule|NoExecute]", nil)
	}
	if key == "" {
		return t, pipebench.UsageError(fmt.Sprintf("--toleration %q has no key", s), "write KEY[=VALUE][:EFFECT], like dedicated=load:NoSchedule", nil)
	}
	return t, nil
}

// ParseAffinity reads --affinity: a pod's affinity as YAML or JSON
// (nodeAffinity, podAffinity, podAntiAffinity), strictly.
func ParseAffinity(data []byte) (*corev1.Affinity, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, pipebench.UsageError("--affinity: not YAML or JSON", "give a file holding a pod's affinity (nodeAffinity: ...)", err)
	}
	var a corev1.Affinity
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, pipebench.UsageError("--affinity: not a pod's affinity", "give nodeAffinity, podAffinity or podAntiAffinity, as in a pod's spec.affinity", err)
	}
	return &a, nil
}

// PodFlags are the pods' settings as the command line gives them, each
// named in errors by its flag.
type PodFlags struct {
	Requests, Limits map[string]string // --requests, --limits: cpu=500m,memory=256Mi
	NodeSelector     map[string]string // --node-selector
	Tolerations      []string          // --toleration: KEY[=VALUE][:EFFECT]
	AffinityFile     string            // --affinity: a file holding the pods' affinity
	PatchFile        string            // --pod-patch: a file holding a strategic merge patch
}

// Apply reads the flags (and the files they name, each bounded and
// stopped when ctx is done, see readPodFile) into ps.
func (f PodFlags) Apply(ctx context.Context, ps *PodSettings) error {
	var err error
	if ps.Requests, err = ParseResources("--requests", f.Requests); err != nil {
		return err
	}
	if ps.Limits, err = ParseResources("--limits", f.Limits); err != nil {
		return err
	}
	ps.NodeSelector = f.NodeSelector
	for _, t := range f.Tolerations {
		tol, err := ParseToleration(t)
		if err != nil {
			return err
		}
		ps.Tolerations = append(ps.Tolerations, tol)
	}
	if f.AffinityFile != "" {
		data, err := readPodFile(ctx, "--affinity", f.AffinityFile)
		if err != nil {
			return err
		}
		if ps.Affinity, err = ParseAffinity(data); err != nil {
			return err
		}
	}
	if f.PatchFile != "" {
		if ps.Patch, err = readPodFile(ctx, "--pod-patch", f.PatchFile); err != nil {
			return err
		}
	}
	return nil
}

// MaxPodFileSize bounds --affinity and --pod-patch: what goes into a pod
// template (an object of the API server's, at most 1.5 MB with the rest).
const MaxPodFileSize = 1 << 20

// readPodFile reads the file of flag (--affinity, --pod-patch) through
// pipebench's input limits (MaxPodFileSize, a FIFO or the standard input
// read until ctx is done) and refuses YAML nested deeper than any pod
// template, or with anchors, before any parser reads it.
func readPodFile(ctx context.Context, flag, path string) ([]byte, error) {
	data, err := pipebench.ReadInput(ctx, pipebench.Input{Path: path, What: flag, Limit: MaxPodFileSize})
	if err != nil {
		return nil, err
	}
	if _, p := yamlnode.Tokens(path, flag+" file", string(data)); p != nil {
		return nil, pipebench.UsageError(flag+": "+p.String(), "give a pod's affinity or a patch of a pod template, as YAML or JSON", nil)
	}
	return data, nil
}
