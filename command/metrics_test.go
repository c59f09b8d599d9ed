package command

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/metricsout"
)

// startPrometheus starts Debian's prometheus on 127.0.0.1 with a temporary
// configuration and storage, scraping target every 200 ms, and returns its
// base URL. It skips the test when the binary is absent.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: pipebench\n    static_configs:\n      - targets: [%q]\n", target)
	base := promtest.Prometheus(t, cfg, "the test that scrapes --metrics-addr with a real Prometheus")
	// Service discovery hands new targets to the scrape loop only every
	// few seconds: wait until the target is known, so that the run is
	// scraped from its start.
	testutil.Eventually(t, 30*time.Second, func() bool {
		resp, err := http.Get(base + "/api/v1/targets")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			Data struct {
				ActiveTargets []struct{ ScrapeURL string }
			}
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil {
			return false
		}
		for _, at := range body.Data.ActiveTargets {
			if strings.Contains(at.ScrapeURL, target) {
				return true
			}
		}
		return false
	}, "prometheus never took %s as a target", target)
	return base
}

// promQuery runs an instant PromQL query and returns each series' value by
// the value of label (or "" for a single series).
func promQuery(t *testing.T, base, q, label string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if body.Status != "success" {
		t.Fatalf("query %s: %s", q, body.Error)
	}
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v", q, r.Value[1])
		}
		out[r.Metric[label]] = v
	}
	return out
}

// `pipebench run --metrics-addr`: a real Prometheus scrapes the endpoint
// while the run goes on, and the values queried back with PromQL agree with
// the Result.
func TestMetricsAddrScrapedByPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4 s scenario and a Prometheus server")
	}
	metricsAddr := testutil.FreeAddr(t)
	prom := startPrometheus(t, metricsAddr)

	began := time.Now()
	stderr, res := runSteadyThenFailing(t, "metrics-out", "drain: 5s", "--metrics-addr", metricsAddr, "--metrics-linger", "30s")
	if !strings.Contains(stderr, "metrics: http://"+metricsAddr+"/metrics") {
		t.Errorf("stderr does not name the endpoint:\n%s", stderr)
	}
	want := totalOf(t, res)

	// The run waited for the scrape after it ended; wait until Prometheus
	// has stored it. Past the run the target is down (stale), so read the
	// last stored values with last_over_time.
	last := func(metric, label string) map[string]float64 {
		return promQuery(t, prom, "last_over_time("+metric+"[10m])", label)
	}
	testutil.Eventually(t, 20*time.Second, func() bool {
		return last(metricsout.MetricFinished, "")[""] == 1
	}, "prometheus never stored the final scrape (pipebench_run_finished 1)")

	checks := []struct {
		metric, label, value string
		want                 float64
	}{
		{metricsout.MetricSent, "", "", want("sent")},
		{metricsout.MetricAccepted, "", "", want("accepted")},
		{metricsout.MetricDropped, "", "", want("dropped")},
		{metricsout.MetricDelivered, "", "", want("delivered")},
		{metricsout.MetricFailed, "class", "error", want("errors", "class", "error")},
		{metricsout.MetricFailed, "class", "refused", want("errors", "class", "refused")},
		{metricsout.MetricFailed, "class", "timeout", want("errors", "class", "timeout")},
	}
	for _, c := range checks {
		got, ok := last(c.metric, c.label)[c.value]
		if !ok || got != c.want {
			t.Errorf("%s{%s=%q}: prometheus has %v (present %v), the Result %v", c.metric, c.label, c.value, got, ok, c.want)
		}
	}
	if want("errors", "class", "refused") == 0 {
		t.Errorf("the failing phase produced no errors: the test proves nothing about classes")
	}
	// Every send is in the latency histogram, every delivered item in the
	// end-to-end one.
	sends := 0.0
	for _, v := range last(metricsout.MetricSends, "class") {
		sends += v
	}
	if n := last(metricsout.MetricLatency+"_count", "")[""]; n != sends || n == 0 {
		t.Errorf("latency histogram counts %v sends, pipebench_sends_total adds up to %v", n, sends)
	}
	if n := last(metricsout.MetricE2ELatency+"_count", "")[""]; n != want("delivered") {
		t.Errorf("e2e histogram counts %v items, the Result delivered %v", n, want("delivered"))
	}
	// PromQL's p99 from the buckets lies in the bucket of the Result's p99.
	q := promQuery(t, prom, "histogram_quantile(0.99, last_over_time("+metricsout.MetricLatency+"_bucket[10m]))", "")[""]
	p99 := want("latency.p99") / 1000
	lo, hi := bucketAround(p99)
	if q < lo || q > hi {
		t.Errorf("histogram_quantile(0.99) = %v s, the Result's p99 %v s lies in (%v, %v]", q, p99, lo, hi)
	}
	// The live feed: Prometheus saw both phases and counters growing
	// while the run went on, not only the final values.
	phases := promQuery(t, prom, "max_over_time("+metricsout.MetricPhase+"[10m])", "phase")
	for _, p := range []string{"steady", "failing"} {
		if phases[p] != 1 {
			t.Errorf("prometheus never saw phase %q live: %v", p, phases)
		}
	}
	if n := promQuery(t, prom, "count_over_time("+metricsout.MetricSent+"[10m])", "")[""]; n < 5 {
		t.Errorf("only %v scrapes of %s", n, metricsout.MetricSent)
	}
	// Every query of the Grafana dashboard in examples/ about pipebench's
	// own series gives data over the run, against the real Prometheus
	// (this scenario has no observer: the pipeline's series are absent).
	vars := strings.NewReplacer("$__rate_interval", "1s", "$__range", "10m", "$job", "pipebench", "$instance", metricsAddr, "$run", res.Manifest.RunID)
	for _, e := range dashboardExprs(t, "../examples/grafana-dashboard.json") {
		if strings.Contains(e, metricsout.ObservedPrefix) {
			continue
		}
		q := vars.Replace(e)
		if n := promRangeSeries(t, prom, q, began, time.Now()); n == 0 {
			t.Errorf("dashboard query %q gives no data over the run", q)
		}
	}
	if st := promQuery(t, prom, "last_over_time("+metricsout.MetricRunStatus+"[10m])", "status"); st[string(pipebench.StatusCompleted)] != 1 {
		t.Errorf("run info's final status: %v, want %s", st, pipebench.StatusCompleted)
	}
}

// bucketAround returns the bounds of the histogram bucket holding v, widened
// by one bucket either side when v is within 1% of a bound (HdrHistogram
// keeps values to 0.1%).
func bucketAround(v float64) (lo, hi float64) {
	lo, hi = 0, math.Inf(1)
	for _, b := range metricsout.Buckets {
		if b < v*0.99 {
			lo = b
		}
		if b >= v*1.01 && math.IsInf(hi, 1) {
			hi = b
		}
	}
	return lo, hi
}

// promRangeSeries runs a PromQL range query over [from, to] at a 500 ms step
// and returns how many series have at least one point.
func promRangeSeries(t *testing.T, base, q string, from, to time.Time) int {
	t.Helper()
	v := url.Values{"query": {q}, "start": {strconv.FormatInt(from.Unix(), 10)},
		"end": {strconv.FormatInt(to.Unix()+1, 10)}, "step": {"0.5"}}
	resp, err := http.Get(base + "/api/v1/query_range?" + v.Encode())
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			Result []struct{ Values [][2]any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if body.Status != "success" {
		t.Fatalf("query %s: %s", q, body.Error)
	}
	n := 0
	for _, r := range body.Data.Result {
		if len(r.Values) > 0 {
			n++
		}
	}
	return n
}

// dashboardExprs returns the PromQL expression of every panel target of a
// Grafana dashboard JSON file.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct{ Targets []struct{ Expr string } }
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

// runSteadyThenFailing runs, with the flags, a scenario called name of two
// 2-second phases at 200/s through the HTTP sink, which refuses 30% of the
// second phase's requests (503), with settings (top-level YAML lines); a
// failed run fails the test. It returns the run's stderr and Result.
func runSteadyThenFailing(t *testing.T, name, settings string, flags ...string) (string, *pipebench.Result) {
	t.Helper()
	dir := t.TempDir()
	scen := filepath.Join(dir, name+".yaml")
	os.WriteFile(scen, []byte(`name: `+name+`
target: {driver: http, timeout: 2s}
sink: {type: http}
`+settings+`
phases:
  - name: steady
    duration: 2s
    rate: 200/s
  - name: failing
    duration: 2s
    rate: 200/s
    faults: {error_ratio: 0.3, error_status: 503}
`), 0o644)
	out := filepath.Join(dir, "result.json")
	stdout, stderr, code := cli(t, append([]string{"run", scen, "--quiet", "--no-store", "--out", out}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res, err := pipebench.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	return stderr, res
}

// totalOf returns the value of a KPI of res's total row by name and
// labels; a KPI it lacks fails the test.
func totalOf(t *testing.T, res *pipebench.Result) func(name string, labels ...string) float64 {
	return func(name string, labels ...string) float64 {
		v, ok := res.Total.Get(name, labels...)
		if !ok {
			t.Fatalf("the Result has no %s %v", name, labels)
		}
		return v
	}
}
