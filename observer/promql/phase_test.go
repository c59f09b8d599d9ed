package promql

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipebench/pipebench"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/report"
)

// Third parties' numbers per phase, through a real Prometheus: the test's
// API server records each request it gets in a latency histogram, an
// insert counter and a connections gauge, with values set by the phase the
// request was sent in (0.07 s, 1 insert, 10 connections in the first; 1.5
// s, 4 inserts, 30 connections in the second). The run's PromQL observer
// must give each phase its own request rate, insert rate, P50/P75/P95/P99
// latency and connections as KPIs, and the table must show them as rows
// with a column per phase.
func TestPhaseKPIsThroughPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two phases against a real Prometheus")
	}
	const rate, secs = 100, 3 // per phase; the second phase's items follow the first's
	const n1 = rate * secs
	reg := prometheus.NewRegistry()
	lat := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "api_request_duration_seconds", Help: "h", Buckets: []float64{0.05, 0.1, 0.5, 1, 2, 5}})
	reqs := prometheus.NewCounter(prometheus.CounterOpts{Name: "api_requests_total", Help: "c"})
	inserts := prometheus.NewCounter(prometheus.CounterOpts{Name: "db_inserts_total", Help: "c"})
	conns := prometheus.NewGauge(prometheus.GaugeOpts{Name: "db_connections", Help: "g"})
	reg.MustRegister(lat, reqs, inserts, conns)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		payload.Extract(r.Header.Get, r.Header.Get("Content-Type"), body, func(seq uint64, _ time.Time) {
			reqs.Inc()
			if seq <= n1 {
				lat.Observe(0.07)
				inserts.Add(1)
				conns.Set(10)
			} else {
				lat.Observe(1.5)
				inserts.Add(4)
				conns.Set(30)
			}
		})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	const scrape = 250 * time.Millisecond
	base := startPrometheusEvery(t, strings.TrimPrefix(srv.URL, "http://"), scrape)
	// The run starts once Prometheus has the target's series.
	o, err := New(Config{URL: base, Timeout: pipebench.Duration(5 * time.Second), Step: pipebench.Duration(time.Second),
		Queries: []Query{{Name: "b", Query: "sum by (le) (api_request_duration_seconds_bucket)", Kind: "histogram"}}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		pts, err := o.Observe(context.Background(), time.Now())
		return err == nil && len(pts) == 7
	}, "Prometheus never returned the target's 7 buckets")

	r := pipebench.NewRegistry()
	for _, err := range []error{r.Generators.Register(payload.EventFactory()), r.Drivers.Register(httpdriver.Factory()), r.Observers.Register(Factory())} {
		if err != nil {
			t.Fatal(err)
		}
	}
	yaml := fmt.Sprintf(`
name: promql-phases
target: {driver: http, url: %q}
workload: {generator: event}
observers:
  - type: promql
    url: %q
    queries:
      - {name: api_requests, query: sum(api_requests_total), kind: counter}
      - {name: db_inserts, query: sum(db_inserts_total), kind: counter}
      - {name: db_connections, query: sum(db_connections)}
      - {name: api_latency_seconds, query: "sum by (le) (api_request_duration_seconds_bucket)", kind: histogram}
interval: 250ms
phases:
  - {name: light, duration: %ds, rate: %d/s}
  - {name: heavy, duration: %ds, rate: %d/s}
`, srv.URL+"/events", base, secs, rate, secs, rate)
	res := scenariotest.Run(t, r, "promql-phases.yaml", yaml)
	light, heavy := &res.Phases[0], &res.Phases[1]
	get := func(p *pipebench.PhaseResult, name string) float64 {
		v, ok := p.Get(name)
		if !ok {
			t.Errorf("phase %s has no %s", p.Name, name)
		}
		return v
	}
	// The light phase sees only its own requests: every quantile in the
	// (0.05, 0.1] bucket, interpolated as histogram_quantile does.
	for _, c := range []struct {
		name string
		want float64
	}{{"p50", 0.075}, {"p75", 0.0875}, {"p95", 0.0975}, {"p99", 0.0995}} {
		if v := get(light, "api_latency_seconds."+c.name); math.Abs(v-c.want) > 1e-9 {
			t.Errorf("light api_latency_seconds.%s = %g, want %g", c.name, v, c.want)
		}
	}
	// The heavy phase's window starts at the light phase's last
	// observation, which Prometheus had up to one scrape before: up to
	// rate × (scrape + interval) light requests fall in it. Its quantiles lie
	// in (1, 2] with 1.5 at most that share off.
	share := float64(rate) * (scrape + 250*time.Millisecond).Seconds() / float64(n1)
	for _, c := range []struct {
		name string
		want float64
	}{{"p50", 1.5}, {"p75", 1.75}, {"p95", 1.95}, {"p99", 1.99}} {
		v := get(heavy, "api_latency_seconds."+c.name)
		if v > c.want+1e-9 || v < c.want-share-0.01 || v <= 1 {
			t.Errorf("heavy api_latency_seconds.%s = %g, want %g (less at most %.2f)", c.name, v, c.want, share)
		}
	}
	// Rates per phase: requests at the phase's rate; inserts 1 and 4 per
	// request. Prometheus lags a scrape at each end, so within 20%.
	for _, c := range []struct {
		p    *pipebench.PhaseResult
		name string
		want float64
	}{{light, "api_requests_rate", rate}, {heavy, "api_requests_rate", rate}, {light, "db_inserts_rate", rate}, {heavy, "db_inserts_rate", 4 * rate}} {
		if v := get(c.p, c.name); v < 0.8*c.want || v > 1.2*c.want {
			t.Errorf("%s %s = %.1f/s, want about %g/s", c.p.Name, c.name, v, c.want)
		}
	}
	if v := get(light, "db_connections.max"); v != 10 {
		t.Errorf("light db_connections.max = %g, want 10", v)
	}
	if v := get(heavy, "db_connections.max"); v != 30 {
		t.Errorf("heavy db_connections.max = %g, want 30", v)
	}
	// The table: a row per KPI, a column per phase.
	_, rows := report.Table(res)
	found := map[string][]string{}
	for _, row := range rows {
		if row.Group == "observed" {
			found[row.Label] = row.Cells
		}
	}
	for _, label := range []string{"api latency seconds.p50", "api latency seconds.p99", "api requests rate", "db inserts rate", "db connections.max"} {
		if cells := found[label]; len(cells) < 2 || cells[0] == "-" || cells[1] == "-" {
			t.Errorf("the table has no row %q with both phases: %v (rows %v)", label, cells, found)
		}
	}
}
