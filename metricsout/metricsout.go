// Package metricsout exposes a run's own measurements as metrics while it
// runs: `pipebench run --metrics-addr` serves them to Prometheus on
// /metrics and `--otlp-metrics` pushes them as OTLP, so the load and what
// the system under test reported about it lie next to the system's own
// panels in Grafana.
//
// It is fed from the runner's Progress (Update) and the final Result
// (Finish) and computes every value when it is read, from the live
// statistics the last Progress gives access to: counters are totals of the
// whole run, all phases added up; latency histograms merge the phases and
// carry both native buckets (exponential, 0.27% wide: PromQL's quantiles
// agree with the KPI table's) and classic ones from 5 µs, for servers
// without native histograms. The phase and the run's status are statesets
// (every state a series, 1 for the current one, 0 for the others), so that
// a cache of last values in between (a collector's Prometheus exporter)
// stays right. Every series carries the run's id as run_id.
//
// Names follow Prometheus conventions: the pipebench_ prefix, _total on
// counters, seconds and bytes as units. Names lists pipebench's own;
// ObservedPrefix starts the observers' (the system under test's).
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

// The metric names of pipebench's own series, as exposed to Prometheus
// (histograms also expose NAME_bucket, NAME_sum and NAME_count in the text
// format).
const (
	MetricRunInfo     = "pipebench_run_info"
	MetricRunStatus   = "pipebench_run_status"
	MetricFinished    = "pipebench_run_finished"
	MetricPhase       = "pipebench_phase"
	MetricPhaseIndex  = "pipebench_phase_index"
	MetricTargetRate  = "pipebench_target_rate_items_per_second"
	MetricSent        = "pipebench_items_sent_total"
	MetricAccepted    = "pipebench_items_accepted_total"
	MetricFailed      = "pipebench_items_failed_total"
	MetricDropped     = "pipebench_items_dropped_total"
	MetricHeldBack    = "pipebench_items_held_back_total"
	MetricMissed      = "pipebench_items_missed_total"
	MetricSentBytes   = "pipebench_sent_bytes_total"
	MetricSends       = "pipebench_sends_total"
	MetricInFlight    = "pipebench_sends_in_flight"
	MetricDelivered   = "pipebench_items_delivered_total"
	MetricDuplicates  = "pipebench_items_duplicated_total"
	MetricBacklog     = "pipebench_backlog_items"
	MetricLatency     = "pipebench_send_latency_seconds"
	MetricServiceTime = "pipebench_send_service_time_seconds"
	MetricE2ELatency  = "pipebench_e2e_latency_seconds"
	// MetricPhaseLatency and MetricPhaseE2ELatency are the same
	// histograms by the phase each send was scheduled in (label phase),
	// as the KPI table files them: MetricLatency's rate over a phase's
	// time range files a send by when it was answered instead.
	MetricPhaseLatency    = "pipebench_phase_send_latency_seconds"
	MetricPhaseE2ELatency = "pipebench_phase_e2e_latency_seconds"
	MetricElapsed         = "pipebench_elapsed_seconds"
	MetricRemaining       = "pipebench_remaining_seconds"
)

// MetricExporterQueue is the exporter queue size of the system under test
// as its observer reports it (per sut_instance), one of the observed
// series (ObservedPrefix).
const MetricExporterQueue = ObservedPrefix + "exporter_queue_size"

// spec is how one of pipebench's own families is exposed.
type spec struct {
	kind kind
	unit string // OTLP (UCUM)
	help string
}

// specs are pipebench's own families.
var specs = map[string]spec{
	MetricRunInfo:         {gauge, "{run}", "The run: scenario, case and version of the system under test; always 1."},
	MetricRunStatus:       {gauge, "{run}", "The run's status, a stateset: running until it ends, then its verdict (1 for the status now, 0 for the others)."},
	MetricFinished:        {gauge, "{run}", "1 once the run ended and every value here is final, else 0."},
	MetricPhase:           {gauge, "{run}", "The phase, a stateset: each of the plan's phases, drain while what was accepted is awaited, done after the run (1 for the phase now, 0 for the others)."},
	MetricPhaseIndex:      {gauge, "{phase}", "The phase now, from 1; phases+1 while draining and after the run."},
	MetricElapsed:         {gauge, "s", "Seconds since the load started."},
	MetricRemaining:       {gauge, "s", "Planned seconds of load left, drain excluded."},
	MetricTargetRate:      {gauge, "{item}/s", "Items per second the pacer asks for now (0 in a closed-model phase and after the load)."},
	MetricSent:            {counter, "{item}", "Items whose request left pipebench, whole run: " + pipebench.MeaningSent + "."},
	MetricAccepted:        {counter, "{item}", "Items the target answered ok, whole run."},
	MetricFailed:          {counter, "{item}", "Items whose send failed, by outcome class (refused, timeout, error), whole run."},
	MetricDropped:         {counter, "{item}", "Items planned and never sent, held back by the system under test or missed by pipebench, whole run."},
	MetricHeldBack:        {counter, "{item}", "Items the system under test held back (never sent), by reason (max_in_flight, no free connection, connection refused...), whole run."},
	MetricMissed:          {counter, "{item}", "Items pipebench itself did not make on time (its own limit), whole run."},
	MetricSentBytes:       {counter, "By", "Bytes of the request bodies sent, whole run."},
	MetricSends:           {counter, "{send}", "Sends (batches) by outcome class (ok, refused, timeout, error), whole run."},
	MetricInFlight:        {gauge, "{send}", "Sends started and not yet answered."},
	MetricDelivered:       {counter, "{item}", "Unique items that arrived at pipebench's sink, whole run."},
	MetricDuplicates:      {counter, "{item}", "Items that arrived at the sink more than once, whole run."},
	MetricBacklog:         {gauge, "{item}", "Items accepted by the pipeline and not yet delivered."},
	MetricLatency:         {histogram, "s", "Send latency, per send: " + pipebench.MeaningLatency + "."},
	MetricServiceTime:     {histogram, "s", "Send service time, per send: from the write of the request to the answer's arrival."},
	MetricE2ELatency:      {histogram, "s", "End-to-end latency from the send to the arrival at the sink, per unique item."},
	MetricPhaseLatency:    {histogram, "s", "Send latency from the scheduled time to the answer, by the phase the send was scheduled in (as the KPI table files it), cumulative over that phase."},
	MetricPhaseE2ELatency: {histogram, "s", "End-to-end latency from the send to the arrival at the sink, by the phase the item was sent in (as the KPI table files it), cumulative over that phase."},
}

// Names returns the name of every family of pipebench's own series (a
// histogram by its name alone), sorted. A dashboard's queries are checked
// against it.
func Names() []string {
	out := make([]string, 0, len(specs))
	for n := range specs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Help returns the description of one of pipebench's own families (its
// Prometheus HELP text and OTLP description), "" for another name.
func Help(prom string) string { return specs[prom].help }

// OTLPName returns the OTLP name and unit of one of pipebench's own
// Prometheus names (Names): the name without _total and without the
// suffix of its unit, which a collector's Prometheus exporter adds back.
func OTLPName(prom string) (name, unit string) {
	sp, ok := specs[prom]
	if !ok {
		return prom, ""
	}
	return otlpName(prom, sp.unit, sp.kind == counter), sp.unit
}

// Statuses are the states of MetricRunStatus: running, then the verdict.
var Statuses = []pipebench.Status{pipebench.StatusRunning, pipebench.StatusPassed, pipebench.StatusCompleted,
	pipebench.StatusFailed, pipebench.StatusInvalid, pipebench.StatusAborted, pipebench.StatusError}

// The states of MetricPhase besides the plan's phases.
const (
	PhaseDrain = "drain" // the load ended; waiting for what was accepted to arrive
	PhaseDone  = "done"  // the run ended
)

// failureClasses are the outcome classes counted as failed sends.
var failureClasses = []pipebench.Class{pipebench.ClassRefused, pipebench.ClassTimeout, pipebench.ClassError}

// sendClasses are the classes sends are counted by.
var sendClasses = append([]pipebench.Class{pipebench.ClassOK}, failureClasses...)

// Exporter holds what one run (or a suite's runs, one after the other)
// shows as metrics. Update and Finish may be called from any goroutine,
// concurrently with scrapes and pushes.
type Exporter struct {
	mu       sync.Mutex
	plan     pipebench.Plan
	began    time.Time
	last     runner.Progress
	seen     bool
	runID    string
	final    *pipebench.Result
	finished bool
	// scrapedFinal is closed at the first read after Finish.
	scrapedFinal chan struct{}
	finalOnce    sync.Once
}

var _ prometheus.Collector = (*Exporter)(nil)

// New returns an Exporter for a run of plan.
func New(plan pipebench.Plan) *Exporter {
	return &Exporter{plan: plan, began: time.Now(), scrapedFinal: make(chan struct{})}
}

// Begin starts over for a run of another plan (a suite's next case): the
// values are the new run's from now on, and ScrapedFinal waits for the
// scrape after its Finish.
func (e *Exporter) Begin(plan pipebench.Plan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.plan, e.began, e.last, e.seen, e.runID, e.final, e.finished = plan, time.Now(), runner.Progress{}, false, "", nil, false
	e.scrapedFinal, e.finalOnce = make(chan struct{}), sync.Once{}
}

// Update takes the runner's latest Progress. The run's series appear with
// the first one (it carries the run's id).
func (e *Exporter) Update(p runner.Progress) {
	e.mu.Lock()
	e.last, e.seen = p, true
	if p.RunID != "" {
		e.runID = p.RunID
	}
	e.mu.Unlock()
}

// Finish marks the run as ended with res's status: every value is final from
// now on. res may be nil (the run could not start).
func (e *Exporter) Finish(res *pipebench.Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished, e.final = true, res
	if res != nil && res.Manifest.RunID != "" {
		e.runID = res.Manifest.RunID
	}
}

// ScrapedFinal is closed once the values were read (scraped or pushed)
// after Finish: the final values reached whoever reads them.
func (e *Exporter) ScrapedFinal() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.scrapedFinal
}

// snapshot is every family now; empty before the run's id is known. It
// notes a read of the final values.
func (e *Exporter) snapshot() (fs *families, began time.Time) {
	e.mu.Lock()
	p, seen, plan, runID, final, finished := e.last, e.seen, e.plan, e.runID, e.final, e.finished
	began = e.began
	if finished {
		e.finalOnce.Do(func() { close(e.scrapedFinal) })
	}
	e.mu.Unlock()
	fs = newFamilies(runID)
	if runID == "" {
		return fs, began
	}
	status, phase, index, target := pipebench.StatusRunning, "", 0, p.TargetRate
	switch {
	case finished:
		status, phase, index, target = pipebench.StatusError, PhaseDone, len(plan.Phases)+1, 0
		if final != nil {
			status = final.Manifest.Status
		}
	case p.Draining:
		phase, index = PhaseDrain, len(plan.Phases)+1
	case seen && p.PhaseIndex >= 0:
		phase, index = p.Phase, p.PhaseIndex+1
	}
	caseName := plan.Case
	if caseName == "" {
		caseName = plan.Scenario
	}
	fs.set(MetricRunInfo, 1,
		"scenario", plan.Scenario, "case", caseName, "version", plan.Version)
	var statuses []string
	for _, s := range Statuses {
		statuses = append(statuses, string(s))
	}
	fs.stateset(MetricRunStatus, "status", statuses, string(status))
	fs.set(MetricFinished, b2f(finished))
	var phases []string
	for _, ph := range plan.Phases {
		phases = append(phases, ph.Name)
	}
	fs.stateset(MetricPhase, "phase", append(phases, PhaseDrain, PhaseDone), phase)
	fs.set(MetricPhaseIndex, float64(index))
	fs.set(MetricElapsed, p.Elapsed.Seconds())
	fs.set(MetricRemaining, p.Remaining.Seconds())
	fs.set(MetricTargetRate, target)

	var t totals
	if seen && p.PhaseStats != nil {
		for i := 0; i <= min(p.PhaseIndex, p.Phases-1); i++ {
			s, a := p.PhaseStats(i)
			if i < len(plan.Phases) {
				name := plan.Phases[i].Name
				fs.own(MetricPhaseLatency, 0, ptr(toHist(s.Latency)), []string{"phase", name})
				if p.HasSink && a != nil {
					fs.own(MetricPhaseE2ELatency, 0, ptr(toHist(a.E2E)), []string{"phase", name})
				}
			}
			t.add(s, a)
		}
	}
	fs.set(MetricSent, float64(t.sent))
	fs.set(MetricAccepted, float64(t.items[pipebench.ClassOK]))
	for _, c := range failureClasses {
		fs.set(MetricFailed, float64(t.items[c]), "class", c.String())
	}
	fs.set(MetricDropped, float64(t.held+t.missed))
	fs.set(MetricMissed, float64(t.missed))
	if len(t.heldBy) == 0 {
		fs.set(MetricHeldBack, 0, "reason", kpi.HeldMaxInFlight)
	}
	for _, r := range sortedReasons(t.heldBy) {
		fs.set(MetricHeldBack, float64(t.heldBy[r]), "reason", r)
	}
	fs.set(MetricSentBytes, float64(t.bytes))
	for _, c := range sendClasses {
		fs.set(MetricSends, float64(t.batches[c]), "class", c.String())
	}
	fs.set(MetricInFlight, float64(max(p.InFlight, 0)))
	fs.hist(MetricLatency, toHist(t.latency))
	fs.hist(MetricServiceTime, toHist(t.service))
	if p.HasSink {
		fs.set(MetricDelivered, float64(t.delivered))
		fs.set(MetricDuplicates, float64(t.duplicates))
		fs.set(MetricBacklog, p.Backlog)
		fs.hist(MetricE2ELatency, toHist(t.e2e))
	}
	switch {
	case final != nil:
		fs.addObserved(final.Series)
	case p.Snapshot != nil:
		fs.addObserved(p.Snapshot().Series)
	}
	return fs, began
}

// sortedReasons returns m's keys in order.
func sortedReasons(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
func ptr[T any](v T) *T { return &v }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// totals adds up the phases.
type totals struct {
	sent, bytes           uint64
	held, missed          uint64
	heldBy                map[string]uint64
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
	t.missed += s.Missed
	for r, n := range s.HeldBack {
		if t.heldBy == nil {
			t.heldBy = map[string]uint64{}
		}
		t.heldBy[r] += n
		t.held += n
	}
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

// Describe implements prometheus.Collector. It describes nothing: the
// observed families are known only when scraped (an unchecked collector).
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector: every family, computed now.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	fs, began := e.snapshot()
	for _, f := range fs.list {
		desc := prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		for _, p := range f.Points {
			var m prometheus.Metric
			var err error
			switch f.Kind {
			case gauge:
				m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, p.Value, p.Values...)
			case counter:
				m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, p.Value, p.Values...)
			case histogram:
				m = newPromHist(desc, *p.Hist, began, p.Values)
			}
			if err != nil {
				m = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- m
		}
	}
}

// Server serves an Exporter's /metrics over HTTP.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves exp
// on /metrics (the run's series only). It returns once listening. Prometheus 2.40 or later, started with
// --enable-feature=native-histograms, asks for the protobuf format and gets
// the native histograms; others get the text format and the classic
// buckets.
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
