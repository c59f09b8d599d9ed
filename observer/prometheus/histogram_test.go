package promobs

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipebench/pipebench"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Quantiles per scrape interval from bucket deltas, interpolated as PromQL's
// histogram_quantile does, and a summary's own quantiles, from a real
// client_golang endpoint on loopback.
func TestHistogramAndSummaryQuantiles(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "req_seconds", Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1}}, []string{"code"})
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "db_seconds", Objectives: map[float64]float64{0.5: 0.001, 0.99: 0.0001}})
	reg.MustRegister(h, s)
	for i := 0; i < 100; i++ {
		h.WithLabelValues("200").Observe(0.07) // before the first scrape: not in any interval
	}
	for i := 1; i <= 100; i++ {
		s.Observe(float64(i) / 1000)
	}
	o, err := New(Config{URL: serve(t, reg), Timeout: pipebench.Duration(time.Second), Metrics: []Mapping{
		{KPI: "req", Metric: "req_seconds", Quantiles: []float64{0.5, 0.99, 0.999}, Buckets: true},
		{KPI: "db", Metric: "db_seconds"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() map[string]pipebench.Point {
		pts, err := o.Observe(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]pipebench.Point{}
		for _, p := range pts {
			if p.Name == "req_bucket" {
				got[p.Name+"{"+p.Labels["le"]+"}"] = p
				continue
			}
			got[p.Name] = p
		}
		return got
	}
	got := scrape()
	if p := got["req.count"]; p.Value != 100 || p.Kind != pipebench.KindCounter {
		t.Errorf("req.count = %+v", p)
	}
	if _, ok := got["req.p50"]; ok {
		t.Errorf("the first scrape has no interval, yet gave req.p50")
	}
	if got["req_bucket{0.05}"].Value != 0 || got["req_bucket{0.1}"].Value != 100 || got["req_bucket{+Inf}"].Value != 100 || got["req_bucket{1}"].Kind != pipebench.KindCounter {
		t.Errorf("buckets: %+v %+v %+v", got["req_bucket{0.05}"], got["req_bucket{0.1}"], got["req_bucket{+Inf}"])
	}
	if !near(got["db.p50"].Value, 0.05) || !near(got["db.p99"].Value, 0.099) || got["db.count"].Value != 100 {
		t.Errorf("summary: p50 %v p99 %v count %v", got["db.p50"].Value, got["db.p99"].Value, got["db.count"].Value)
	}

	// 100 observations of 0.3 s, split over two label values: all in the
	// (0.1, 0.5] bucket.
	for i := 0; i < 50; i++ {
		h.WithLabelValues("200").Observe(0.3)
		h.WithLabelValues("503").Observe(0.3)
	}
	got = scrape()
	for name, want := range map[string]float64{"req.p50": 0.3, "req.p99": 0.496, "req.p99.9": 0.4996, "req.count": 200, "req.sum": 100*0.07 + 100*0.3} {
		if p, ok := got[name]; !ok || !near(p.Value, want) {
			t.Errorf("%s = %v (present %v), want %v", name, p.Value, ok, want)
		}
	}
	// Nothing observed since: no quantiles, counts unchanged.
	got = scrape()
	if _, ok := got["req.p50"]; ok || got["req.count"].Value != 200 {
		t.Errorf("an idle interval gave %+v", got)
	}
	// Beyond the last bucket: the highest finite bound, as PromQL says.
	h.WithLabelValues("200").Observe(5)
	got = scrape()
	if p := got["req.p99"]; !near(p.Value, 1) {
		t.Errorf("+Inf bucket p99 = %v, want 1", p.Value)
	}
}

func TestQuantileMatchesPromQL(t *testing.T) {
	c := &cumulative{}
	for _, b := range []struct{ le, n float64 }{{0.01, 0}, {0.05, 0}, {0.1, 100}, {0.5, 100}, {1, 100}, {math.Inf(1), 100}} {
		c.add(b.le, b.n)
	}
	// the same buckets and values as the promql observer's real-server test
	if !near(c.quantile(0.5), 0.075) || !near(c.quantile(0.99), 0.0995) {
		t.Errorf("p50 %v p99 %v, want 0.075 and 0.0995", c.quantile(0.5), c.quantile(0.99))
	}
	if !math.IsNaN((&cumulative{}).quantile(0.5)) {
		t.Errorf("an empty histogram has a quantile")
	}
	if quantileName(0.999) != "p99.9" || quantileName(0.5) != "p50" {
		t.Errorf("names %s %s", quantileName(0.999), quantileName(0.5))
	}
}

func TestBadQuantile(t *testing.T) {
	_, err := Factory().New(&Config{URL: "http://127.0.0.1:1/metrics", Timeout: pipebench.Duration(time.Second),
		Metrics: []Mapping{{KPI: "x", Metric: "y", Kind: "histogram", Quantiles: []float64{99}}}}, pipebench.Env{})
	if err == nil {
		t.Fatal("quantile 99 accepted")
	}
}
