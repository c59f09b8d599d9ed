// Package effectkube is the "effect-kube" observer: the effect of an event
// is a field of a Kubernetes object reaching a value, seen through a
// client-go watch. The default watches Nodes for spec.unschedulable ==
// true: a health event's quarantine (a cordon), keyed by the node's name.
//
// Per key (the object's namespace/name) it records the time the condition
// first held (when the watch delivered it), and, when the object carries
// the event's send time (the sent field, like an annotation the health
// pipeline copies from the event), the event-to-effect latency. Every
// Observe yields the same points as the other effect observers:
//
//	effects                       counter: keys that took effect so far (its rate is the effect rate)
//	effect_latency_ms_bucket{le}  counters: the cumulative latency histogram
//	                              (observer/internal/effecthist), whose growth over a phase
//	                              gives that phase's quantiles of every effect
//	effect_backlog                gauge: keys whose event was sent (sent field set), not yet in effect
//
// so the run's effect KPIs (latency quantiles, time until all N took
// effect, effect rate, backlog and its peak) come out as for the others.
// Objects already in effect when the observer starts are not effects of
// the run: they count once they were seen out of effect.
package effectkube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/observer/internal/effecthist"
)

// Config configures the observer.
type Config struct {
	// Kubeconfig is a kubeconfig file; empty: $KUBECONFIG, ~/.kube/config,
	// or the pod's service account.
	Kubeconfig string `yaml:"kubeconfig" json:"kubeconfig,omitempty"`
	// Group, Version and Resource name what to watch (default: the core
	// v1 nodes).
	Group    string `yaml:"group" json:"group,omitempty"`
	Version  string `yaml:"version" json:"version"`
	Resource string `yaml:"resource" json:"resource"`
	// Namespace of namespaced resources ("": all namespaces).
	Namespace     string `yaml:"namespace" json:"namespace,omitempty"`
	LabelSelector string `yaml:"label_selector" json:"label_selector,omitempty"`
	// Field is the object's field whose value is the effect, as a dotted
	// path; a key with dots or slashes goes in brackets:
	// metadata.labels[example.com/quarantined].
	Field string `yaml:"field" json:"field"`
	// Equals is the value the field takes in effect, compared as text
	// ("true", "Cordoned").
	Equals string `yaml:"equals" json:"equals"`
	// Sent, if set, is the field holding the event's send time (RFC 3339
	// or a Unix time in s, ms, µs or ns), like
	// metadata.annotations[pipebench.dev/sent-at]: it gives the latency
	// and the backlog. Without it only effects and their rate are known.
	Sent string `yaml:"sent" json:"sent,omitempty"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Version == "" {
		errs = append(errs, errors.New("version: give the API version (v1 for nodes)"))
	}
	if c.Resource == "" {
		errs = append(errs, errors.New("resource: give the resource to watch, plural and lower case (nodes)"))
	}
	if _, err := parsePath(c.Field); c.Field == "" || err != nil {
		errs = append(errs, fmt.Errorf("field: give the field holding the effect, like spec.unschedulable (%v)", err))
	}
	if c.Sent != "" {
		if _, err := parsePath(c.Sent); err != nil {
			errs = append(errs, fmt.Errorf("sent: %v", err))
		}
	}
	if c.Kubeconfig != "" {
		// client-go reads it when the observer is built: a regular file,
		// bounded, checked first.
		if err := pipebench.CheckFile("kubeconfig", c.Kubeconfig, 0); err != nil {
			errs = append(errs, fmt.Errorf("kubeconfig: %v", err))
		}
	}
	return errors.Join(errs...)
}

func defaultConfig() *Config {
	return &Config{Version: "v1", Resource: "nodes", Field: "spec.unschedulable", Equals: "true"}
}

// Factory returns the factory of the "effect-kube" observer.
func Factory() pipebench.Factory[pipebench.Observer] {
	return pipebench.NewFactory("effect-kube", "watch Kubernetes objects for events' effects (default: a node's spec.unschedulable, a quarantine): event-to-effect latency, effect rate, backlog",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) {
			cfg, err := restConfig(c.Kubeconfig)
			if err != nil {
				return nil, err
			}
			return New(context.Background(), *c, cfg)
		})
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, pipebench.UsageError("the effect-kube observer has no cluster to watch", "give kubeconfig: FILE, or set KUBECONFIG", err)
	}
	return cfg, nil
}

// Observer watches one resource. Observe is called from one goroutine at
// a time; Summary may be called besides it.
type Observer struct {
	cfg   Config
	field []string
	sent  []string
	res   dynamic.ResourceInterface
	stop  context.CancelFunc
	done  chan struct{}

	mu       sync.Mutex
	baseline map[string]bool      // in effect at the start: not the run's
	sentAt   map[string]time.Time // keys whose event was sent (sent field seen)
	effected map[string]bool
	effects  *effecthist.Effects
	watchErr error
}

var _ pipebench.Observer = (*Observer)(nil)

// New lists the objects (what is in effect already is the baseline) and
// starts watching them until Close.
func New(ctx context.Context, cfg Config, rc *rest.Config) (*Observer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	field, _ := parsePath(cfg.Field)
	sent, _ := parsePath(cfg.Sent)
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	gvr := schema.GroupVersionResource{Group: cfg.Group, Version: cfg.Version, Resource: cfg.Resource}
	var res dynamic.ResourceInterface = dc.Resource(gvr)
	if cfg.Namespace != "" {
		res = dc.Resource(gvr).Namespace(cfg.Namespace)
	}
	o := &Observer{cfg: cfg, field: field, sent: sent, res: res, done: make(chan struct{}),
		baseline: map[string]bool{}, sentAt: map[string]time.Time{}, effected: map[string]bool{},
		effects: effecthist.NewEffects()}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	list, err := res.List(lctx, metav1.ListOptions{LabelSelector: cfg.LabelSelector})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("effect-kube: list %s: %w", gvr.String(), err)
	}
	for i := range list.Items {
		o.see(&list.Items[i], time.Now(), true)
	}
	wctx, stop := context.WithCancel(context.Background())
	o.stop = stop
	go o.watch(wctx, list.GetResourceVersion())
	return o, nil
}

// watch follows the resource from rv, listing again when the watch
// expires.
func (o *Observer) watch(ctx context.Context, rv string) {
	defer close(o.done)
	for ctx.Err() == nil {
		w, err := o.res.Watch(ctx, metav1.ListOptions{LabelSelector: o.cfg.LabelSelector, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			o.setErr(err)
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = o.relist(ctx)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			switch ev.Type {
			case watch.Added, watch.Modified:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					o.see(u, now, false)
					rv = u.GetResourceVersion()
				}
			case watch.Bookmark:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					rv = u.GetResourceVersion()
				}
			case watch.Error:
				if st := apierrors.FromObject(ev.Object); apierrors.IsGone(st) || apierrors.IsResourceExpired(st) {
					rv = o.relist(ctx)
				}
			}
		}
		w.Stop()
	}
}

func (o *Observer) relist(ctx context.Context) string {
	list, err := o.res.List(ctx, metav1.ListOptions{LabelSelector: o.cfg.LabelSelector})
	if err != nil {
		o.setErr(err)
		return ""
	}
	now := time.Now()
	for i := range list.Items {
		o.see(&list.Items[i], now, false)
	}
	return list.GetResourceVersion()
}

func (o *Observer) setErr(err error) {
	o.mu.Lock()
	o.watchErr = err
	o.mu.Unlock()
}

// see records what one object's state says.
func (o *Observer) see(u *unstructured.Unstructured, now time.Time, initial bool) {
	key := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	held := scalar(lookup(u.Object, o.field)) == o.cfg.Equals
	var sent time.Time
	if o.sent != nil {
		sent, _ = timeOf(lookup(u.Object, o.sent))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if initial {
		if held {
			o.baseline[key] = true
		}
		return
	}
	if o.baseline[key] {
		if held {
			return
		}
		delete(o.baseline, key) // out of effect now: its next effect counts
	}
	if !sent.IsZero() {
		if _, ok := o.sentAt[key]; !ok {
			o.sentAt[key] = sent
		}
	}
	if !held || o.effected[key] {
		return
	}
	o.effected[key] = true
	o.effects.Add(now, o.sentAt[key]) // zero when no send time was seen: no latency
}

// Observe returns the points of the effects seen so far.
func (o *Observer) Observe(_ context.Context, at time.Time) ([]pipebench.Point, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	pts := o.effects.Points(at)
	if o.sent != nil {
		backlog := 0
		for k := range o.sentAt {
			if !o.effected[k] {
				backlog++
			}
		}
		pts = append(pts, pipebench.Point{Name: "effect_backlog", Kind: pipebench.KindGauge, At: at, Value: float64(backlog)})
	}
	err := o.watchErr
	o.watchErr = nil
	if err != nil {
		err = fmt.Errorf("effect-kube: watch %s: %w", o.cfg.Resource, err)
	}
	return pts, err
}

// Summary is the whole run's view of the effects.
type Summary = effecthist.Summary

// Summary returns the numbers so far.
func (o *Observer) Summary() Summary {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.effects.Summary()
}

// Close stops the watch.
func (o *Observer) Close() error {
	o.stop()
	<-o.done
	return nil
}

// parsePath splits "a.b[c.d/e].f" into a, b, c.d/e, f.
func parsePath(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	var out []string
	for p != "" {
		if strings.HasPrefix(p, "[") {
			end := strings.Index(p, "]")
			if end < 0 {
				return nil, fmt.Errorf("%q: a [ without its ]", p)
			}
			out = append(out, p[1:end])
			p = strings.TrimPrefix(p[end+1:], ".")
			continue
		}
		end := strings.IndexAny(p, ".[")
		if end < 0 {
			out = append(out, p)
			break
		}
		if end == 0 {
			return nil, fmt.Errorf("%q: an empty name", p)
		}
		out = append(out, p[:end])
		if p[end] == '.' {
			end++
		}
		p = p[end:]
	}
	return out, nil
}

func lookup(obj any, path []string) any {
	for _, k := range path {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}

func scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "true"
		}
		return "false"
	case int64:
		return fmt.Sprint(v)
	case float64:
		return fmt.Sprint(v)
	}
	return fmt.Sprint(v)
}

// timeOf reads an RFC 3339 string or a Unix time whose unit is guessed
// from its size (s, ms, µs, ns).
func timeOf(v any) (time.Time, bool) {
	var f float64
	switch x := v.(type) {
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t, true
		}
		if _, err := fmt.Sscanf(x, "%g", &f); err != nil {
			return time.Time{}, false
		}
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return time.Time{}, false
	}
	return effecthist.UnixTime(f)
}

var _ io.Closer = (*Observer)(nil)
