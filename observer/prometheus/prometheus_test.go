package promobs

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipebench/pipebench"
)

// serve exposes a real client_golang registry on loopback.
func serve(t *testing.T, reg *prometheus.Registry) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/metrics"
}

// observeOnce makes the observer of cfg and returns its first points; an
// error of either fails the test.
func observeOnce(t *testing.T, cfg Config) []pipebench.Point {
	t.Helper()
	o, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := o.Observe(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

func TestMappingsSumSeriesAndKeepKinds(t *testing.T) {
	reg := prometheus.NewRegistry()
	acc := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "otelcol_receiver_accepted_spans"}, []string{"receiver", "transport"})
	queue := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "otelcol_exporter_queue_size"}, []string{"exporter"})
	rss := prometheus.NewGauge(prometheus.GaugeOpts{Name: "otelcol_process_memory_rss"})
	reg.MustRegister(acc, queue, rss)
	acc.WithLabelValues("otlp", "grpc").Add(100)
	acc.WithLabelValues("otlp", "http").Add(50)
	queue.WithLabelValues("otlp/a").Set(7)
	queue.WithLabelValues("otlp/b").Set(5)
	rss.Set(64 << 20)
	url := serve(t, reg)
	pts := observeOnce(t, Config{URL: url, Preset: "otelcol", Timeout: pipebench.Duration(time.Second),
		Metrics: []Mapping{{KPI: "grpc_only", Metric: "otelcol_receiver_accepted_spans", Labels: map[string]string{"transport": "grpc"}}}})
	got := map[string]pipebench.Point{}
	for _, p := range pts {
		got[p.Name] = p
	}
	// client_golang exposes counters with a _total suffix; the mapping
	// names them without it, as the collector does.
	if p := got["receiver_accepted"]; p.Value != 150 || p.Kind != pipebench.KindCounter {
		t.Errorf("receiver_accepted = %+v", p)
	}
	if p := got["grpc_only"]; p.Value != 100 {
		t.Errorf("label filter: %+v", p)
	}
	if p := got["exporter_queue_size"]; p.Value != 12 || p.Kind != pipebench.KindGauge {
		t.Errorf("queue = %+v", p)
	}
	if p := got["memory_rss_bytes"]; p.Value != 64<<20 || !strings.Contains(p.Labels["instance"], "127.0.0.1") {
		t.Errorf("rss = %+v", p)
	}
}

func TestInstancesAndErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "relay_exporter_queue_size"})
	reg.MustRegister(g)
	g.Set(3)
	url := serve(t, reg)
	o, err := New(Config{Preset: "relay", Timeout: pipebench.Duration(time.Second)}, []pipebench.Instance{{Name: "relay-0", MetricsURL: url}, {Name: "gone", MetricsURL: "http://127.0.0.1:1/metrics"}})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := o.Observe(context.Background(), time.Now())
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("an unreachable target must be reported: %v", err)
	}
	if len(pts) != 1 || pts[0].Labels["instance"] != "relay-0" || pts[0].Value != 3 {
		t.Errorf("points %+v", pts)
	}
	if _, err := New(Config{Preset: "relay", Timeout: 1}, nil); err == nil {
		t.Error("nothing to scrape accepted")
	}
	// Instances without a metrics endpoint are named in the error.
	if _, err := New(Config{Preset: "kafka", Timeout: 1}, []pipebench.Instance{{Name: "kafka-1", PID: 1}}); err == nil || !strings.Contains(err.Error(), "kafka-1") {
		t.Errorf("instances without metrics: %v", err)
	}
	c := &Config{Preset: "nope", URL: "ftp://x", Timeout: 0}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "preset:") || !strings.Contains(err.Error(), "url:") || !strings.Contains(err.Error(), "timeout:") {
		t.Errorf("validate: %v", err)
	}
}

// The otelcol preset splits the exporter metrics by exporter when there
// are several (one per pipeline), under names of their own, and adds
// nothing with one exporter.
func TestOtelcolPresetSplitsByExporter(t *testing.T) {
	for _, exporters := range [][]string{{"otlp/p1", "otlp/p2", "otlp/p3"}, {"otlp/p1"}} {
		reg := prometheus.NewRegistry()
		sent := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "otelcol_exporter_sent_spans"}, []string{"exporter"})
		queue := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "otelcol_exporter_queue_size"}, []string{"exporter"})
		reg.MustRegister(sent, queue)
		for i, e := range exporters {
			sent.WithLabelValues(e).Add(float64(100 * (i + 1)))
			queue.WithLabelValues(e).Set(float64(i))
		}
		pts := observeOnce(t, Config{URL: serve(t, reg), Preset: "otelcol", Timeout: pipebench.Duration(time.Second)})
		got := map[string]pipebench.Point{}
		for _, p := range pts {
			got[pipebench.KeyOf(p.Name, map[string]string{"exporter": p.Labels["exporter"]})] = p
		}
		if len(exporters) == 1 {
			for k := range got {
				if strings.HasPrefix(k, "per_exporter") {
					t.Errorf("one exporter, yet %s", k)
				}
			}
			continue
		}
		if p := got[`per_exporter_sent{exporter="otlp/p2"}`]; p.Value != 200 || p.Kind != pipebench.KindCounter {
			t.Errorf("per_exporter_sent of otlp/p2 = %+v; points %v", p, pts)
		}
		if p := got[`per_exporter_queue_size{exporter="otlp/p3"}`]; p.Value != 2 || p.Kind != pipebench.KindGauge {
			t.Errorf("per_exporter_queue_size of otlp/p3 = %+v", p)
		}
		if p := got[`exporter_sent{exporter=""}`]; p.Value != 600 {
			t.Errorf("the summed exporter_sent = %+v, want 600", p)
		}
	}
}
