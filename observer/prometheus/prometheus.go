// Package promobs observes a Prometheus text endpoint: it scrapes, maps
// metric names (and label filters) to KPI names, and reports raw values as
// points; counters become per-phase rates downstream.
package promobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pipebench/pipebench"
)

// Mapping turns one Prometheus metric into one KPI series.
type Mapping struct {
	// KPI is the series name the points get ("receiver_accepted").
	KPI string `yaml:"kpi" json:"kpi"`
	// Metric is the Prometheus metric name; a _total suffix is also tried.
	Metric string `yaml:"metric" json:"metric"`
	// Labels keep only the series with these label values.
	Labels map[string]string `yaml:"labels" json:"labels,omitempty"`
	// Kind is counter, gauge, histogram or summary; empty takes the
	// metric's TYPE. A histogram or summary gives KPI.count and KPI.sum
	// (counters) and a gauge per quantile, KPI.p50 etc.: for a histogram,
	// of the observations since the previous scrape (from bucket deltas);
	// for a summary, its own quantiles.
	Kind string `yaml:"kind" json:"kind,omitempty"`
	// Quantiles of a histogram or summary to report (default 0.5, 0.9,
	// 0.99).
	Quantiles []float64 `yaml:"quantiles" json:"quantiles,omitempty"`
	// Buckets also reports a histogram's cumulative buckets as counters,
	// KPI_bucket{le="0.5"}: each phase (and the whole run) then has the
	// quantiles of all its observations, KPI.p50, .p75, .p90, .p95, .p99,
	// from the buckets' growth over the phase (kpi.HistogramKPIs), besides
	// the per-scrape gauges' KPI.p50.max and .last.
	Buckets bool `yaml:"buckets" json:"buckets,omitempty"`
	// By reports one series per value of this label instead of their
	// sum, each carrying the label (by: exporter gives
	// KPI{exporter="otlp/p2",instance="collector-0"}) — when some metric
	// of a By mapping has more than one value of its label in the scrape;
	// with one (a single exporter), By mappings add nothing: the summed
	// mapping of the same metric already says it all.
	By string `yaml:"by" json:"by,omitempty"`
}

// Config configures the observer.
type Config struct {
	// URL to scrape; empty scrapes every instance of the embedded system
	// under test, labelled instance=NAME.
	URL     string             `yaml:"url" json:"url,omitempty"`
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Preset adds built-in mappings: "otelcol", "relay", "eventproxy",
	// "healthevents" or "kafka".
	Preset  string    `yaml:"preset" json:"preset,omitempty"`
	Metrics []Mapping `yaml:"metrics" json:"metrics,omitempty"`
}

// Presets are the built-in mappings, by name. Each KPI sums the metric over
// all its series (receivers, exporters, transports) per instance.
var Presets = map[string][]Mapping{
	"otelcol": append(otelcolPreset(), otelcolPerExporter()...),
	"relay": {
		{KPI: "receiver_accepted", Metric: "relay_receiver_accepted_items", Kind: "counter"},
		{KPI: "receiver_refused", Metric: "relay_receiver_refused_items", Kind: "counter"},
		{KPI: "exporter_sent", Metric: "relay_exporter_sent_items", Kind: "counter"},
		{KPI: "exporter_failed", Metric: "relay_exporter_send_failed_items", Kind: "counter"},
		{KPI: "exporter_dropped", Metric: "relay_exporter_dropped_items", Kind: "counter"},
		{KPI: "exporter_queue_size", Metric: "relay_exporter_queue_size", Kind: "gauge"},
	},
	"eventproxy": {
		// A proxy accepts (answers 2xx) only what it published and had
		// acknowledged: that is its handled rate; received counts refused
		// events too.
		{KPI: "receiver_received", Metric: "eventproxy_events_received_total", Kind: "counter"},
		{KPI: "receiver_accepted", Metric: "eventproxy_events_published_total", Kind: "counter"},
		{KPI: "handled", Metric: "eventproxy_events_published_total", Kind: "counter"},
		{KPI: "receiver_refused", Metric: "eventproxy_events_refused_total", Kind: "counter"},
		{KPI: "exporter_sent", Metric: "eventproxy_events_published_total", Kind: "counter"},
		{KPI: "publish_in_flight", Metric: "eventproxy_publish_in_flight", Kind: "gauge"},
		{KPI: "publish_latency_seconds", Metric: "eventproxy_publish_duration_seconds", Kind: "histogram", Quantiles: []float64{0.5, 0.99}},
	},
	// An Apache Kafka broker's own metrics, as the embedded kafka SUT
	// serves them (its JMX exporter; sut/kafka/metrics.go names them):
	// what the broker appended and served, and how long it took.
	"kafka": {
		{KPI: "broker_messages_in", Metric: "kafka_server_messages_in_total", Kind: "counter"},
		{KPI: "broker_bytes_in", Metric: "kafka_server_bytes_in_total", Kind: "counter"},
		{KPI: "broker_bytes_out", Metric: "kafka_server_bytes_out_total", Kind: "counter"},
		{KPI: "broker_produce_requests", Metric: "kafka_server_total_produce_requests_total", Kind: "counter"},
		{KPI: "broker_produce_failed", Metric: "kafka_server_failed_produce_requests_total", Kind: "counter"},
		{KPI: "broker_under_replicated_partitions", Metric: "kafka_server_under_replicated_partitions", Kind: "gauge"},
		{KPI: "broker_request_queue", Metric: "kafka_network_request_queue_size", Kind: "gauge"},
		{KPI: "broker_produce_time_ms_p50", Metric: "kafka_network_request_time_ms", Labels: map[string]string{"request": "Produce", "quantile": "0.50"}, Kind: "gauge"},
		{KPI: "broker_produce_time_ms_p99", Metric: "kafka_network_request_time_ms", Labels: map[string]string{"request": "Produce", "quantile": "0.99"}, Kind: "gauge"},
	},
	"healthevents": {
		{KPI: "events_received", Metric: "healthevents_events_received_total", Kind: "counter"},
		{KPI: "events_refused", Metric: "healthevents_events_refused_total", Kind: "counter"},
		{KPI: "effects_applied", Metric: "healthevents_effects_applied_total", Kind: "counter"},
		{KPI: "backlog", Metric: "healthevents_backlog", Kind: "gauge"},
		{KPI: "effect_latency_seconds", Metric: "healthevents_effect_latency_seconds", Kind: "histogram", Quantiles: []float64{0.5, 0.9, 0.99}, Buckets: true},
	},
}

func otelcolPreset() []Mapping {
	var m []Mapping
	for _, sig := range []string{"spans", "metric_points", "log_records"} {
		m = append(m,
			Mapping{KPI: "receiver_accepted", Metric: "otelcol_receiver_accepted_" + sig, Kind: "counter"},
			Mapping{KPI: "receiver_refused", Metric: "otelcol_receiver_refused_" + sig, Kind: "counter"},
			Mapping{KPI: "exporter_sent", Metric: "otelcol_exporter_sent_" + sig, Kind: "counter"},
			Mapping{KPI: "exporter_failed", Metric: "otelcol_exporter_send_failed_" + sig, Kind: "counter"},
			Mapping{KPI: "exporter_enqueue_failed", Metric: "otelcol_exporter_enqueue_failed_" + sig, Kind: "counter"},
		)
	}
	return append(m,
		Mapping{KPI: "exporter_queue_size", Metric: "otelcol_exporter_queue_size", Kind: "gauge"},
		Mapping{KPI: "exporter_queue_capacity", Metric: "otelcol_exporter_queue_capacity", Kind: "gauge"},
		Mapping{KPI: "memory_rss_bytes", Metric: "otelcol_process_memory_rss", Kind: "gauge"},
		Mapping{KPI: "cpu_seconds", Metric: "otelcol_process_cpu_seconds", Kind: "counter"},
	)
}

// otelcolPerExporter is the otelcol preset's split of the exporter
// metrics by exporter, for collectors with several pipelines (each
// pipeline's own exporter, otlp/p1, otlp/p2, ...): per_exporter_sent,
// per_exporter_failed, per_exporter_enqueue_failed (counters) and
// per_exporter_queue_size, with the label exporter. Their names are their
// own so that sums over instances never count an item twice.
func otelcolPerExporter() []Mapping {
	var m []Mapping
	for _, sig := range []string{"spans", "metric_points", "log_records"} {
		m = append(m,
			Mapping{KPI: "per_exporter_sent", Metric: "otelcol_exporter_sent_" + sig, Kind: "counter", By: "exporter"},
			Mapping{KPI: "per_exporter_failed", Metric: "otelcol_exporter_send_failed_" + sig, Kind: "counter", By: "exporter"},
			Mapping{KPI: "per_exporter_enqueue_failed", Metric: "otelcol_exporter_enqueue_failed_" + sig, Kind: "counter", By: "exporter"},
		)
	}
	return append(m, Mapping{KPI: "per_exporter_queue_size", Metric: "otelcol_exporter_queue_size", Kind: "gauge", By: "exporter"})
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("url: %q is not an http:// URL", c.URL))
		}
	}
	if _, ok := Presets[c.Preset]; c.Preset != "" && !ok {
		names := make([]string, 0, len(Presets))
		for n := range Presets {
			names = append(names, n)
		}
		sort.Strings(names)
		errs = append(errs, fmt.Errorf("preset: %q is not one of %s", c.Preset, strings.Join(names, ", ")))
	}
	if c.Preset == "" && len(c.Metrics) == 0 {
		errs = append(errs, fmt.Errorf("metrics: give a preset or at least one mapping {kpi, metric}"))
	}
	for i, m := range c.Metrics {
		if m.KPI == "" || m.Metric == "" {
			errs = append(errs, fmt.Errorf("metrics: entry %d needs kpi and metric", i))
		}
		if m.Kind != "" && m.Kind != "counter" && m.Kind != "gauge" && m.Kind != "histogram" && m.Kind != "summary" {
			errs = append(errs, fmt.Errorf("metrics: entry %d: kind %q is not counter, gauge, histogram or summary", i, m.Kind))
		}
		for _, q := range m.Quantiles {
			if !(q > 0 && q < 1) {
				errs = append(errs, fmt.Errorf("metrics: entry %d: quantile %g is not between 0 and 1 (0.99 is the 99th percentile)", i, q))
			}
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "prometheus" observer.
func Factory() pipebench.Factory[pipebench.Observer] {
	def := func() *Config { return &Config{Timeout: pipebench.Duration(2 * time.Second)} }
	return pipebench.NewFactory("prometheus", "scrape a Prometheus endpoint and map its metrics to KPIs", def,
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) { return New(*c, env.Instances) })
}

type target struct {
	instance string
	url      string
}

// Observer scrapes its targets. Observe is called from one goroutine at a
// time.
type Observer struct {
	targets  []target
	mappings []Mapping
	client   *http.Client
	prevHist map[string]*cumulative // the previous scrape's buckets, by instance and KPI
}

var _ pipebench.Observer = (*Observer)(nil)

// New returns an observer of cfg.URL, or of every instance with a metrics
// URL when cfg.URL is empty.
func New(cfg Config, instances []pipebench.Instance) (*Observer, error) {
	o := &Observer{mappings: append(append([]Mapping(nil), Presets[cfg.Preset]...), cfg.Metrics...),
		client: &http.Client{Timeout: cfg.Timeout.D()}, prevHist: map[string]*cumulative{}}
	if cfg.URL != "" {
		o.targets = []target{{instance: hostOf(cfg.URL), url: cfg.URL}}
	} else {
		for _, in := range instances {
			if in.MetricsURL != "" {
				o.targets = append(o.targets, target{instance: in.Name, url: in.MetricsURL})
			}
		}
	}
	if len(o.targets) == 0 {
		if len(instances) > 0 {
			names := make([]string, len(instances))
			for i, in := range instances {
				names[i] = in.Name
			}
			return nil, pipebench.UsageError(fmt.Sprintf("the prometheus observer has nothing to scrape: no instance of the system under test (%s) serves metrics", strings.Join(names, ", ")),
				"set its url; an embedded system serves metrics only with what its page of the documentation (docs/) says it needs", nil)
		}
		return nil, pipebench.UsageError("the prometheus observer has nothing to scrape", "set its url, or use it with an embedded sut that serves metrics", nil)
	}
	return o, nil
}

func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Host
	}
	return u
}

// Observe scrapes every target and returns one point per mapping and
// instance (the sum over the metric's matching series).
func (o *Observer) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	var pts []pipebench.Point
	var errs []error
	for _, t := range o.targets {
		fams, err := o.scrape(ctx, t.url)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.url, err))
			continue
		}
		pts = append(pts, o.points(fams, t.instance, at)...)
	}
	return pts, errors.Join(errs...)
}

func (o *Observer) scrape(ctx context.Context, u string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// points applies the mappings to one scrape. Mappings sharing a KPI name are
// summed (the otelcol preset adds up spans, metric points and log records).
func (o *Observer) points(fams map[string]*dto.MetricFamily, instance string, at time.Time) []pipebench.Point {
	type acc struct {
		kind  pipebench.MetricKind
		value float64
	}
	sums := map[string]*acc{}
	var order []string
	var dists []pipebench.Point
	type split struct {
		kind pipebench.MetricKind
		by   string
		sums map[string]float64
	}
	splits := map[string]*split{}
	var splitOrder []string
	widest := 0 // the most values of a By label in one metric
	for _, m := range o.mappings {
		fam := fams[m.Metric]
		if fam == nil {
			fam = fams[m.Metric+"_total"]
		}
		if fam == nil {
			continue
		}
		if t := fam.GetType(); t == dto.MetricType_HISTOGRAM || t == dto.MetricType_SUMMARY {
			dists = append(dists, o.distributionPoints(m, fam, instance, at)...)
			continue
		}
		kind := pipebench.KindGauge
		if m.Kind == "counter" || (m.Kind == "" && fam.GetType() == dto.MetricType_COUNTER) {
			kind = pipebench.KindCounter
		}
		if m.By != "" {
			vals := splitSums(m, fam)
			if len(vals) == 0 {
				continue
			}
			widest = max(widest, len(vals))
			if splits[m.KPI] == nil {
				splits[m.KPI] = &split{kind: kind, by: m.By, sums: map[string]float64{}}
				splitOrder = append(splitOrder, m.KPI)
			}
			for k, v := range vals {
				splits[m.KPI].sums[k] += v
			}
			continue
		}
		for _, metric := range fam.GetMetric() {
			v, ok := scalar(metric)
			if !ok || !matches(metric, m.Labels) {
				continue
			}
			a := sums[m.KPI]
			if a == nil {
				a = &acc{kind: kind}
				sums[m.KPI] = a
				order = append(order, m.KPI)
			}
			a.value += v
		}
	}
	pts := make([]pipebench.Point, 0, len(order))
	for _, k := range order {
		pts = append(pts, pipebench.Point{Name: k, Labels: map[string]string{"instance": instance}, Kind: sums[k].kind, At: at, Value: sums[k].value})
	}
	if widest < 2 {
		splitOrder = nil // one exporter: the sums say it all
	}
	for _, name := range splitOrder {
		sp := splits[name]
		keys := make([]string, 0, len(sp.sums))
		for k := range sp.sums {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			pts = append(pts, pipebench.Point{Name: name, Labels: map[string]string{"instance": instance, sp.by: k}, Kind: sp.kind, At: at, Value: sp.sums[k]})
		}
	}
	return append(pts, dists...)
}

// scalar returns the value of a counter, gauge or untyped metric; false
// for histograms and summaries.
func scalar(metric *dto.Metric) (float64, bool) {
	switch {
	case metric.GetCounter() != nil:
		return metric.GetCounter().GetValue(), true
	case metric.GetGauge() != nil:
		return metric.GetGauge().GetValue(), true
	case metric.GetUntyped() != nil:
		return metric.GetUntyped().GetValue(), true
	}
	return 0, false
}

// splitSums sums the metric per value of the label m.By (series without
// the label are left out).
func splitSums(m Mapping, fam *dto.MetricFamily) map[string]float64 {
	sums := map[string]float64{}
	for _, metric := range fam.GetMetric() {
		v, ok := scalar(metric)
		if !ok || !matches(metric, m.Labels) {
			continue
		}
		for _, l := range metric.GetLabel() {
			if l.GetName() == m.By && l.GetValue() != "" {
				sums[l.GetValue()] += v
			}
		}
	}
	return sums
}

func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Close drops the idle keep-alive connections the observer's polls left
// open (the runner calls it once, after the last Observe).
func (o *Observer) Close() error {
	o.client.CloseIdleConnections()
	return nil
}
