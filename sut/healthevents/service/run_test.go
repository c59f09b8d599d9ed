package service_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/sut/all"
	"github.com/pipebench/pipebench/sut/healthevents"
	"github.com/pipebench/pipebench/sut/healthevents/service"
)

// started is a system under test the test started itself, so that it can
// read the store and the API server directly after the run.
type started struct{ *service.Server }

func (started) Start(context.Context) error    { return nil }
func (started) Shutdown(context.Context) error { return nil }

// apiMetrics reads the API server's own /metrics directly: every request
// counted, the PATCHes of nodes, and the request-duration buckets.
func apiMetrics(t *testing.T, srv *service.Server) (total, patches float64, buckets map[float64]float64) {
	t.Helper()
	raw, err := srv.KubeClient().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		total += m.Counter.GetValue()
		l := map[string]string{}
		for _, lp := range m.Label {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["verb"] == "PATCH" && l["resource"] == "nodes" {
			patches += m.Counter.GetValue()
		}
	}
	buckets = map[float64]float64{}
	for _, m := range fams["apiserver_request_duration_seconds"].GetMetric() {
		for _, b := range m.Histogram.GetBucket() {
			buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	return total, patches, buckets
}

// bucketOf returns the bounds of the bucket holding the q-quantile of the
// observations between two readings of cumulative buckets.
func bucketOf(before, after map[float64]float64, q float64) (lo, hi float64) {
	les := make([]float64, 0, len(after))
	for le := range after {
		les = append(les, le)
	}
	sort.Float64s(les)
	n := after[math.Inf(1)] - before[math.Inf(1)]
	for i, le := range les {
		if after[le]-before[le] >= q*n {
			if i > 0 {
				lo = les[i-1]
			}
			return lo, le
		}
	}
	return 0, math.Inf(1)
}

func seriesLast(res *pipebench.Result, name string) (float64, bool) {
	for _, s := range res.Series {
		if s.Name == name && len(s.Labels) == 0 && len(s.Points) > 0 {
			return s.Points[len(s.Points)-1].V, true
		}
	}
	return 0, false
}

// The third parties' numbers of an nvsentinel run, each against an
// independent reading of the same thing taken directly after the run: the
// store's inserts and events stored (the KPIs from PromQL over the store's
// serverStatus) against serverStatus and collStats read through the
// official driver; its memory against /proc; and, with the kube binaries,
// the API server's PATCHes of nodes and requests (the KPIs from PromQL
// over its own metrics) against its /metrics read directly, and the
// phase's P50 in the bucket the direct readings put it in.
func TestThirdPartyKPIsAgainstTheirOwnReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario with a store, Prometheus and maybe an API server")
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	bin := os.Getenv(kubetest.EnvBin)
	dir := t.TempDir()
	cfg := healthevents.DefaultConfig()
	cfg.Listen = "unix://" + filepath.Join(dir, "he.sock")
	cfg.QuarantineWorkers = 4
	cfg.Kube.Bin, cfg.Kube.Nodes = bin, 50
	srv, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.SUTs.Register(pipebench.NewSimpleFactory("started", "the test's", func(pipebench.Env) (pipebench.SUT, error) { return started{srv}, nil })); err != nil {
		t.Fatal(err)
	}
	var before0, beforeP float64
	if bin != "" {
		before0, beforeP, _ = apiMetrics(t, srv)
	}
	// Prometheus scrapes every 2 s (a loaded 2-core machine misses 1 s
	// scrape timeouts), so the load phase lasts 8 s for its rates.
	const rate, secs = 40, 8
	yaml := fmt.Sprintf(`
name: third-parties
sut: {type: started}
target: {driver: grpc, method: pipebench.healthevents.v1.HealthEventService/Report}
workload:
  generator: grpc-message
  message: {version: 1, events: [{node_name: "node-{{seq %% 50}}", sequence: "{{seq}}", severity: SEVERITY_FATAL}]}
observers:
  - type: promql
    start: {scrape_interval: 2s}
    queries:
      - {name: apiserver_requests, query: sum(apiserver_request_total), kind: counter}
      - {name: node_patches, query: 'sum(apiserver_request_total{verb="PATCH",resource="nodes"})', kind: counter}
      - {name: apiserver_latency_seconds, query: sum by (le) (apiserver_request_duration_seconds_bucket), kind: histogram}
      - {name: database_inserts, query: 'sum(mongodb_op_counters_total{type="insert"})', kind: counter}
      - {name: database_events_stored, query: max(mongodb_events_stored), kind: counter}
      - {name: database_memory_mb, query: max(mongodb_ss_mem_resident)}
      - {name: database_connections, query: 'max(mongodb_ss_connections{conn_type="current"})'}
      - {name: store_backlog, query: max(healthevents_store_unconfirmed)}
  - {type: effect, url: /effects, cursor_param: from, cursor: next, items: effects, seq: seq, sent: sent, at: applied, backlog: backlog}
interval: 1s
drain: 20s
phases:
  - {name: load, duration: %ds, rate: %d/s}
`, secs, rate)
	plan := scenariotest.Plan(t, reg, "third-parties.yaml", yaml)
	// The API server's own buckets read directly when the load phase
	// starts and when it ends (the drain begins).
	var phaseB0, phaseB1 map[float64]float64
	progress := func(p runner.Progress) {
		if bin == "" {
			return
		}
		if p.Phase == "load" && !p.Draining && phaseB0 == nil {
			_, _, phaseB0 = apiMetrics(t, srv)
		}
		if p.Draining && phaseB1 == nil {
			_, _, phaseB1 = apiMetrics(t, srv)
		}
	}
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	const n = rate * secs
	if len(srv.Applied()) != n {
		t.Fatalf("%d of %d events applied", len(srv.Applied()), n)
	}

	// The store, through the official driver.
	cl, err := mongo.Connect(options.Client().ApplyURI(srv.Store().URI()).SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	status, err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	stored, err := cl.Database("nvsentinel").Collection("HealthEvents").CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	// The run reads the store's count through Prometheus, which scrapes it
	// every 2 s: its last reading is the store's count at most one scrape
	// before the run's end (exact on a quiet machine; on a loaded one the
	// last events may be stored after the last scrape the run read).
	if v, _ := res.Total.Get("database_events_stored.total"); v > float64(stored) || float64(stored)-v > 2*rate || stored != n {
		t.Errorf("events stored: the run says %v, the store's count %d, sent %d", v, stored, n)
	} else if v != float64(stored) {
		t.Logf("events stored: the run's last reading %v, the store's count %d: one scrape behind", v, stored)
	}
	if v, _ := seriesLast(res, "database_inserts"); v != float64(status.Lookup("metrics", "commands", "insert", "total").AsInt64()) {
		t.Errorf("inserts: the run's last reading %v, serverStatus %v", v, status.Lookup("metrics", "commands", "insert", "total"))
	}
	if ir, ok := res.Phases[0].Get("database_inserts_rate"); !ok || ir < 0.5*rate || ir > 1.5*rate {
		t.Errorf("insert rate %v/s in the load phase, sent %d/s", ir, rate)
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(srv.Store().PID()) + "/status")
	var rssKB float64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rssKB, _ = strconv.ParseFloat(strings.Fields(v)[0], 64)
		}
	}
	if mem, _ := res.Total.Get("database_memory_mb.max"); mem < 0.5*rssKB/1024 || mem > 2*rssKB/1024 {
		t.Errorf("store memory %v MB in the run, %v MB in /proc now", mem, rssKB/1024)
	}
	if c, _ := res.Total.Get("database_connections.max"); c < 1 {
		t.Errorf("%v store connections", c)
	}

	restartCase := func(t *testing.T) {
		restart := strings.Replace(yaml, "      - {name: store_backlog,", "      - {name: database_restarts, query: max(mongodb_restarts_total)}\n      - {name: store_backlog,", 1)
		restart = strings.Replace(restart, fmt.Sprintf("duration: %ds", secs), "duration: 8s", 1)
		plan := scenariotest.Plan(t, reg, "restart.yaml", restart)
		restarted := false
		res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg, Progress: func(p runner.Progress) {
			if p.Phase == "load" && p.PhaseElapsed > 3*time.Second && !restarted {
				restarted = true
				if err := srv.Store().Restart(ctx); err != nil {
					t.Error(err)
				}
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !restarted || res.Manifest.Status != pipebench.StatusInvalid || len(res.Manifest.Reasons) == 0 ||
			!strings.Contains(strings.Join(res.Manifest.Reasons, "; "), "database restarted 1 time(s) during the run") {
			t.Errorf("restarted %v: status %s, reasons %q", restarted, res.Manifest.Status, res.Manifest.Reasons)
		}
	}
	// (after the API server's checks: it adds requests of its own)
	defer t.Run("a store restart makes the run invalid", restartCase)

	if bin == "" {
		t.Logf("%s is not set: the API server's half of this test did not run", kubetest.EnvBin)
		return
	}
	after0, afterP, _ := apiMetrics(t, srv)
	if afterP-beforeP != 2*n-n { // one PATCH per event
		t.Errorf("the API server counted %v PATCHes of nodes during the run, want %d", afterP-beforeP, n)
	}
	if v, _ := seriesLast(res, "node_patches"); v != afterP {
		t.Errorf("PATCHes of nodes: the run's last reading %v, the API server's /metrics %v", v, afterP)
	}
	if v, _ := seriesLast(res, "apiserver_requests"); v > after0 || v < before0+2*n {
		t.Errorf("requests: the run's last reading %v; the API server counted %v before, %v after; the service made %d", v, before0, after0, 2*n)
	}
	if rr, ok := res.Phases[0].Get("apiserver_requests_rate"); !ok || rr < 2*rate*0.5 {
		t.Errorf("request rate %v/s in the load phase; the service alone makes %d/s", rr, 2*rate)
	}
	// The phase's P50 from Prometheus' readings (a second apart) in the
	// bucket the direct readings at the phase's ends put it in, or next to
	// it (the readings are up to a scrape apart).
	if phaseB0 == nil || phaseB1 == nil {
		t.Fatal("no direct reading at the load phase's start or end")
	}
	p50, ok := res.Phases[0].Get("apiserver_latency_seconds.p50")
	lo, hi := bucketOf(phaseB0, phaseB1, 0.5)
	les := make([]float64, 0, len(phaseB1))
	for le := range phaseB1 {
		les = append(les, le)
	}
	sort.Float64s(les)
	i := sort.SearchFloat64s(les, hi)
	wlo, whi := 0.0, les[min(i+1, len(les)-1)]
	if i >= 2 {
		wlo = les[i-2]
	}
	if !ok || p50 < wlo || p50 > whi {
		t.Errorf("the load phase's P50 %v s; the API server's own buckets read at the phase's ends put it in (%v, %v]", p50, lo, hi)
	}
	rr, _ := res.Phases[0].Get("apiserver_requests_rate")
	t.Logf("load phase: P50 %.4f s (direct: bucket (%v, %v]); %.1f requests/s", p50, lo, hi, rr)
}
