package metricsout

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/runner"
)

// fed returns an Exporter fed like the runner feeds it: a Progress whose
// PhaseStats read a real Recorder and Arrivals holding the given sends.
func fed(t testing.TB, latencies []time.Duration, failed int) *Exporter {
	t.Helper()
	plan := pipebench.Plan{Scenario: "unit", Phases: []pipebench.PlanPhase{{Name: "only"}}}
	rec := kpi.NewRecorder(1)
	arr := kpi.NewArrivals(1, rec.Live)
	arr.StartPhase(0, 0)
	arr.SetRunning(0)
	t0 := time.Now()
	for i, d := range latencies {
		out := pipebench.Outcome{}
		if i < failed {
			out = pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "503"}
		}
		rec.Started(0, 2, 0)
		rec.Record(0, pipebench.Sample{Scheduled: t0, Started: t0, Ended: t0.Add(d), Count: 2, Bytes: 10, Outcome: out})
		if i >= failed {
			arr.Accept(uint64(2*i), 2)
			arr.Arrive(uint64(2*i), t0, t0.Add(d))
			arr.Arrive(uint64(2*i+1), t0, t0.Add(d))
		}
	}
	e := New(plan)
	e.Update(runner.Progress{Phase: "only", PhaseIndex: 0, Phases: 1, HasSink: true, QueueSize: 3,
		PhaseStats: func(i int) (kpi.SendStats, *kpi.ArrivalStats) {
			a := arr.Stats(i, 0)
			return rec.Stats(i), &a
		}})
	return e
}

// scrape serves e on a free loopback port and returns the exposition's
// sample lines by series name with their labels.
func scrape(t *testing.T, e *Exporter) map[string][]string {
	t.Helper()
	srv, err := Serve("127.0.0.1:0", e)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	resp, err := http.Get(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
	out := map[string][]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		out[name] = append(out[name], line)
	}
	return out
}

// value returns the value of the sample line of name whose text contains
// match.
func value(t *testing.T, series map[string][]string, name, match string) float64 {
	t.Helper()
	for _, l := range series[name] {
		if strings.Contains(l, match) {
			v, err := strconv.ParseFloat(l[strings.LastIndex(l, " ")+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s line with %q in %v", name, match, series[name])
	return 0
}

func TestExpositionCountsAndBuckets(t *testing.T) {
	lat := []time.Duration{300 * time.Microsecond, 2 * time.Millisecond, 2 * time.Millisecond, 40 * time.Millisecond, 3 * time.Second}
	s := scrape(t, fed(t, lat, 1))
	if v := value(t, s, MetricSent, ""); v != 10 {
		t.Errorf("sent %v, want 10 (5 sends of 2)", v)
	}
	if v := value(t, s, MetricAccepted, ""); v != 8 {
		t.Errorf("accepted %v, want 8", v)
	}
	if v := value(t, s, MetricFailed, `class="refused"`); v != 2 {
		t.Errorf("failed refused %v, want 2", v)
	}
	if v := value(t, s, MetricDelivered, ""); v != 8 {
		t.Errorf("delivered %v, want 8", v)
	}
	for le, want := range map[string]float64{"0.0005": 1, "0.0025": 3, "0.05": 4, "2.5": 4, "5": 5, "+Inf": 5} {
		if v := value(t, s, MetricLatency+"_bucket", `le="`+le+`"`); v != want {
			t.Errorf("latency bucket le=%s: %v, want %v", le, v, want)
		}
	}
	if sum := value(t, s, MetricLatency+"_sum", ""); sum < 3.04 || sum > 3.05 {
		t.Errorf("latency sum %v s, want about 3.0443", sum)
	}
	if v := value(t, s, MetricE2ELatency+"_count", ""); v != 8 {
		t.Errorf("e2e count %v, want 8 items", v)
	}
	if v := value(t, s, MetricPhaseInfo, `phase="only"`); v != 1 {
		t.Errorf("phase info %v", v)
	}
}

// Every series Names lists is in a real exposition, and every metric a
// query of the Grafana dashboard in examples/ uses is one of them.
func TestDashboardQueriesUseExposedNames(t *testing.T) {
	s := scrape(t, fed(t, []time.Duration{time.Millisecond}, 0))
	var exposed []string
	for n := range s {
		if strings.HasPrefix(n, "pipebench_") {
			exposed = append(exposed, n)
		}
	}
	slices.Sort(exposed)
	if !slices.Equal(exposed, Names()) {
		t.Errorf("exposition:\n%v\nNames():\n%v", exposed, Names())
	}
	exprs := dashboardExprs(t, "../examples/grafana-dashboard.json")
	if len(exprs) < 5 {
		t.Fatalf("only %d queries in the dashboard", len(exprs))
	}
	names := regexp.MustCompile(`\bpipebench_[a-z0-9_]+`)
	for _, e := range exprs {
		found := names.FindAllString(e, -1)
		if len(found) == 0 {
			t.Errorf("query %q uses no pipebench metric", e)
		}
		for _, n := range found {
			if _, ok := s[n]; !ok {
				t.Errorf("query %q: %s is not in the exposition", e, n)
			}
		}
	}
}

// dashboardExprs returns the PromQL expression of every panel target of a
// Grafana dashboard JSON file.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

func TestServeRefusesABadAddress(t *testing.T) {
	_, err := Serve("127.0.0.1:notaport", New(pipebench.Plan{}))
	if err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("err = %v", err)
	}
}

func TestPushOTLPRefusesABadEndpoint(t *testing.T) {
	for _, ep := range []string{"collector", "ftp://127.0.0.1:4317", "http://"} {
		_, err := PushOTLP(context.Background(), ep, time.Second, New(pipebench.Plan{}))
		if err == nil || !strings.Contains(err.Error(), "--otlp-metrics") {
			t.Errorf("%q: err = %v", ep, err)
		}
	}
}

func TestOTLPName(t *testing.T) {
	for prom, want := range map[string][2]string{
		MetricSent:       {"pipebench_items_sent", ""},
		MetricLatency:    {"pipebench_send_latency", "s"},
		MetricElapsed:    {"pipebench_elapsed", "s"},
		MetricTargetRate: {"pipebench_target_rate_items_per_second", ""},
	} {
		if n, u := OTLPName(prom); n != want[0] || u != want[1] {
			t.Errorf("OTLPName(%s) = %s, %s; want %v", prom, n, u, want)
		}
	}
}

// BenchmarkScrape measures one /metrics collection of a one-phase run with
// 10,000 sends recorded: the cost each scrape adds to a run.
func BenchmarkScrape(b *testing.B) {
	lat := make([]time.Duration, 10000)
	for i := range lat {
		lat[i] = time.Duration(i) * time.Microsecond
	}
	e := fed(b, lat, 100)
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	b.ResetTimer()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// A suite's next case: Begin shows the new plan, not finished, and
// ScrapedFinal waits for the scrape after the new run's Finish.
func TestBeginStartsOverForTheNextRun(t *testing.T) {
	e := fed(t, []time.Duration{time.Millisecond}, 0)
	e.Finish(&pipebench.Result{Manifest: pipebench.Manifest{Status: pipebench.StatusPassed}})
	first := e.ScrapedFinal()
	if v := value(t, scrape(t, e), MetricFinished, ""); v != 1 {
		t.Fatalf("finished %v after Finish", v)
	}
	select {
	case <-first:
	default:
		t.Fatal("the scrape after Finish did not close ScrapedFinal")
	}
	e.Begin(pipebench.Plan{Scenario: "second", Case: "Second Case", Phases: []pipebench.PlanPhase{{Name: "load"}}})
	s := scrape(t, e)
	if v := value(t, s, MetricFinished, ""); v != 0 {
		t.Errorf("finished %v after Begin", v)
	}
	if v := value(t, s, MetricInfo, `case="Second Case"`); v != 1 {
		t.Errorf("info of the new plan: %v", s[MetricInfo])
	}
	select {
	case <-e.ScrapedFinal():
		t.Fatal("ScrapedFinal is closed before the new run finished")
	default:
	}
	e.Finish(nil)
	scrape(t, e)
	select {
	case <-e.ScrapedFinal():
	default:
		t.Fatal("ScrapedFinal not closed after the new run's final scrape")
	}
}
