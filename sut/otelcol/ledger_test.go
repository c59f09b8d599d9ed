package otelcol

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pipebench/pipebench"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	promobs "github.com/pipebench/pipebench/observer/prometheus"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/payload/loglines"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/producer/logfile"
	"github.com/pipebench/pipebench/producer/promtarget"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// collectorReading is the test's own reading of a collector's metrics,
// summed over the series of each family (by exporter where it has one).
type collectorReading map[string]float64

// readCollector scrapes every instance's metrics URL with the
// Prometheus text parser, as an operator's Prometheus would.
func readCollector(ctx context.Context, env pipebench.Env) (collectorReading, error) {
	out := collectorReading{}
	for _, in := range env.Instances {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, in.MetricsURL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(&b)
		if err != nil {
			return nil, err
		}
		for name, f := range fams {
			name = strings.TrimSuffix(name, "_total")
			for _, m := range f.Metric {
				var v float64
				switch {
				case m.Counter != nil:
					v = m.Counter.GetValue()
				case m.Gauge != nil:
					v = m.Gauge.GetValue()
				default:
					continue
				}
				out[name] += v
				for _, l := range m.Label {
					if l.GetName() == "exporter" || l.GetName() == "receiver" {
						out[name+"{"+l.GetValue()+"}"] += v
					}
				}
			}
		}
	}
	return out, nil
}

// ledgerAt returns the time of the run's last ledger reading.
func ledgerAt(res *pipebench.Result) time.Time {
	var at time.Time
	for _, s := range res.Series {
		if strings.HasPrefix(s.Name, "ledger_") && len(s.Points) > 0 && s.Points[len(s.Points)-1].T.After(at) {
			at = s.Points[len(s.Points)-1].T
		}
	}
	return at
}

// The traces gateway stopped mid-drain: the sink fails every export of
// the last phase and through the drain, the exporter retries every 2 s,
// its queue (queue_sizer: items, 1,500) takes what fits and refuses the
// rest. The ledger's terms against the collector's own readings taken by
// the test at the run's last observation: pending at end is the queue's
// own otelcol_exporter_queue_size in spans, lost is what it could not
// queue (otelcol_exporter_enqueue_failed_spans, which lost_confirmed
// says too), and delivered + pending + lost is what was accepted.
func TestLedgerTracesMidDrain(t *testing.T) {
	ledgerGatewayMidDrain(t, "traces", "spans", "otlp-traces")
}

// The metrics gateway stopped mid-drain, as the traces gateway: in
// metric points.
func TestLedgerMetricsMidDrain(t *testing.T) {
	ledgerGatewayMidDrain(t, "metrics", "metric points", "otlp-metrics")
}

func ledgerGatewayMidDrain(t *testing.T, signal, items, generator string) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	unit := strings.ReplaceAll(items, " ", "_")
	rd := testutil.NewReading(readCollector)
	reg := scenariotest.Registry(t, otlpgen.TracesFactory(), otlpgen.MetricsFactory(), otlpdriver.Factory(), otlpsink.Factory(), Factory(), promobs.Factory(), rd.Factory("reading"))
	res := scenariotest.Run(t, reg, "ledger-"+signal+".yaml", `
name: ledger-`+signal+`
sut:
  type: otelcol
  signal: `+signal+`
  queue_sizer: items
  queue_size: 1500
  num_consumers: 2
  batch: {timeout: 100ms, send_batch_size: 200}
  retry_on_failure: {enabled: true, initial_interval: 2s, max_interval: 2s, max_elapsed_time: 5m}
target: {driver: otlp}
workload: {generator: `+generator+`, batch: 100}
sink: {type: otlp}
observers: [{type: prometheus, preset: otelcol}, {type: reading}]
interval: 500ms
drain: 1s
phases:
  - {name: steady, duration: 1s, rate: 1000/s}
  - {name: outage, duration: 2s, rate: 1000/s, faults: {error_ratio: 1}}
`)
	got, at, err := rd.Last()
	if err != nil || at.IsZero() {
		t.Fatalf("the test's reading: %v at %v", err, at)
	}
	if la := ledgerAt(res); !la.Equal(at) {
		t.Fatalf("the ledger read at %v, the test at %v: want the same observation", la, at)
	}
	tot := res.Total
	accepted, delivered := kpiOf(t, tot, "accepted"), kpiOf(t, tot, "delivered")
	pending, lost, missing := kpiOf(t, tot, "pending_at_end"), kpiOf(t, tot, "lost"), kpiOf(t, tot, "missing")
	queue, unqueued := got["otelcol_exporter_queue_size"], got["otelcol_exporter_enqueue_failed_"+unit]
	t.Logf("accepted %v delivered %v missing %v: pending %v lost %v (confirmed %v); the collector: queue %v %s, enqueue failed %v, sent %v, accepted %v",
		accepted, delivered, missing, pending, lost, kpiOf(t, tot, "lost_confirmed"), queue, items, unqueued, got["otelcol_exporter_sent_"+unit], got["otelcol_receiver_accepted_"+unit])
	if pending == 0 || lost == 0 {
		t.Fatalf("pending %v, lost %v: want the run stopped with spans queued and some refused by the full queue", pending, lost)
	}
	if pending != queue {
		t.Errorf("pending at end %v, the queue's own size in %s %v", pending, items, queue)
	}
	if lost != unqueued || kpiOf(t, tot, "lost_confirmed") != unqueued {
		t.Errorf("lost %v (confirmed %v), the exporter's own enqueue failures %v", lost, kpiOf(t, tot, "lost_confirmed"), unqueued)
	}
	if delivered+pending+lost != accepted || missing != pending+lost {
		t.Errorf("delivered %v + pending %v + lost %v != accepted %v (missing %v)", delivered, pending, lost, accepted, missing)
	}
	if u := kpiOf(t, tot, "unread_at_source"); u != 0 {
		t.Errorf("a gateway has no unread source, yet unread %v", u)
	}
	var phases float64
	for i := range res.Phases {
		phases += kpiOf(t, &res.Phases[i], "pending_at_end")
	}
	if phases != pending {
		t.Errorf("the phases' pending add up to %v, the total's is %v", phases, pending)
	}
	// What was delivered is the sink's count (1,000 on a quiet machine;
	// fewer when the exporter sent fewer before the run ended).
	want := fmt.Sprintf("Ledger (%s): 3,000 sent = 0 not accepted + %s delivered + 0 unread at the source + %s pending at end (held: collector-0 exporter otlp/p1) + %s lost (the pipeline counted %s dropped)",
		items, pipebench.FormatCount(delivered), pipebench.FormatCount(pending), pipebench.FormatCount(lost), pipebench.FormatCount(unqueued))
	if !strings.Contains(strings.Join(res.Summary, "\n"), want) {
		t.Errorf("the summary\n%s\nlacks the ledger\n%s", strings.Join(res.Summary, "\n"), want)
	}
}

// The log agent stopped mid-drain (the Multi Pipeline Backpressure case,
// scaled): three pipelines each with a queue on disk (counting log
// records: queue_sizer items), the sink failing every export of p2 and
// retries 3 s apart, and the agent tailing two of the four producers'
// files only, so that the lines of the others are never read. Every term is in
// lines: sent is the lines in the files (counted by the test); unread is
// those lines less the log records the filelog receiver read (its own
// counters); p2's pending is its queue's own size in log records; p1 and
// p3 deliver what was read; lost is 0, or what the collector's own
// counters say it dropped.
func TestLedgerLogAgentMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	rd := testutil.NewReading(func(ctx context.Context, env pipebench.Env) (collectorReading, error) {
		r, err := readCollector(ctx, env)
		if err != nil {
			return nil, err
		}
		n, err := wcLines(env.Target) // the log agent's folder
		r["lines in the files"] = float64(n)
		return r, err
	})
	reg := scenariotest.Registry(t, loglines.Factory(), logfile.Factory(), otlpsink.Factory(), Factory(), promobs.Factory(), rd.Factory("reading"))
	dir := t.TempDir()
	res := scenariotest.Run(t, reg, "ledger-logs.yaml", `
name: ledger-logs
sut:
  type: otelcol
  receiver: filelog
  exporter: otlphttp
  pipelines: 3
  queue_sizer: items
  queue_size: 100000
  filelog: {include: ["`+dir+`/producer-0.log", "`+dir+`/producer-1.log"]}
  batch: {timeout: 100ms}
  retry_on_failure: {enabled: true, initial_interval: 3s, max_interval: 3s, max_elapsed_time: 5m}
target: {driver: logfile, producers: 4, dir: "`+dir+`"}
workload: {generator: loglines, format: apache_combined, size: 256, batch: 50}
sink: {type: otlp, grpc_listen: 127.0.0.1:0, http_listen: 127.0.0.1:0}
observers: [{type: prometheus, preset: otelcol}, {type: reading}]
interval: 500ms
drain: 1s
phases:
  - {name: load, duration: 4s, rate: 1000/s, faults: {pipeline: p2, error_ratio: 1, error_status: 503}}
`)
	got, at, err := rd.Last()
	if err != nil || at.IsZero() {
		t.Fatalf("the test's reading: %v at %v", err, at)
	}
	if la := ledgerAt(res); !la.Equal(at) {
		t.Fatalf("the ledger read at %v, the test at %v: want the same observation", la, at)
	}
	tot := res.Total
	lines := got["lines in the files"]
	read := got["otelcol_receiver_accepted_log_records"] + got["otelcol_receiver_refused_log_records"]
	dropped := got["otelcol_exporter_send_failed_log_records"] + got["otelcol_exporter_enqueue_failed_log_records"] + got["otelcol_receiver_refused_log_records"]
	sent, accepted := kpiOf(t, tot, "sent"), kpiOf(t, tot, "accepted")
	t.Logf("sent %v lines, %v in the files, %v read by the receiver; ledger total (copies): %v\n%s", sent, lines, read, ledgerLine(tot), strings.Join(res.Summary, "\n"))
	if sent != lines || accepted != lines {
		t.Errorf("sent %v, accepted %v, the files hold %v lines: want every line written counted once, in lines", sent, accepted, lines)
	}
	if lines-read <= 0 || read == 0 {
		t.Fatalf("the receiver read %v of %v lines: want some read and some not yet", read, lines)
	}
	for _, p := range []string{"p1", "p2", "p3"} {
		get := func(name string) float64 { return kpiOf(t, tot, "pipeline_"+name, "pipeline", p) }
		d, u, pe, l := get("delivered"), get("unread_at_source"), get("pending_at_end"), get("lost")
		if u != lines-read {
			t.Errorf("%s: unread %v, the files' lines less what the receiver read: %v", p, u, lines-read)
		}
		if d+u+pe+l != accepted {
			t.Errorf("%s: delivered %v + unread %v + pending %v + lost %v != %v accepted", p, d, u, pe, l, accepted)
		}
		if l != 0 && l != dropped {
			t.Errorf("%s: lost %v, the collector dropped %v", p, l, dropped)
		}
		queue := got["otelcol_exporter_queue_size{otlphttp/"+p+"}"]
		switch p {
		case "p2":
			if pe == 0 || pe != queue {
				t.Errorf("p2: pending %v, its queue's own size %v log records: want them equal and not 0", pe, queue)
			}
		default:
			if d != read || pe != 0 {
				t.Errorf("%s: delivered %v pending %v, want what was read (%v) and nothing pending", p, d, pe, read)
			}
		}
	}
	if u := kpiOf(t, tot, "unread_at_source"); u != 3*(lines-read) {
		t.Errorf("the total's unread %v, want each pipeline's %v (copies)", u, lines-read)
	}
}

// ledgerLine prints a row's ledger terms.
func ledgerLine(p *pipebench.PhaseResult) string {
	var parts []string
	for _, n := range []string{"sent", "accepted", "delivered", "missing", "unread_at_source", "pending_at_end", "lost", "lost_confirmed", "unaccounted", "held_at_end"} {
		if v, ok := p.Get(n); ok {
			parts = append(parts, fmt.Sprintf("%s %v", n, v))
		}
	}
	return strings.Join(parts, ", ")
}

// wcLines counts the newlines of every file in dir, as wc -l would.
func wcLines(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return 0, err
		}
		n += bytes.Count(b, []byte{'\n'})
	}
	return n, nil
}

func kpiOf(t *testing.T, p *pipebench.PhaseResult, name string, labels ...string) float64 {
	t.Helper()
	v, ok := p.Get(name, labels...)
	if !ok {
		t.Fatalf("%s has no %s%v: %v", p.Name, name, labels, p.KPIs)
	}
	return v
}

// The metric agent stopped mid-drain: two producers scraped every 500 ms,
// the agent remote-writing to the sink, which fails every write of the
// last phase, so the agent holds what it scraped then. The run's items
// are the tracer samples in the scrapes: those still waiting for a scrape
// are unread at the source, as the producers' own served count says
// (what was accepted less what was served); what the agent holds it
// counts in metric points, of which the tracer items are a few, so
// pending in items is unknown and the ledger says so with the agent's own
// count (what its receivers accepted less what its exporter sent or gave
// up, from its metrics read by the test); nothing is called lost.
func TestLedgerMetricAgentMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	rd := testutil.NewReading(func(ctx context.Context, env pipebench.Env) (collectorReading, error) {
		r, err := readCollector(ctx, env)
		if err != nil {
			return nil, err
		}
		// The producers' own count of the tracer items they served.
		served, err := readCollector(ctx, pipebench.Env{Instances: []pipebench.Instance{{MetricsURL: "http://" + env.Target + "/metrics"}}})
		r["served"] = served["pipebench_producer_items_served"]
		return r, err
	})
	// The agent keeps scraping while the run reads its ledger, so what it
	// holds moves between any two readings. The test reads it just before
	// and just after each of the ledger's own readings: the ledger's
	// figure must lie between the two of the last one.
	const e = "{prometheusremotewrite/p1}"
	heldOf := func(ctx context.Context, url string) (float64, error) {
		got, err := readCollector(ctx, pipebench.Env{Instances: []pipebench.Instance{{MetricsURL: url}}})
		return got["otelcol_receiver_accepted_metric_points"] - got["otelcol_exporter_sent_metric_points"+e] - got["otelcol_exporter_send_failed_metric_points"+e] - got["otelcol_exporter_enqueue_failed_metric_points"+e], err
	}
	var bracket struct {
		sync.Mutex
		before, after float64
		n             int
	}
	sut := Factory()
	build := sut.New
	sut.New = func(cfg any, env pipebench.Env) (pipebench.SUT, error) {
		s, err := build(cfg, env)
		if err != nil {
			return nil, err
		}
		return &bracketedLedger{Collector: s.(*Collector), read: func(ctx context.Context, url string, inner func()) {
			before, err1 := heldOf(ctx, url)
			inner()
			after, err2 := heldOf(ctx, url)
			if err1 == nil && err2 == nil {
				bracket.Lock()
				bracket.before, bracket.after = before, after
				bracket.n++
				bracket.Unlock()
			}
		}}, nil
	}
	reg := scenariotest.Registry(t, payload.EventFactory(), promtarget.DriverFactory(), promrwsink.Factory(), sut, promobs.Factory(), rd.Factory("reading"))
	res := scenariotest.Run(t, reg, "ledger-agent.yaml", `
name: ledger-agent
sut:
  type: otelcol
  receiver: prometheus
  exporter: prometheusremotewrite
  prometheus: {scrape_interval: 500ms}
  retry_on_failure: {enabled: true, initial_interval: 3s, max_interval: 3s, max_elapsed_time: 5m}
target: {driver: prometheus-producers, producers: 2, metrics: 10, series: 2}
workload: {generator: event, size: 16, batch: 5}
sink: {type: prometheus-remote-write}
observers: [{type: prometheus, preset: otelcol}, {type: reading}]
interval: 500ms
drain: 1s
phases:
  - {name: scraped, duration: 7s, rate: 50/s}
  - {name: backpressure, duration: 2s, rate: 50/s, faults: {error_ratio: 1, error_status: 503}}
`)
	got, at, err := rd.Last()
	if err != nil || at.IsZero() {
		t.Fatalf("the test's reading: %v at %v", err, at)
	}
	tot := res.Total
	accepted, delivered, missing := kpiOf(t, tot, "accepted"), kpiOf(t, tot, "delivered"), kpiOf(t, tot, "missing")
	unread, unacc := kpiOf(t, tot, "unread_at_source"), kpiOf(t, tot, "unaccounted")
	held := got["otelcol_receiver_accepted_metric_points"] - got["otelcol_exporter_sent_metric_points"+e] - got["otelcol_exporter_send_failed_metric_points"+e] - got["otelcol_exporter_enqueue_failed_metric_points"+e]
	t.Logf("accepted %v, served %v, the agent holds %v points\n%s", accepted, got["served"], held, strings.Join(res.Summary, "\n"))
	if unread != accepted-got["served"] {
		t.Errorf("unread at the source %v, accepted %v less what the producers served %v", unread, accepted, got["served"])
	}
	if delivered == 0 || held == 0 {
		t.Fatalf("delivered %v, the agent holds %v points: want some delivered and some held", delivered, held)
	}
	if _, ok := tot.Get("pending_at_end"); ok {
		t.Error("pending given in items although the agent counts metric points")
	}
	if _, ok := tot.Get("lost"); ok {
		t.Error("lost given although what the agent holds is unknown in items")
	}
	if unacc != missing-unread || unacc == 0 {
		t.Errorf("unaccounted %v, want missing %v less unread %v", unacc, missing, unread)
	}
	var why string
	for _, k := range tot.All("ledger_unknown") {
		why += k.Labels["because"]
	}
	bracket.Lock()
	lo, hi, n := min(bracket.before, bracket.after), max(bracket.before, bracket.after), bracket.n
	bracket.Unlock()
	if n == 0 {
		t.Fatal("the ledger was never read between two readings of the test's")
	}
	var said float64
	const pre, post = "collector-0 exporter prometheusremotewrite/p1 holds ", " metric points, and the run counts events"
	if i := strings.Index(why, pre); i < 0 || !strings.Contains(why[i:], post) {
		t.Fatalf("unknown because %q, want %q<count>%q", why, pre, post)
	} else if _, err := fmt.Sscan(strings.ReplaceAll(why[i+len(pre):i+strings.Index(why[i:], post)], ",", ""), &said); err != nil {
		t.Fatalf("unknown because %q: the count: %v", why, err)
	}
	if said < lo || said > hi {
		t.Errorf("the ledger says the agent holds %v metric points; the test read %v just before and %v just after that reading", said, bracket.before, bracket.after)
	}
}

// bracketedLedger is the collector with each of its ledger readings
// bracketed by two of the test's own.
type bracketedLedger struct {
	*Collector
	read func(ctx context.Context, url string, inner func())
}

func (b *bracketedLedger) Ledger(ctx context.Context, at time.Time, final bool) (pts []pipebench.Point, err error) {
	b.read(ctx, b.replicas[0].metricsURL(), func() { pts, err = b.Collector.Ledger(ctx, at, final) })
	return pts, err
}
