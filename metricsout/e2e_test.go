package metricsout_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/children"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/metricsout"
	"github.com/pipebench/pipebench/sut/all"
)

func TestMain(m *testing.M) {
	children.MaybeRun() // the embedded collector runs as a child of the test binary
	os.Exit(m.Run())
}

// CollectorEnv names the test-only collector with the Prometheus exporter
// (tools/otelcol-prom; .ci/run builds it into .cache/otelcol-prom).
const CollectorEnv = "PIPEBENCH_TEST_OTELCOL_PROM"

// e2eScenario drives a real OpenTelemetry Collector (the embedded one) with
// traces into pipebench's OTLP sink, which refuses half of the exports in
// the second phase; the collector's own metrics are observed.
const e2eScenario = `name: metricsout-e2e
case: through a collector
version: e2e
sut: {type: otelcol, queue_size: 1000}
target: {driver: otlp}
workload: {generator: otlp-traces, spans_per_trace: 2, attributes: 4, batch: 10}
sink: {type: otlp}
observers: [{type: prometheus, preset: otelcol}]
interval: 500ms
drain: 5s
phases:
  - name: steady
    duration: 3s
    rate: 1000/s
  - name: backpressure
    duration: 3s
    rate: 1000/s
    faults: {error_ratio: 0.5, error_status: 503}
`

// startCollector starts the collector with the OTLP receiver in front of
// the Prometheus exporter and returns its OTLP gRPC address and its
// exporter's /metrics URL; without the binary, it skips the test.
func startCollector(t *testing.T) (otlp, metrics string) {
	t.Helper()
	otlp, _, metrics = startCollectorHTTP(t)
	return otlp, metrics
}

// startCollectorHTTP is startCollector whose OTLP receiver also takes
// OTLP/HTTP, at otlpHTTP (host:port).
func startCollectorHTTP(t *testing.T) (otlp, otlpHTTP, metrics string) {
	t.Helper()
	bin := os.Getenv(CollectorEnv)
	if bin == "" {
		if p, err := filepath.Abs("../.cache/otelcol-prom/otelcol-prom"); err == nil {
			if _, err := os.Stat(p); err == nil {
				bin = p
			}
		}
	}
	if bin == "" {
		t.Skipf("no collector with the Prometheus exporter: tools/otelcol-prom/build.sh DIR, then %s=DIR/otelcol-prom (.ci/run does)", CollectorEnv)
	}
	otlp, otlpHTTP, prom := testutil.FreeAddr(t), testutil.FreeAddr(t), testutil.FreeAddr(t)
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  prometheus:
    endpoint: %s
    metric_expiration: 10m
service:
  telemetry:
    logs: {level: warn}
    metrics: {level: none}
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [prometheus]
`, otlp, otlpHTTP, prom)
	path := filepath.Join(t.TempDir(), "collector.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", path)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	metrics = "http://" + prom + "/metrics"
	testutil.Eventually(t, 30*time.Second, func() bool {
		resp, err := http.Get(metrics)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "the collector did not serve %s:\n%s", metrics, &logs)
	return otlp, otlpHTTP, metrics
}

// A real run, its metrics scraped straight by a Prometheus with native
// histograms and by one without, and pushed as OTLP through a collector's
// Prometheus exporter that the first also scrapes: the counters equal the
// Result's, every quantile the table prints agrees with PromQL's (within
// one native bucket, 0.27%, on both paths; within its classic bucket on the
// old server), only the final phase and status read 1 after the run, every
// series has the run's id, the pipeline's observed KPIs equal the table's,
// and every query of the Grafana dashboard gives data.
func TestARunInPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 6 s scenario against a collector, and Prometheus servers")
	}
	collectorOTLP, collectorMetrics := startCollector(t)
	metricsAddr := testutil.FreeAddr(t)
	collectorTarget := strings.TrimSuffix(strings.TrimPrefix(collectorMetrics, "http://"), "/metrics")
	native := startPrometheus(t, true, scrapeJob{name: "pipebench", targets: []string{metricsAddr}},
		scrapeJob{name: "collector", targets: []string{collectorTarget}, honorLabels: true})
	classic := startPrometheus(t, false, scrapeJob{name: "pipebench", targets: []string{metricsAddr}})

	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	plan := scenariotest.Plan(t, reg, "e2e.yaml", e2eScenario)
	ctx := context.Background()
	lv, err := execute.StartLive(ctx, execute.LiveOptions{MetricsAddr: metricsAddr, OTLPMetrics: collectorOTLP}, plan)
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Stop()
	began := time.Now()
	out := execute.Run(ctx, plan, execute.Params{Registry: reg, Keep: execute.Keep{NoStore: true},
		Progress: lv.Update, Show: func(r *pipebench.Result) error { lv.Finish(r); return nil }})
	if out.Result == nil {
		t.Fatalf("no result: %v", out.Err)
	}
	res := out.Result
	id := res.Manifest.RunID
	if res.Manifest.Status != pipebench.StatusCompleted {
		t.Logf("the run is %s (%v): the checks below still hold", res.Manifest.Status, res.Manifest.Reasons)
	}
	host, _ := os.Hostname()
	direct := fmt.Sprintf(`run_id=%q, job="pipebench", instance=%q`, id, metricsAddr)
	viaCollector := fmt.Sprintf(`run_id=%q, job="pipebench", instance=%q`, id, host)
	// Wait until both servers stored the final values (on both paths).
	// The metrics stay served meanwhile (lv.Close comes last).
	for _, c := range []struct {
		p   *prom
		sel string
	}{{native, direct}, {classic, direct}, {native, viaCollector}} {
		testutil.Eventually(t, 30*time.Second, func() bool {
			s, err := c.p.tryQuery(metricsout.MetricFinished + "{" + c.sel + "}")
			return err == nil && len(s) == 1 && s[0].Value == 1
		}, "prometheus never stored the final values of {%s}", c.sel)
	}
	// Every instant query below reads what the servers stored by now.
	for _, p := range []*prom{native, classic} {
		p.at = p.query(t, "vector(1)")[0].At
	}
	ended := time.Now().Add(2 * time.Second) // ranges: past the final scrape

	tot := func(name string, labels ...string) float64 {
		v, ok := res.Total.Get(name, labels...)
		if !ok {
			t.Fatalf("the Result has no %s %v", name, labels)
		}
		return v
	}
	t.Run("counters", func(t *testing.T) {
		for _, c := range []struct {
			metric, match string
			want          float64
		}{
			{metricsout.MetricSent, "", tot("sent")},
			{metricsout.MetricAccepted, "", tot("accepted")},
			{metricsout.MetricDropped, "", tot("dropped")},
			{metricsout.MetricDelivered, "", tot("delivered")},
			{metricsout.MetricFailed, `class="refused"`, tot("errors", "class", "refused")},
			{metricsout.MetricFailed, `class="timeout"`, tot("errors", "class", "timeout")},
			{metricsout.MetricFailed, `class="error"`, tot("errors", "class", "error")},
		} {
			for _, p := range []struct {
				name string
				p    *prom
				sel  string
			}{{"native", native, direct}, {"classic", classic, direct}, {"collector", native, viaCollector}} {
				sel := p.sel
				if c.match != "" {
					sel += ", " + c.match
				}
				if got := p.p.one(t, c.metric+"{"+sel+"}"); got != c.want {
					t.Errorf("%s %s{%s}: %v, the table %v", p.name, c.metric, c.match, got, c.want)
				}
			}
		}
	})
	t.Run("quantiles", func(t *testing.T) {
		// Every quantile the table prints: kpi.Quantiles and the
		// maximum for the send latency, p50, p90, p99 and the maximum
		// end to end.
		type quantile struct {
			suffix string
			q      float64
		}
		var send []quantile
		for _, q := range kpi.Quantiles {
			send = append(send, quantile{q.Suffix, q.Q / 100})
		}
		send = append(send, quantile{"max", 1})
		for _, h := range []struct {
			metric, kpi string
			quantiles   []quantile
		}{
			{metricsout.MetricLatency, "latency", send},
			{metricsout.MetricE2ELatency, "e2e_latency", []quantile{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1}}},
		} {
			for _, qs := range h.quantiles {
				table, ok := res.Total.Get(h.kpi + "." + qs.suffix)
				if !ok {
					t.Errorf("the table has no %s.%s", h.kpi, qs.suffix)
					continue
				}
				table /= 1000 // ms to s
				q := qs.q
				checkNative(t, native, "direct", h.metric, direct, q, table)
				checkNative(t, native, "via the collector", h.metric, viaCollector, q, table)
				checkClassic(t, classic, h.metric, direct, q, table)
			}
		}
		// Each phase's, by the phase a send was scheduled in: the table's
		// phase column (the dashboard's "Latency by phase"), also for the
		// backpressure phase whose slow sends were answered after it.
		for _, ph := range res.Phases {
			for _, h := range []struct{ metric, kpi string }{{metricsout.MetricPhaseLatency, "latency"}, {metricsout.MetricPhaseE2ELatency, "e2e_latency"}} {
				for _, qs := range []struct {
					suffix string
					q      float64
				}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}} {
					table, ok := ph.Get(h.kpi + "." + qs.suffix)
					if !ok {
						t.Errorf("phase %s has no %s.%s", ph.Name, h.kpi, qs.suffix)
						continue
					}
					sel := direct + `, phase="` + ph.Name + `"`
					checkNative(t, native, "phase "+ph.Name, h.metric, sel, qs.q, table/1000)
					checkNative(t, native, "phase "+ph.Name+" via the collector", h.metric, viaCollector+`, phase="`+ph.Name+`"`, qs.q, table/1000)
				}
			}
		}
	})
	t.Run("statesets", func(t *testing.T) {
		for _, p := range []struct {
			name string
			p    *prom
			sel  string
		}{{"native", native, direct}, {"classic", classic, direct}, {"collector", native, viaCollector}} {
			for _, c := range []struct {
				metric, label, want string
				states              int
			}{{metricsout.MetricPhase, "phase", metricsout.PhaseDone, 4}, {metricsout.MetricRunStatus, "status", string(res.Manifest.Status), len(metricsout.Statuses)}} {
				all := p.p.query(t, c.metric+"{"+p.sel+"}")
				var ones []string
				for _, s := range all {
					if s.Value == 1 {
						ones = append(ones, s.Metric[c.label])
					}
				}
				if len(all) != c.states || len(ones) != 1 || ones[0] != c.want {
					t.Errorf("%s: %s after the run: %d states, at 1: %v (want only %s)", p.name, c.metric, len(all), ones, c.want)
				}
			}
		}
		// The collector's own exposition, read directly: what any
		// server scraping it after the run gets.
		lines := scrapeText(t, collectorMetrics)
		for _, c := range []struct{ metric, want string }{{metricsout.MetricPhase, `phase="done"`}, {metricsout.MetricRunStatus, `status="` + string(res.Manifest.Status) + `"`}} {
			var ones []string
			for _, l := range lines[c.metric] {
				if strings.Contains(l, id) && strings.HasSuffix(l, " 1") {
					ones = append(ones, l)
				}
			}
			if len(ones) != 1 || !strings.Contains(ones[0], c.want) {
				t.Errorf("the collector exposes %s at 1: %q (want only %s)", c.metric, ones, c.want)
			}
		}
	})
	t.Run("names and run ids", func(t *testing.T) {
		for _, p := range []*prom{native, classic} {
			if s := p.query(t, `{__name__=~"pipebench_.+", run_id=""}`); len(s) != 0 {
				t.Errorf("series without run_id: %v", s)
			}
		}
		// The same families through the collector as straight from
		// pipebench: the OTLP names and units give the Prometheus names
		// back.
		fams := func(lines map[string][]string) []string {
			var out []string
			for n := range lines {
				for _, part := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, part); ok && slices.Contains([]string{metricsout.MetricLatency, metricsout.MetricServiceTime, metricsout.MetricE2ELatency,
						metricsout.MetricPhaseLatency, metricsout.MetricPhaseE2ELatency}, b) {
						n = b
					}
				}
				if strings.HasPrefix(n, "pipebench_") && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
			slices.Sort(out)
			return out
		}
		want, got := fams(scrapeText(t, "http://"+metricsAddr+"/metrics")), fams(scrapeText(t, collectorMetrics))
		if !slices.Equal(want, got) {
			t.Errorf("families through the collector:\n%v\nstraight from pipebench:\n%v", got, want)
		}
		for _, n := range metricsout.Names() {
			if !slices.Contains(want, n) {
				t.Errorf("%s is not exposed", n)
			}
		}
	})
	t.Run("observed", func(t *testing.T) {
		inst := `, sut_instance="collector-0"`
		for _, c := range []struct {
			metric string
			want   float64
		}{
			{metricsout.ObservedPrefix + "receiver_accepted_total", tot("receiver_accepted.total", "instance", "collector-0")},
			{metricsout.ObservedPrefix + "exporter_sent_total", tot("exporter_sent.total", "instance", "collector-0")},
			{metricsout.ObservedPrefix + "cpu_seconds_total", tot("cpu_seconds.total", "instance", "collector-0")},
			// the last value observed, after the drain
			{metricsout.MetricExporterQueue, lastObserved(t, res, "exporter_queue_size", "collector-0")},
		} {
			for _, p := range []struct {
				name string
				p    *prom
				sel  string
			}{{"native", native, direct}, {"classic", classic, direct}, {"collector", native, viaCollector}} {
				if got := p.p.one(t, c.metric+"{"+p.sel+inst+"}"); got != c.want {
					t.Errorf("%s %s: %v, the table %v", p.name, c.metric, got, c.want)
				}
			}
		}
		if mem := native.one(t, metricsout.ObservedPrefix+"memory_bytes{"+direct+inst+"}"); mem < 1<<20 {
			t.Errorf("the collector's memory: %v bytes", mem)
		}
	})
	t.Run("dashboard", func(t *testing.T) {
		vars := map[string]string{"__rate_interval": "2s", "job": "pipebench", "instance": metricsAddr, "run": id}
		checkDashboard(t, native, vars, began, ended, nil, nil)
		checkDashboard(t, classic, vars, began, ended, nil, nil)
		vars["instance"] = host
		checkDashboard(t, native, vars, began, ended, nil, nil)
	})
	lv.Close(nil, io.Discard)
}

// lastObserved is the last value of the Result's series name of an
// instance.
func lastObserved(t *testing.T, res *pipebench.Result, name, instance string) float64 {
	t.Helper()
	for _, s := range res.Series {
		if s.Name == name && s.Labels["instance"] == instance && len(s.Points) > 0 {
			return s.Points[len(s.Points)-1].V
		}
	}
	t.Fatalf("the Result has no series %s{instance=%s}", name, instance)
	return 0
}

// rankQuantile is the quantile PromQL must be asked for to land on the
// observation HdrHistogram's ValueAtQuantile picks among n: the rank
// floor(q*n + 0.5), as a fraction of n (PromQL takes the first bucket whose
// cumulative count reaches q*n).
func rankQuantile(q, n float64) float64 {
	r := math.Max(1, math.Min(n, math.Floor(q*n+0.5)))
	return r / n
}

// checkNative checks PromQL's quantile from the native histogram metric
// {sel} against the table's value: in the same native bucket (schema 8).
// It logs PromQL's answer to the plain quantile too.
func checkNative(t *testing.T, p *prom, path, metric, sel string, q, table float64) {
	t.Helper()
	h := metric + "{" + sel + "}"
	n := p.one(t, "histogram_count("+h+")")
	got := p.one(t, fmt.Sprintf("histogram_quantile(%g, %s)", rankQuantile(q, n), h))
	plain := p.one(t, fmt.Sprintf("histogram_quantile(%g, %s)", q, h))
	i := math.Ceil(math.Log2(table) * 256)
	lo, hi := math.Exp2((i-1)/256), math.Exp2(i/256)
	t.Logf("%s q=%g %s: table %.6g s, PromQL %.6g s (%+.3f%%), at q %.6g s (%+.3f%%)", metric, q, path, table, plain, 100*(plain/table-1), got, 100*(got/table-1))
	if !(got >= lo*(1-1e-9) && got <= hi*(1+1e-9)) {
		t.Errorf("%s q=%g %s: PromQL %v s is not in the table's %v s native bucket (%v, %v]", metric, q, path, got, table, lo, hi)
	}
}

// checkClassic checks PromQL's quantile from the classic buckets against
// the table's value: in the same bucket.
func checkClassic(t *testing.T, p *prom, metric, sel string, q, table float64) {
	t.Helper()
	n := p.one(t, metric+"_count{"+sel+"}")
	got := p.one(t, fmt.Sprintf("histogram_quantile(%g, %s_bucket{%s})", rankQuantile(q, n), metric, sel))
	lo, hi := 0.0, math.Inf(1)
	for _, b := range metricsout.Buckets {
		if b < table {
			lo = b
		} else {
			hi = b
			break
		}
	}
	if math.IsInf(hi, 1) {
		hi = metricsout.Buckets[len(metricsout.Buckets)-1] // PromQL answers the largest bound
	}
	if !(got >= lo && got <= hi) {
		t.Errorf("%s q=%g classic: PromQL %v s is not in the table's %v s bucket (%v, %v]", metric, q, got, table, lo, hi)
	}
}

// scrapeText reads a /metrics endpoint in the text format and returns its
// sample lines by series name.
func scrapeText(t *testing.T, u string) map[string][]string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return metricsout.ParseExposition(resp.Body)
}
