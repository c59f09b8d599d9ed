// Package httpsink is the HTTP test backend: it receives events, matches
// their sequence numbers through a pipebench.Arrivals, injects faults per
// phase, and serves its own counters on /metrics.
package httpsink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpserve"
	"github.com/pipebench/pipebench/internal/conn/unixsock"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/sink/fault"
)

// Config configures the HTTP sink in a scenario.
type Config struct {
	// Listen is the address to listen on: host:port (default 127.0.0.1:0,
	// a free port) or a Unix domain socket, unix:///path/to.sock.
	Listen string `yaml:"listen" json:"listen"`
	// Path accepts events on this path; "/" accepts any path.
	Path string `yaml:"path" json:"path"`
	// MaxBodyBytes bounds one request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if err := unixsock.Check(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %w", err))
	}
	if !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, fmt.Errorf("path: %q must start with /", c.Path))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max_body_bytes: must be at least 1"))
	}
	return errors.Join(errs...)
}

func defaultConfig() *Config {
	return &Config{Listen: "127.0.0.1:0", Path: "/", MaxBodyBytes: 16 << 20}
}

// Factory returns the factory of the "http" sink.
func Factory() pipebench.Factory[pipebench.Sink] {
	return pipebench.NewFactory("http", "HTTP test backend: matches sequence numbers, injects faults, serves /metrics", defaultConfig,
		func(c *Config, _ pipebench.Env) (pipebench.Sink, error) {
			return New(Params{Listen: c.Listen, Path: c.Path, MaxBodyBytes: c.MaxBodyBytes, Seed: 1})
		})
}

// Params configures New.
type Params struct {
	Listen       string
	Path         string
	MaxBodyBytes int64
	Faults       pipebench.FaultPolicy // initial policy (the runner sets one per phase)
	Seed         uint64
	// Arrivals, if set, is used when Start is given nil.
	Arrivals pipebench.Arrivals
}

// Sink is the HTTP test backend. Start once, Shutdown once; requests are
// served concurrently.
type Sink struct {
	p        Params
	inj      *fault.Injector
	rec      pipebench.Arrivals
	ln       net.Listener
	srv      *httpserve.Server
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	items    *prometheus.CounterVec
	dur      prometheus.Histogram
}

var (
	_ pipebench.Sink        = (*Sink)(nil)
	_ pipebench.FaultSetter = (*Sink)(nil)
	_ pipebench.FaultSeeder = (*Sink)(nil)
)

// New returns a sink that is not yet listening.
func New(p Params) (*Sink, error) {
	if p.Listen == "" {
		p.Listen = "127.0.0.1:0"
	}
	if p.Path == "" {
		p.Path = "/"
	}
	if p.MaxBodyBytes <= 0 {
		p.MaxBodyBytes = 16 << 20
	}
	s := &Sink{p: p, inj: fault.New(p.Seed), reg: prometheus.NewRegistry()}
	s.inj.Set(p.Faults, time.Now())
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipebench_sink_requests_total", Help: "Requests received, by HTTP status answered."}, []string{"code"})
	s.items = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipebench_sink_items_total", Help: "Items received, by outcome."}, []string{"outcome"})
	s.dur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pipebench_sink_request_duration_seconds", Help: "Time to answer a request, injected latency included.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)})
	s.reg.MustRegister(s.requests, s.items, s.dur)
	return s, nil
}

// Start listens and serves; it returns once Endpoint is valid.
func (s *Sink) Start(ctx context.Context, rec pipebench.Arrivals) error {
	if rec == nil {
		rec = s.p.Arrivals
	}
	if rec == nil {
		return errors.New("the sink needs an Arrivals recorder")
	}
	s.rec = rec
	ln, err := unixsock.Listen(s.p.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.p.Listen, err)
	}
	s.ln = ln
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", s.handle)
	s.srv = httpserve.Serve(ln, h2c.NewHandler(mux, &http2.Server{}))
	return nil
}

// Endpoint is the URL events are posted to; on a Unix socket it is the
// socket, unix:///path.sock (events go to Path on it, /metrics beside).
func (s *Sink) Endpoint() string {
	if s.ln == nil {
		return ""
	}
	if unixsock.IsUnix(s.ln) {
		return unixsock.Addr(s.ln)
	}
	return "http://" + s.ln.Addr().String() + s.p.Path
}

// MetricsURL is the sink's own Prometheus endpoint (on a Unix socket, the
// socket: GET /metrics on it).
func (s *Sink) MetricsURL() string {
	if unixsock.IsUnix(s.ln) {
		return unixsock.Addr(s.ln)
	}
	return "http://" + s.ln.Addr().String() + "/metrics"
}

// SetFaults implements pipebench.FaultSetter.
func (s *Sink) SetFaults(p pipebench.FaultPolicy, phaseStart time.Time) { s.inj.Set(p, phaseStart) }

// SeedFaults implements pipebench.FaultSeeder.
func (s *Sink) SeedFaults(seed uint64) { s.inj.Reseed(seed) }

// Shutdown stops serving and waits for in-flight requests (bounded by ctx).
func (s *Sink) Shutdown(ctx context.Context) error {
	return s.srv.Shutdown(ctx)
}

func (s *Sink) handle(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code := s.serve(w, r)
	s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
	s.dur.Observe(time.Since(start).Seconds())
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) int {
	if s.p.Path != "/" && r.URL.Path != s.p.Path {
		http.Error(w, "no such path", http.StatusNotFound)
		return http.StatusNotFound
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		http.Error(w, "POST or PUT events", http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.p.MaxBodyBytes+1))
	if err != nil || int64(len(body)) > s.p.MaxBodyBytes {
		items := 1
		if c, err := strconv.Atoi(r.Header.Get(payload.HeaderCount)); err == nil && c > 0 {
			items = c
		}
		s.items.WithLabelValues("bad").Add(float64(items))
		http.Error(w, "body unreadable or too large", http.StatusRequestEntityTooLarge)
		return http.StatusRequestEntityTooLarge
	}
	// The items are counted before the fault decision: the rate limit
	// counts them.
	mp := marksPool.Get().(*[]mark)
	defer func() {
		if cap(*mp) <= 1<<16 {
			*mp = (*mp)[:0]
			marksPool.Put(mp)
		}
	}()
	matched, unmatched, err := payload.Extract(r.Header.Get, r.Header.Get("Content-Type"), body, func(seq uint64, sent time.Time) {
		*mp = append(*mp, mark{seq, sent})
	})
	if err != nil {
		s.items.WithLabelValues("bad").Inc()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest
	}
	items := matched + unmatched
	d := s.inj.Decide(fault.Request{At: time.Now(), Items: items})
	if !d.Wait(r.Context()) {
		return 499
	}
	if d.Fail {
		s.rec.Faulted(items)
		s.items.WithLabelValues("faulted").Add(float64(items))
		w.Header().Set("Retry-After", "1")
		http.Error(w, "injected fault: "+d.Reason, d.Status)
		return d.Status
	}
	now := time.Now()
	for _, m := range *mp {
		s.rec.Arrive(m.seq, m.sent, now)
	}
	if unmatched > 0 {
		s.rec.Unmatched(unmatched)
		s.items.WithLabelValues("unmatched").Add(float64(unmatched))
	}
	s.items.WithLabelValues("delivered").Add(float64(matched))
	w.WriteHeader(http.StatusOK)
	return http.StatusOK
}

// mark is an item's sequence number and send time, read from a request
// before it is decided.
type mark struct {
	seq  uint64
	sent time.Time
}

var marksPool = sync.Pool{New: func() any { return new([]mark) }}
