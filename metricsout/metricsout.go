// Package metricsout exposes a run's own measurements as Prometheus metrics
// while it runs: `pipebench run --metrics-addr` serves them on /metrics, so
// the load can be laid next to the system's own panels in Grafana.
//
// It is fed from the runner's Progress (Update) and the final Result
// (Finish) and computes every value when it is scraped, from the live
// statistics the last Progress gives access to: counters are totals of the
// whole run, all phases added up; histograms merge the phases.
//
// Names follow Prometheus conventions: the pipebench_ prefix, _total on
// counters, seconds as the unit of time. Names lists them all.
package metricsout

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/runner"
)

// The metric names, as exposed (histograms also expose NAME_bucket,
// NAME_sum and NAME_count).
const (
	MetricInfo          = "pipebench_run_info"
	MetricPhaseInfo     = "pipebench_phase_info"
	MetricPhaseIndex    = "pipebench_phase_index"
	MetricTargetRate    = "pipebench_target_rate_items_per_second"
	MetricSent          = "pipebench_items_sent_total"
	MetricAccepted      = "pipebench_items_accepted_total"
	MetricFailed        = "pipebench_items_failed_total"
	MetricDropped       = "pipebench_items_dropped_total"
	MetricSentBytes     = "pipebench_sent_bytes_total"
	MetricSends         = "pipebench_sends_total"
	MetricInFlight      = "pipebench_sends_in_flight"
	MetricDelivered     = "pipebench_items_delivered_total"
	MetricDuplicates    = "pipebench_items_duplicated_total"
	MetricBacklog       = "pipebench_backlog_items"
	MetricLatency       = "pipebench_send_latency_seconds"
	MetricServiceTime   = "pipebench_send_service_time_seconds"
	MetricE2ELatency    = "pipebench_e2e_latency_seconds"
	MetricElapsed       = "pipebench_elapsed_seconds"
	MetricRemaining     = "pipebench_remaining_seconds"
	MetricFinished      = "pipebench_run_finished"
	MetricExporterQueue = "pipebench_observed_queue_size"
)

// Buckets are the upper bounds, in seconds, of the latency histograms.
var Buckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Names returns every series name the exposition can contain: counters and
// gauges as they are, histograms with their _bucket, _sum and _count parts.
// A dashboard's queries are checked against it.
func Names() []string {
	out := []string{MetricInfo, MetricPhaseInfo, MetricPhaseIndex, MetricTargetRate, MetricSent, MetricAccepted,
		MetricFailed, MetricDropped, MetricSentBytes, MetricSends, MetricInFlight, MetricDelivered, MetricDuplicates,
		MetricBacklog, MetricElapsed, MetricRemaining, MetricFinished, MetricExporterQueue}
	for _, h := range []string{MetricLatency, MetricServiceTime, MetricE2ELatency} {
		out = append(out, h+"_bucket", h+"_sum", h+"_count")
	}
	sort.Strings(out)
	return out
}

// failureClasses are the outcome classes counted as failed sends.
var failureClasses = []pipebench.Class{pipebench.ClassRefused, pipebench.ClassTimeout, pipebench.ClassError}

var (
	descInfo       = prometheus.NewDesc(MetricInfo, "The run: scenario, case, version of the system under test and status (running until it ends); always 1.", []string{"scenario", "case", "version", "status"}, nil)
	descPhaseInfo  = prometheus.NewDesc(MetricPhaseInfo, "The phase running now (drain while waiting for the backlog, done after the run); always 1.", []string{"phase"}, nil)
	descPhaseIndex = prometheus.NewDesc(MetricPhaseIndex, "The phase running now, from 1; 0 before the load, phases+1 while draining and after.", nil, nil)
	descTarget     = prometheus.NewDesc(MetricTargetRate, "Items per second the pacer asks for now (0 in a closed-model phase and after the load).", nil, nil)
	descSent       = prometheus.NewDesc(MetricSent, "Items whose send started, whole run.", nil, nil)
	descAccepted   = prometheus.NewDesc(MetricAccepted, "Items the target answered ok, whole run.", nil, nil)
	descFailed     = prometheus.NewDesc(MetricFailed, "Items whose send failed, by outcome class (refused, timeout, error), whole run.", []string{"class"}, nil)
	descDropped    = prometheus.NewDesc(MetricDropped, "Items never sent because max_in_flight was reached, whole run.", nil, nil)
	descBytes      = prometheus.NewDesc(MetricSentBytes, "Bytes of the request bodies sent, whole run.", nil, nil)
	descSends      = prometheus.NewDesc(MetricSends, "Sends (batches) by outcome class (ok, refused, timeout, error), whole run.", []string{"class"}, nil)
	descInFlight   = prometheus.NewDesc(MetricInFlight, "Sends started and not yet answered.", nil, nil)
	descDelivered  = prometheus.NewDesc(MetricDelivered, "Unique items that arrived at pipebench's sink, whole run (only with a sink).", nil, nil)
	descDup        = prometheus.NewDesc(MetricDuplicates, "Items that arrived at the sink more than once, whole run (only with a sink).", nil, nil)
	descBacklog    = prometheus.NewDesc(MetricBacklog, "Items accepted by the pipeline and not yet delivered (only with a sink).", nil, nil)
	descLatency    = prometheus.NewDesc(MetricLatency, "Send latency from the scheduled time to the answer (coordinated omission corrected), per send.", nil, nil)
	descService    = prometheus.NewDesc(MetricServiceTime, "Send service time from the actual start to the answer, per send.", nil, nil)
	descE2E        = prometheus.NewDesc(MetricE2ELatency, "End-to-end latency from the send to the arrival at the sink, per unique item (only with a sink).", nil, nil)
	descElapsed    = prometheus.NewDesc(MetricElapsed, "Seconds since the load started.", nil, nil)
	descRemaining  = prometheus.NewDesc(MetricRemaining, "Planned seconds of load left, drain excluded.", nil, nil)
	descFinished   = prometheus.NewDesc(MetricFinished, "1 once the run ended and every value here is final, else 0.", nil, nil)
	descQueue      = prometheus.NewDesc(MetricExporterQueue, "Largest exporter queue size an observer reports now (only when observed).", nil, nil)
)

// Exporter is a prometheus.Collector of one run. Update and Finish may be
// called from any goroutine, concurrently with scrapes.
type Exporter struct {
	plan pipebench.Plan

	mu       sync.Mutex
	last     runner.Progress
	seen     bool
	status   string
	finished bool
	// scrapedFinal is closed at the first scrape after Finish.
	scrapedFinal chan struct{}
	finalOnce    sync.Once
}

var _ prometheus.Collector = (*Exporter)(nil)

// New returns an Exporter for a run of plan.
func New(plan pipebench.Plan) *Exporter {
	return &Exporter{plan: plan, status: "running", scrapedFinal: make(chan struct{})}
}

// Begin starts over for a run of another plan (a suite's next case): the
// values are the new run's from now on, and ScrapedFinal waits for the
// scrape after its Finish.
func (e *Exporter) Begin(plan pipebench.Plan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.plan, e.last, e.seen, e.status, e.finished = plan, runner.Progress{}, false, "running", false
	e.scrapedFinal, e.finalOnce = make(chan struct{}), sync.Once{}
}

// Update takes the runner's latest Progress.
func (e *Exporter) Update(p runner.Progress) {
	e.mu.Lock()
	e.last, e.seen = p, true
	e.mu.Unlock()
}

// Finish marks the run as ended with res's status: every value is final from
// now on. res may be nil (the run could not start).
func (e *Exporter) Finish(res *pipebench.Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished = true
	e.status = "ended"
	if res != nil {
		e.status = string(res.Manifest.Status)
	}
}

// ScrapedFinal is closed once /metrics was scraped after Finish: the final
// values reached whoever scrapes.
func (e *Exporter) ScrapedFinal() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.scrapedFinal
}

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInfo, descPhaseInfo, descPhaseIndex, descTarget, descSent, descAccepted,
		descFailed, descDropped, descBytes, descSends, descInFlight, descDelivered, descDup, descBacklog,
		descLatency, descService, descE2E, descElapsed, descRemaining, descFinished, descQueue} {
		ch <- d
	}
}

// snap is the exposition at one moment.
type snap struct {
	plan                      pipebench.Plan
	status, phase             string
	finished, hasSink         bool
	index                     int
	elapsed, remaining        float64
	target, inFlight, backlog float64
	queue                     float64 // -1: not observed
	t                         totals
}

// snapshot reads the last Progress and adds up the phases' live statistics
// now. It notes a read of the final values.
func (e *Exporter) snapshot() snap {
	e.mu.Lock()
	p, seen, status, finished, plan := e.last, e.seen, e.status, e.finished, e.plan
	if finished {
		e.finalOnce.Do(func() { close(e.scrapedFinal) })
	}
	e.mu.Unlock()
	sn := snap{plan: plan, status: status, finished: finished, hasSink: p.HasSink, phase: "starting", queue: -1,
		elapsed: p.Elapsed.Seconds(), remaining: p.Remaining.Seconds(), target: p.TargetRate,
		inFlight: float64(max(p.InFlight, 0)), backlog: p.Backlog}
	switch {
	case finished:
		sn.phase, sn.index, sn.target = "done", len(plan.Phases)+1, 0
	case p.Draining:
		sn.phase, sn.index = "drain", len(plan.Phases)+1
	case seen && p.PhaseIndex >= 0:
		sn.phase, sn.index = p.Phase, p.PhaseIndex+1
	}
	if seen {
		sn.queue = p.QueueSize
	}
	if seen && p.PhaseStats != nil {
		n := min(p.PhaseIndex, p.Phases-1)
		for i := 0; i <= n; i++ {
			s, a := p.PhaseStats(i)
			sn.t.add(s, a)
		}
	}
	return sn
}

// Collect implements prometheus.Collector: it adds up the phases' live
// statistics now.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	sn := e.snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descInfo, 1, sn.plan.Scenario, sn.plan.Case, sn.plan.Version, sn.status)
	gauge(descFinished, b2f(sn.finished))
	gauge(descPhaseInfo, 1, sn.phase)
	gauge(descPhaseIndex, float64(sn.index))
	gauge(descElapsed, sn.elapsed)
	gauge(descRemaining, sn.remaining)
	gauge(descTarget, sn.target)
	if sn.queue >= 0 {
		gauge(descQueue, sn.queue)
	}
	t := sn.t
	counter(descSent, float64(t.sent))
	counter(descAccepted, float64(t.items[pipebench.ClassOK]))
	for _, c := range failureClasses {
		counter(descFailed, float64(t.items[c]), c.String())
	}
	counter(descDropped, float64(t.items[pipebench.ClassDropped]))
	counter(descBytes, float64(t.bytes))
	for _, c := range sendClasses {
		counter(descSends, float64(t.batches[c]), c.String())
	}
	gauge(descInFlight, sn.inFlight)
	ch <- promHistogram(descLatency, t.latency)
	ch <- promHistogram(descService, t.service)
	if sn.hasSink {
		counter(descDelivered, float64(t.delivered))
		counter(descDup, float64(t.duplicates))
		gauge(descBacklog, sn.backlog)
		ch <- promHistogram(descE2E, t.e2e)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// sendClasses are the classes sends are counted by.
var sendClasses = append([]pipebench.Class{pipebench.ClassOK}, failureClasses...)

// totals adds up the phases.
type totals struct {
	sent, bytes           uint64
	items, batches        [pipebench.NumClasses]uint64
	delivered, duplicates uint64
	latency, service, e2e *hdrhistogram.Histogram
}

func (t *totals) add(s kpi.SendStats, a *kpi.ArrivalStats) {
	for c := range pipebench.NumClasses {
		t.items[c] += s.Items[c]
		t.batches[c] += s.Batches[c]
		if pipebench.Class(c) != pipebench.ClassDropped {
			t.sent += s.Items[c]
		}
	}
	t.sent += s.Abandoned
	t.bytes += s.Bytes
	t.latency = merge(t.latency, s.Latency)
	t.service = merge(t.service, s.Service)
	if a != nil {
		t.delivered += a.Own
		t.duplicates += a.Duplicates
		t.e2e = merge(t.e2e, a.E2E)
	}
}

func merge(into, h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if h == nil {
		return into
	}
	if into == nil {
		return h
	}
	into.Merge(h)
	return into
}

// hist is an HdrHistogram of microseconds in Buckets, in seconds: Counts
// holds the observations of each bucket alone (not cumulative), the last
// one above the largest bound. A value is counted in a bucket when the
// lowest value HdrHistogram keeps equivalent to it (within 0.1%) is at most
// the bucket's bound.
type hist struct {
	Counts []uint64
	Count  uint64
	Sum    float64
}

func toHist(h *hdrhistogram.Histogram) hist {
	out := hist{Counts: make([]uint64, len(Buckets)+1)}
	if h == nil {
		return out
	}
	for _, bar := range h.Distribution() {
		if bar.Count <= 0 {
			continue
		}
		v := float64(bar.From) / 1e6
		i := sort.SearchFloat64s(Buckets, v) // the first bound >= v
		out.Counts[i] += uint64(bar.Count)
		out.Count += uint64(bar.Count)
	}
	out.Sum = h.Mean() * float64(h.TotalCount()) / 1e6
	return out
}

// promHistogram is h as a Prometheus histogram.
func promHistogram(d *prometheus.Desc, h *hdrhistogram.Histogram) prometheus.Metric {
	x := toHist(h)
	cum := make(map[float64]uint64, len(Buckets))
	var run uint64
	for i, b := range Buckets {
		run += x.Counts[i]
		cum[b] = run
	}
	return prometheus.MustNewConstHistogram(d, x.Count, x.Sum, cum)
}

// Server serves an Exporter's /metrics over HTTP.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves exp
// on /metrics, with the Go runtime's and the process's own metrics beside
// it. It returns once listening.
func Serve(addr string, exp *Exporter) (*Server, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(exp); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("--metrics-addr %s: cannot listen", addr), "give a free host:port, like 127.0.0.1:9464", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "pipebench: the run's metrics are on /metrics")
	})
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the address of the /metrics endpoint.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/metrics" }

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops the server, letting a scrape under way finish within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
