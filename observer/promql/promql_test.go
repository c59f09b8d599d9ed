package promql

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// startPrometheus starts Debian's prometheus on 127.0.0.1 with a temporary
// configuration and storage, scraping target every second. It skips the
// test when the binary is absent.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	return startPrometheusEvery(t, target, time.Second)
}

// startPrometheusEvery is startPrometheus scraping every interval.
func startPrometheusEvery(t *testing.T, target string, interval time.Duration) string {
	t.Helper()
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: sut\n    static_configs:\n      - targets: [%q]\n", interval, interval, target)
	return promtest.Prometheus(t, cfg, "the PromQL test against a real server")
}

// target serves a histogram, a gauge and a counter whose values the test
// sets.
func target(t *testing.T) (string, prometheus.Histogram, prometheus.Gauge, prometheus.Counter) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "test_request_duration_seconds", Help: "h", Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1}})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_queue_depth", Help: "g"})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_inserts_total", Help: "c"})
	reg.MustRegister(h, g, c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), h, g, c
}

func TestAgainstARealPrometheus(t *testing.T) {
	addr, h, g, c := target(t)
	// 100 requests in (0.05, 0.1], none elsewhere: every quantile lies
	// in that bucket, interpolated linearly.
	for i := 0; i < 100; i++ {
		h.Observe(0.07)
	}
	g.Set(42)
	c.Add(1000)
	base := startPrometheus(t, addr)
	o, err := New(Config{URL: base, Timeout: pipebench.Duration(5 * time.Second), Step: pipebench.Duration(time.Second), Queries: []Query{
		{Name: "latency.p50", Query: "histogram_quantile(0.5, sum(test_request_duration_seconds_bucket) by (le))"},
		{Name: "latency.p99", Query: "histogram_quantile(0.99, sum(test_request_duration_seconds_bucket) by (le))"},
		{Name: "queue_depth", Query: "test_queue_depth"},
		{Name: "inserts", Query: "test_inserts_total", Kind: "counter"},
		{Name: "empty_quantile", Query: `histogram_quantile(0.5, sum(rate(test_request_duration_seconds_bucket{job="none"}[1m])) by (le))`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var pts []pipebench.Point
	deadline := time.Now().Add(30 * time.Second)
	for {
		pts, err = o.Observe(context.Background(), time.Now())
		if err == nil && len(pts) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no complete answer in 30 s: %v, %+v", err, pts)
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := map[string]float64{"latency.p50": 0.075, "latency.p99": 0.0995, "queue_depth": 42, "inserts": 1000}
	for _, p := range pts {
		if w, ok := want[p.Name]; !ok || math.Abs(p.Value-w) > 1e-9 {
			t.Errorf("%s = %g, want %g", p.Name, p.Value, w)
		}
		if p.Name == "inserts" && p.Kind != pipebench.KindCounter {
			t.Errorf("inserts is not a counter")
		}
		if p.Name == "queue_depth" && (p.Labels["job"] != "sut" || p.Labels["__name__"] != "") {
			t.Errorf("queue_depth labels %v", p.Labels)
		}
	}

	// A range over the last seconds: one point per step, the gauge's value
	// changing as the test changes it.
	g.Set(7)
	start := time.Now()
	deadline = time.Now().Add(30 * time.Second)
	for {
		pts, err = o.QueryRange(context.Background(), start.Add(-3*time.Second), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var depths []float64
		for _, p := range pts {
			if p.Name == "queue_depth" {
				depths = append(depths, p.Value)
			}
		}
		if len(depths) >= 3 && depths[0] == 42 && depths[len(depths)-1] == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the range never showed 42 then 7: %v", depths)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func TestQueryErrorsNameTheQuery(t *testing.T) {
	addr, _, _, _ := target(t)
	base := startPrometheus(t, addr)
	o, err := New(Config{URL: base, Timeout: pipebench.Duration(5 * time.Second), Step: pipebench.Duration(time.Second),
		Queries: []Query{{Name: "broken", Query: "sum(rate(x[1m]"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Observe(context.Background(), time.Now())
	if err == nil || !strings.Contains(err.Error(), "broken: bad_data") {
		t.Errorf("a bad query gave %v", err)
	}
}

func TestBadConfiguration(t *testing.T) {
	_, err := Factory().New(&Config{URL: "localhost:9090", Queries: []Query{{Name: "1x", Query: ""}, {Name: "a", Query: "up", Kind: "summary"}}}, pipebench.Env{})
	if err == nil {
		t.Fatal("no error")
	}
	msg := testutil.ErrorText(err)
	for _, want := range []string{"url:", "timeout:", "step:", `name "1x"`, "query is empty", `kind "summary"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}
