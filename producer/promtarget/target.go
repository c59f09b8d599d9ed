// Package promtarget is a passive metrics producer: an HTTP server on
// loopback that a Prometheus-compatible agent scrapes. It serves, for each
// of N producers, an exposition of M metric families x S series (gauges,
// counters, histograms or a mix), optionally churning a fraction of the
// series every K scrapes, and counts what it served on its own /metrics:
//
//	pipebench_producer_scrapes_total{producer="3"}
//	pipebench_producer_samples_served_total{producer="3"}
//	pipebench_producer_bytes_served_total{producer="3"}
//	pipebench_producer_series_churned_total{producer="3"}
//	pipebench_producer_scrape_errors_total{producer="3"}
//	pipebench_producer_series{producer="3"}
//
// Names: metric i is Prefix_%04d (pb_load_metric_0000 ..), counters get a
// _total suffix; every series has the labels producer="P" and
// series="%04d". Values are pure functions of the producer, the series and
// the scrape index: gauges wander in 0..999, counters advance by 1..5 on
// every scrape of their producer, histograms gain one observation per
// bucket (and one above the last bound) times the same step.
//
// The fast encoder renders each producer's exposition once per churn
// generation and format (Prometheus text 0.0.4 or OpenMetrics 1.0) with the
// values left out, and per scrape copies it while appending the values; its
// output is byte-for-byte what prometheus/common/expfmt writes for the same
// metric families (the tests check it). The expfmt encoder builds the
// families and encodes them with expfmt on every scrape; it also serves the
// protobuf format when a scraper asks for it.
package promtarget

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/pipebench/pipebench"
)

// Target serves the producers. Start once, Shutdown once.
type Target struct {
	cfg       Config
	m         *layout
	perScrape int // sample lines per scrape of one producer
	producers []*producer
	accepted  []expfmt.Format

	mu      sync.Mutex
	ln      net.Listener
	servers []*http.Server
	base    string
	reg     *prometheus.Registry
}

// producer is one scrape target.
type producer struct {
	t   *Target
	id  int
	url string

	next atomic.Uint64 // scrape index handed to the next request

	scrapes, samples, bytes, churned, errors, items atomic.Uint64

	mu    sync.Mutex
	cache [2]*template // latest text and OpenMetrics templates

	// pending are the tracer items waiting for the producer's next scrape
	// (the prometheus-producers driver's Send).
	pmu     sync.Mutex
	pending []item
	onTake  func(n int) // told how many items a scrape took (set before serving)
}

// item is one tracer item waiting for a scrape.
type item struct {
	seq  uint64
	sent int64 // unix milliseconds
}

// New returns a target for cfg; it is not started.
func New(cfg Config) (*Target, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Target{cfg: cfg, m: newLayout(&cfg)}
	t.perScrape = t.m.samplesPerScrape()
	t.accepted = []expfmt.Format{expfmt.FmtText}
	if cfg.OpenMetrics {
		t.accepted = append(t.accepted, expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtOpenMetrics_0_0_1)
	}
	t.accepted = append(t.accepted, expfmt.FmtProtoDelim)
	for i := 0; i < cfg.Producers; i++ {
		t.producers = append(t.producers, &producer{t: t, id: i})
	}
	t.reg = prometheus.NewRegistry()
	t.reg.MustRegister(collector{t})
	return t, nil
}

// SamplesPerScrape is the number of samples one scrape of one producer
// returns (each histogram bucket, _sum and _count counts as one).
func (t *Target) SamplesPerScrape() int { return t.perScrape }

// SeriesPerProducer is metrics x series.
func (t *Target) SeriesPerProducer() int { return t.cfg.Metrics * t.cfg.Series }

// Start listens and serves; it returns once Endpoint and Targets are valid.
func (t *Target) Start(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ln != nil {
		return errors.New("promtarget: started twice")
	}
	ln, err := net.Listen("tcp", t.cfg.Listen)
	if err != nil {
		return fmt.Errorf("promtarget: listen on %s: %w", t.cfg.Listen, err)
	}
	t.ln = ln
	t.base = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /producer/{n}/metrics", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 0 || n >= len(t.producers) {
			http.NotFound(w, r)
			return
		}
		t.producers[n].ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /targets", t.serveSD)
	mux.HandleFunc("GET /{$}", t.serveIndex)
	t.serve(ln, mux)

	host, _, _ := net.SplitHostPort(t.cfg.Listen)
	for _, p := range t.producers {
		p.url = t.base + "/producer/" + strconv.Itoa(p.id) + "/metrics"
		if !t.cfg.SeparatePorts {
			continue
		}
		pl, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.mu.Unlock()
			_ = t.Shutdown(ctx)
			t.mu.Lock()
			return fmt.Errorf("promtarget: listen for producer %d: %w", p.id, err)
		}
		pm := http.NewServeMux()
		pm.Handle("GET /metrics", p)
		t.serve(pl, pm)
		p.url = "http://" + pl.Addr().String() + "/metrics"
	}
	return nil
}

func (t *Target) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	t.servers = append(t.servers, srv)
	go func() { _ = srv.Serve(ln) }()
}

// Endpoint is the base URL of the shared server ("http://127.0.0.1:PORT").
func (t *Target) Endpoint() string { return t.base }

// MetricsURL is the target's own Prometheus endpoint, with the
// pipebench_producer_* counters.
func (t *Target) MetricsURL() string { return t.base + "/metrics" }

// SDURL serves the targets as Prometheus HTTP service discovery JSON.
func (t *Target) SDURL() string { return t.base + "/targets" }

// Instance describes the target for observers: it runs in this process.
func (t *Target) Instance() pipebench.Instance {
	return pipebench.Instance{Name: "promtarget", PID: os.Getpid(), MetricsURL: t.MetricsURL()}
}

// Targets returns the scrape URL of every producer, in producer order.
func (t *Target) Targets() []string {
	out := make([]string, len(t.producers))
	for i, p := range t.producers {
		out[i] = p.url
	}
	return out
}

// Shutdown stops every listener and waits for scrapes in flight.
func (t *Target) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	servers := t.servers
	t.servers = nil
	t.mu.Unlock()
	var errs []error
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil {
			// A scraper may hold a connection it never sent a request on;
			// the server waits for those, so close them once ctx is done.
			_ = s.Close()
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stats is what one producer served so far.
type Stats struct {
	Producer int
	Scrapes  uint64 // scrapes answered in full
	Samples  uint64 // samples in those answers
	Bytes    uint64 // uncompressed bytes of those answers
	Churned  uint64 // series renamed
	Errors   uint64 // scrapes whose answer could not be written
	Items    uint64 // tracer items served (pb_item samples, beside Samples)
}

// Stats returns every producer's counters.
func (t *Target) Stats() []Stats {
	out := make([]Stats, len(t.producers))
	for i, p := range t.producers {
		out[i] = Stats{Producer: i, Scrapes: p.scrapes.Load(), Samples: p.samples.Load(), Bytes: p.bytes.Load(),
			Churned: p.churned.Load(), Errors: p.errors.Load(), Items: p.items.Load()}
	}
	return out
}

func (t *Target) serveIndex(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "pipebench promtarget: %d producers x %d metrics x %d series (%s), %d samples per scrape\n",
		t.cfg.Producers, t.cfg.Metrics, t.cfg.Series, t.cfg.Type, t.perScrape)
	fmt.Fprintf(w, "own metrics: %s\nservice discovery: %s\n\n", t.MetricsURL(), t.SDURL())
	for _, u := range t.Targets() {
		fmt.Fprintln(w, u)
	}
}

// sdGroup is one Prometheus HTTP SD target group.
type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// serveSD answers Prometheus HTTP service discovery with one target group
// per producer. Query parameters pick a share, as a metric agent's scrape
// configurations and replicas divide a cluster's pods: role=pod the
// even-numbered producers (scraped as pods), role=service the odd ones
// (the endpoints behind a Service, labelled service="producers");
// shard=I&shards=N the producers whose number within the role (or overall)
// is I modulo N.
func (t *Target) serveSD(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	role := q.Get("role")
	if role != "" && role != "pod" && role != "service" {
		http.Error(w, fmt.Sprintf("role %q: use pod or service", role), http.StatusBadRequest)
		return
	}
	shard, shards := 0, 1
	if q.Has("shards") {
		var err1, err2 error
		shard, err1 = strconv.Atoi(q.Get("shard"))
		shards, err2 = strconv.Atoi(q.Get("shards"))
		if err1 != nil || err2 != nil || shards < 1 || shard < 0 || shard >= shards {
			http.Error(w, "shard and shards: give 0 <= shard < shards", http.StatusBadRequest)
			return
		}
	}
	groups := make([]sdGroup, 0, len(t.producers))
	for _, p := range t.producers {
		n := p.id
		if role != "" {
			if (role == "pod") != (p.id%2 == 0) {
				continue
			}
			n = p.id / 2
		}
		if n%shards != shard {
			continue
		}
		host, path := p.url, "/metrics"
		host = strings.TrimPrefix(host, "http://")
		if i := strings.IndexByte(host, '/'); i >= 0 {
			host, path = host[:i], host[i:]
		}
		labels := map[string]string{"__metrics_path__": path, "pb_producer": strconv.Itoa(p.id)}
		if role == "service" {
			labels["service"] = "producers"
		}
		groups = append(groups, sdGroup{Targets: []string{host}, Labels: labels})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(groups)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

var gzPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// ServeHTTP answers one scrape.
func (p *producer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := p.t
	format := expfmt.NegotiateAccept(r.Header, t.accepted...)
	k := p.next.Add(1) - 1
	m := t.m
	if m.churnEvery > 0 && m.churnTotal > 0 && k > 0 && k%m.churnEvery == 0 {
		p.churned.Add(uint64(m.churnTotal))
	}
	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<20 {
			bufPool.Put(bp)
		}
	}()
	var body []byte
	items := p.take()
	ft := format.FormatType()
	if t.cfg.Encoder == EncoderExpfmt || (ft != expfmt.TypeTextPlain && ft != expfmt.TypeOpenMetrics) {
		buf := bytes.NewBuffer((*bp)[:0])
		enc := expfmt.NewEncoder(buf, format)
		fams := m.families(p.id, k)
		if len(items) > 0 {
			fams = append(fams, itemFamily(items))
		}
		for _, mf := range fams {
			if err := enc.Encode(mf); err != nil {
				p.errors.Add(1)
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		if c, ok := enc.(expfmt.Closer); ok {
			_ = c.Close()
		}
		body = buf.Bytes()
	} else {
		om := ft == expfmt.TypeOpenMetrics
		tpl := p.template(m.gen(k), om)
		body = tpl.render((*bp)[:0], k, m.perScrapeSum)
		if len(items) > 0 {
			body = appendItems(body, items, om)
		}
	}
	*bp = body
	h := w.Header()
	h.Set("Content-Type", string(format))
	var err error
	if t.cfg.Gzip && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		zw := gzPool.Get().(*gzip.Writer)
		zw.Reset(w)
		if _, err = zw.Write(body); err == nil {
			err = zw.Close()
		}
		zw.Reset(nil)
		gzPool.Put(zw)
	} else {
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, err = w.Write(body)
	}
	if err != nil {
		p.errors.Add(1)
		return
	}
	p.scrapes.Add(1)
	p.samples.Add(uint64(t.perScrape))
	p.bytes.Add(uint64(len(body)))
	p.items.Add(uint64(len(items)))
}

func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		f := strings.TrimSpace(strings.SplitN(part, ";", 2)[0])
		if f == "gzip" && !strings.Contains(part, "q=0") {
			return true
		}
	}
	return false
}

// template returns the template of generation g, building it on first use.
// Only the latest generation is cached; a scrape still in an older one (a
// slow concurrent scraper) builds its own.
func (p *producer) template(g uint64, om bool) *template {
	i := 0
	if om {
		i = 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cache[i]
	if c != nil && c.gen == g {
		return c
	}
	tpl := p.t.m.build(p.id, g, om)
	if c == nil || c.gen < g {
		p.cache[i] = tpl
	}
	return tpl
}

// collector exposes the producers' counters on the target's own registry.
type collector struct{ t *Target }

var (
	descScrapes = prometheus.NewDesc("pipebench_producer_scrapes_total", "Scrapes answered in full, per producer.", []string{"producer"}, nil)
	descSamples = prometheus.NewDesc("pipebench_producer_samples_served_total", "Samples in the scrapes answered, per producer.", []string{"producer"}, nil)
	descBytes   = prometheus.NewDesc("pipebench_producer_bytes_served_total", "Uncompressed bytes of the scrapes answered, per producer.", []string{"producer"}, nil)
	descChurned = prometheus.NewDesc("pipebench_producer_series_churned_total", "Series renamed by churn, per producer.", []string{"producer"}, nil)
	descErrors  = prometheus.NewDesc("pipebench_producer_scrape_errors_total", "Scrapes whose answer could not be written, per producer.", []string{"producer"}, nil)
	descSeries  = prometheus.NewDesc("pipebench_producer_series", "Series a scrape of the producer returns.", []string{"producer"}, nil)
	descItems   = prometheus.NewDesc("pipebench_producer_items_served_total", "Tracer items (pb_item samples) served, per producer.", []string{"producer"}, nil)
)

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descScrapes, descSamples, descBytes, descChurned, descErrors, descSeries, descItems} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	series := float64(c.t.SeriesPerProducer())
	for _, s := range c.t.Stats() {
		l := strconv.Itoa(s.Producer)
		ch <- prometheus.MustNewConstMetric(descScrapes, prometheus.CounterValue, float64(s.Scrapes), l)
		ch <- prometheus.MustNewConstMetric(descSamples, prometheus.CounterValue, float64(s.Samples), l)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(s.Bytes), l)
		ch <- prometheus.MustNewConstMetric(descChurned, prometheus.CounterValue, float64(s.Churned), l)
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(s.Errors), l)
		ch <- prometheus.MustNewConstMetric(descSeries, prometheus.GaugeValue, series, l)
		ch <- prometheus.MustNewConstMetric(descItems, prometheus.CounterValue, float64(s.Items), l)
	}
}
