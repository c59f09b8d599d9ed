package metricsout

import (
	"bufio"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/runner"
)

// fed returns an Exporter fed like the runner feeds it: a Progress whose
// PhaseStats read a real Recorder and Arrivals holding the given sends, and
// whose Snapshot holds series observers reported.
func fed(t testing.TB, latencies []time.Duration, failed int, observed ...pipebench.Series) *Exporter {
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
	e.Update(runner.Progress{RunID: "run-1", Phase: "only", PhaseIndex: 0, Phases: 1, HasSink: true, QueueSize: 3,
		PhaseStats: func(i int) (kpi.SendStats, *kpi.ArrivalStats) {
			a := arr.Stats(i, 0)
			return rec.Stats(i), &a
		},
		Snapshot: func() *pipebench.Result { return &pipebench.Result{Series: observed} },
	})
	return e
}

// scrape serves e on a free loopback port and returns the text
// exposition's sample lines by series name with their labels.
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
	return parseExposition(resp.Body)
}

// parseExposition returns the sample lines of a text exposition by series
// name (with their labels and value).
func parseExposition(r io.Reader) map[string][]string {
	out := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
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
// every match.
func value(t *testing.T, series map[string][]string, name string, match ...string) float64 {
	t.Helper()
next:
	for _, l := range series[name] {
		for _, m := range match {
			if !strings.Contains(l, m) {
				continue next
			}
		}
		v, err := strconv.ParseFloat(l[strings.LastIndex(l, " ")+1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Fatalf("no %s line with %q in %v", name, match, series[name])
	return 0
}

func TestExpositionCountsAndBuckets(t *testing.T) {
	lat := []time.Duration{300 * time.Microsecond, 2 * time.Millisecond, 2 * time.Millisecond, 40 * time.Millisecond, 3 * time.Second}
	s := scrape(t, fed(t, lat, 1))
	if v := value(t, s, MetricSent); v != 10 {
		t.Errorf("sent %v, want 10 (5 sends of 2)", v)
	}
	if v := value(t, s, MetricAccepted); v != 8 {
		t.Errorf("accepted %v, want 8", v)
	}
	if v := value(t, s, MetricFailed, `class="refused"`); v != 2 {
		t.Errorf("failed refused %v, want 2", v)
	}
	if v := value(t, s, MetricDelivered); v != 8 {
		t.Errorf("delivered %v, want 8", v)
	}
	for le, want := range map[string]float64{"0.0002": 0, "0.0005": 1, "0.002": 3, "0.05": 4, "2": 4, "5": 5, "+Inf": 5} {
		if v := value(t, s, MetricLatency+"_bucket", `le="`+le+`"`); v != want {
			t.Errorf("latency bucket le=%s: %v, want %v", le, v, want)
		}
	}
	if sum := value(t, s, MetricLatency+"_sum"); sum < 3.04 || sum > 3.05 {
		t.Errorf("latency sum %v s, want about 3.0443", sum)
	}
	if v := value(t, s, MetricE2ELatency+"_count"); v != 8 {
		t.Errorf("e2e count %v, want 8 items", v)
	}
	for _, st := range []string{"only", PhaseDrain, PhaseDone} {
		want := b2f(st == "only")
		if v := value(t, s, MetricPhase, `phase="`+st+`"`); v != want {
			t.Errorf("phase stateset %s: %v, want %v", st, v, want)
		}
	}
	for _, st := range Statuses {
		want := b2f(st == pipebench.StatusRunning)
		if v := value(t, s, MetricRunStatus, `status="`+string(st)+`"`); v != want {
			t.Errorf("status stateset %s: %v, want %v", st, v, want)
		}
	}
	// Every series carries the run's id.
	for name, lines := range s {
		for _, l := range lines {
			if !strings.Contains(l, `run_id="run-1"`) {
				t.Errorf("%s: no run_id: %s", name, l)
			}
		}
	}
}

// Names lists exactly the families of the exposition (histograms by their
// name), and each has an OTLP name and a unit.
func TestNamesAreExposed(t *testing.T) {
	s := scrape(t, fed(t, []time.Duration{time.Millisecond}, 0))
	var exposed []string
	for n := range s {
		for _, part := range []string{"_bucket", "_sum", "_count"} {
			if h, ok := strings.CutSuffix(n, part); ok && specs[h].kind == histogram {
				n = h
			}
		}
		if !slices.Contains(exposed, n) {
			exposed = append(exposed, n)
		}
	}
	slices.Sort(exposed)
	if !slices.Equal(exposed, Names()) {
		t.Errorf("exposition:\n%v\nNames():\n%v", exposed, Names())
	}
	for _, n := range Names() {
		if name, unit := OTLPName(n); unit == "" || name == "" || strings.HasSuffix(name, "_total") {
			t.Errorf("OTLPName(%s) = %q, %q", n, name, unit)
		}
	}
}

// The phase and the status are statesets: after the run every state is
// still exposed, only the final one at 1.
func TestStatesetsAfterTheRun(t *testing.T) {
	e := fed(t, []time.Duration{time.Millisecond}, 0)
	e.Update(runner.Progress{RunID: "run-1", Phase: "only", PhaseIndex: 0, Phases: 1, Draining: true})
	if v := value(t, scrape(t, e), MetricPhase, `phase="drain"`); v != 1 {
		t.Errorf("drain %v while draining", v)
	}
	e.Finish(&pipebench.Result{Manifest: pipebench.Manifest{RunID: "run-1", Status: pipebench.StatusFailed}})
	s := scrape(t, e)
	ones := 0
	for _, l := range s[MetricPhase] {
		if strings.HasSuffix(l, " 1") {
			ones++
			if !strings.Contains(l, `phase="done"`) {
				t.Errorf("after the run: %s", l)
			}
		}
	}
	if ones != 1 || len(s[MetricPhase]) != 3 {
		t.Errorf("phase stateset after the run: %q", s[MetricPhase])
	}
	if v := value(t, s, MetricRunStatus, `status="failed"`); v != 1 {
		t.Errorf("failed %v", v)
	}
	if v := value(t, s, MetricRunStatus, `status="running"`); v != 0 {
		t.Errorf("running %v after the run", v)
	}
}

// A run that never started its load (the target refused every connection)
// still shows its id and final status once finished, and nothing before.
func TestARunThatDidNotStart(t *testing.T) {
	e := New(pipebench.Plan{Scenario: "down", Phases: []pipebench.PlanPhase{{Name: "load"}}})
	if s := scrape(t, e); len(s) != 0 {
		t.Errorf("before the run's id is known: %v", s)
	}
	e.Finish(&pipebench.Result{Manifest: pipebench.Manifest{RunID: "run-x", Status: pipebench.StatusInvalid}})
	s := scrape(t, e)
	if v := value(t, s, MetricRunStatus, `status="invalid"`, `run_id="run-x"`); v != 1 {
		t.Errorf("invalid %v", v)
	}
	if v := value(t, s, MetricSent); v != 0 {
		t.Errorf("sent %v", v)
	}
}

// What observers reported about the system under test is exported beside
// pipebench's own series: counters as totals, memory in bytes, instance
// renamed sut_instance; rates the counters were turned into are left out.
func TestObservedSeries(t *testing.T) {
	at := time.Now()
	pt := func(v float64) []pipebench.TimeValue {
		return []pipebench.TimeValue{{T: at.Add(-time.Second), V: 0}, {T: at, V: v}}
	}
	inst := func(i string) map[string]string { return map[string]string{"instance": i} }
	e := fed(t, []time.Duration{time.Millisecond}, 0,
		pipebench.Series{Name: "receiver_accepted", Labels: inst("c-0"), Kind: pipebench.KindCounter, Unit: pipebench.UnitCount, Points: pt(1200)},
		pipebench.Series{Name: "receiver_accepted", Labels: inst("c-1"), Kind: pipebench.KindCounter, Unit: pipebench.UnitCount, Points: pt(800)},
		pipebench.Series{Name: "receiver_accepted_rate", Labels: inst("c-0"), Unit: pipebench.UnitPerSecond, Points: pt(100)},
		pipebench.Series{Name: "exporter_queue_size", Labels: map[string]string{"instance": "c-0", "exporter": "otlp"}, Unit: pipebench.UnitCount, Points: pt(11)},
		pipebench.Series{Name: "exporter_queue_size", Labels: inst("c-1"), Unit: pipebench.UnitCount, Points: pt(2)},
		pipebench.Series{Name: "memory_mb", Labels: inst("c-0"), Unit: pipebench.UnitMB, Points: pt(64)},
		pipebench.Series{Name: "cpu_seconds", Labels: inst("c-0"), Kind: pipebench.KindCounter, Unit: pipebench.UnitCount, Points: pt(3.5)},
		pipebench.Series{Name: "cpu_cores", Labels: inst("c-0"), Unit: pipebench.UnitCores, Points: pt(0.5)},
		pipebench.Series{Name: "effect_latency_ms_bucket", Labels: map[string]string{"le": "10"}, Kind: pipebench.KindCounter, Points: pt(3)},
		pipebench.Series{Name: "sent_rate", Unit: pipebench.UnitPerSecond, Points: pt(5000)},
	)
	s := scrape(t, e)
	for _, c := range []struct {
		name  string
		match []string
		want  float64
	}{
		{ObservedPrefix + "receiver_accepted_total", []string{`sut_instance="c-0"`}, 1200},
		{ObservedPrefix + "receiver_accepted_total", []string{`sut_instance="c-1"`}, 800},
		{MetricExporterQueue, []string{`sut_instance="c-0"`, `exporter="otlp"`}, 11},
		{MetricExporterQueue, []string{`sut_instance="c-1"`, `exporter=""`}, 2},
		{ObservedPrefix + "memory_bytes", []string{`sut_instance="c-0"`}, 64 << 20},
		{ObservedPrefix + "cpu_seconds_total", []string{`sut_instance="c-0"`}, 3.5},
	} {
		if v := value(t, s, c.name, append(c.match, `run_id="run-1"`)...); v != c.want {
			t.Errorf("%s %v: %v, want %v", c.name, c.match, v, c.want)
		}
	}
	for n := range s {
		if strings.HasSuffix(n, "_rate") || strings.Contains(n, "cpu_cores") || strings.Contains(n, "bucket_total") || n == ObservedPrefix+"sent_rate" {
			t.Errorf("%s is exported", n)
		}
	}
}

// The native buckets: bucket i holds (2^((i-1)/256), 2^(i/256)], exactly
// at the bounds too.
func TestNativeIndex(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want int
	}{{1, 0}, {2, 256}, {0.5, -256}, {math.Exp2(1.0 / 256), 1}, {math.Exp2(1.0/256) * (1 + 1e-12), 2}, {1.000001, 1}, {0.9999999, 0}} {
		if got := nativeIndex(c.v); got != c.want {
			t.Errorf("nativeIndex(%v) = %d, want %d", c.v, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		v := math.Exp(r.Float64()*30 - 20)
		i := nativeIndex(v)
		lo, hi := math.Exp2(float64(i-1)/256), math.Exp2(float64(i)/256)
		if !(v > lo*(1-1e-12) && v <= hi*(1+1e-12)) {
			t.Fatalf("%v in bucket %d = (%v, %v]", v, i, lo, hi)
		}
	}
}

// The protobuf exposition carries the native buckets: decoded back, the
// bucket holding the HdrHistogram's p50, p90 and p99 is the one the table's
// value falls in, and the counts add up.
func TestNativeHistogramInTheExposition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lat := make([]time.Duration, 5000)
	h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	for i := range lat {
		lat[i] = time.Duration(math.Exp(r.Float64()*8+3)) * time.Microsecond // 20 µs to 60 ms
		h.RecordValue(lat[i].Microseconds())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(fed(t, lat, 0))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var m *dto.Histogram
	for _, mf := range mfs {
		if mf.GetName() == MetricLatency {
			m = mf.GetMetric()[0].GetHistogram()
		}
	}
	if m == nil || m.GetSchema() != Schema || len(m.GetPositiveSpan()) == 0 {
		t.Fatalf("no native latency histogram: %v", m)
	}
	// Decode spans and deltas.
	var idx []int
	var counts []uint64
	i, c := 0, int64(0)
	k := 0
	for _, sp := range m.GetPositiveSpan() {
		i += int(sp.GetOffset())
		for range sp.GetLength() {
			c += m.GetPositiveDelta()[k]
			k++
			idx, counts = append(idx, i), append(counts, uint64(c))
			i++
		}
	}
	var total uint64
	for _, n := range counts {
		total += n
	}
	if total+m.GetZeroCount() != m.GetSampleCount() || total != uint64(len(lat)) {
		t.Fatalf("native buckets hold %d, count %d, sends %d", total, m.GetSampleCount(), len(lat))
	}
	for _, q := range []float64{50, 90, 99} {
		want := float64(h.ValueAtQuantile(q)) / 1e6
		rank := uint64(math.Floor(q/100*float64(total) + 0.5))
		var cum uint64
		for j, n := range counts {
			cum += n
			if cum >= rank {
				if got := nativeIndex(want); got != idx[j] {
					t.Errorf("p%v: the table's %v s is in bucket %d, the rank in %d", q, want, got, idx[j])
				}
				break
			}
		}
	}
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
		MetricSent:       {"pipebench_items_sent", "{item}"},
		MetricSentBytes:  {"pipebench_sent", "By"},
		MetricLatency:    {"pipebench_send_latency", "s"},
		MetricElapsed:    {"pipebench_elapsed", "s"},
		MetricTargetRate: {"pipebench_target_rate_items", "{item}/s"},
		MetricPhase:      {"pipebench_phase", "{run}"},
	} {
		if n, u := OTLPName(prom); n != want[0] || u != want[1] {
			t.Errorf("OTLPName(%s) = %s, %s; want %v", prom, n, u, want)
		}
	}
	if n := otlpName(ObservedPrefix+"cpu_seconds_total", "s", true); n != "pipebench_observed_cpu" {
		t.Errorf("observed cpu: %s", n)
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
	e.Finish(&pipebench.Result{Manifest: pipebench.Manifest{RunID: "run-1", Status: pipebench.StatusPassed}})
	first := e.ScrapedFinal()
	if v := value(t, scrape(t, e), MetricFinished); v != 1 {
		t.Fatalf("finished %v after Finish", v)
	}
	select {
	case <-first:
	default:
		t.Fatal("the scrape after Finish did not close ScrapedFinal")
	}
	e.Begin(pipebench.Plan{Scenario: "second", Case: "Second Case", Phases: []pipebench.PlanPhase{{Name: "load"}}})
	if s := scrape(t, e); len(s) != 0 {
		t.Errorf("the first run's series after Begin: %v", s)
	}
	e.Update(runner.Progress{RunID: "run-2", Phase: "load", PhaseIndex: 0, Phases: 1})
	s := scrape(t, e)
	if v := value(t, s, MetricFinished, `run_id="run-2"`); v != 0 {
		t.Errorf("finished %v after Begin", v)
	}
	if v := value(t, s, MetricRunInfo, `case="Second Case"`, `run_id="run-2"`); v != 1 {
		t.Errorf("info of the new plan: %v", s[MetricRunInfo])
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
