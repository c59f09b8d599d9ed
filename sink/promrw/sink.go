// Package promrwsink is a Prometheus remote-write receiver (1.0 and 2.0)
// used as the test backend: it decodes each snappy-compressed request
// (prometheus.WriteRequest, or io.prometheus.write.v2.Request when the
// Content-Type says proto=io.prometheus.write.v2.Request) by hand,
// counts series and samples (apart: samples matched by sequence number,
// samples a target served, the scraper's own report series such as up,
// and staleness markers), reports arrivals to a pipebench.Arrivals, injects
// the phase's fault policy (sink/fault) and serves its own counters on
// /metrics.
package promrwsink

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

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpserve"
	"github.com/pipebench/pipebench/payload/promrw"
	"github.com/pipebench/pipebench/sink/fault"
)

// Config configures the remote-write sink.
type Config struct {
	// Listen is host:port (port 0 picks one).
	Listen string `yaml:"listen" json:"listen"`
	// Path receives the writes; Prometheus' own receiver uses
	// /api/v1/write.
	Path string `yaml:"path" json:"path"`
	// MaxBodyBytes bounds one request, compressed and decompressed.
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes"`
}

// DefaultConfig listens on an ephemeral loopback port at /api/v1/write
// and takes requests up to 64 MiB.
func DefaultConfig() *Config {
	return &Config{Listen: "127.0.0.1:0", Path: "/api/v1/write", MaxBodyBytes: 64 << 20}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
	}
	if !strings.HasPrefix(c.Path, "/") || c.Path == "/metrics" {
		errs = append(errs, fmt.Errorf("path: %q must start with / and not be /metrics", c.Path))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max_body_bytes: must be at least 1"))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "prometheus-remote-write" sink.
func Factory() pipebench.Factory[pipebench.Sink] {
	return pipebench.NewFactory("prometheus-remote-write", "Prometheus remote-write receiver (1.0 and 2.0): counts series and samples, matches sequence numbers, injects faults, serves /metrics",
		DefaultConfig, func(c *Config, _ pipebench.Env) (pipebench.Sink, error) { return New(*c), nil })
}

// Stats are the sink's totals since Start.
type Stats struct {
	promrw.Counts
	Requests int // requests accepted
	V2       int // of which remote write 2.0
	Faulted  int // samples in requests answered with an injected fault
	Bad      int // requests refused as unreadable
}

// Sink is the remote-write receiver. Start once, Shutdown once; safe for
// concurrent requests.
type Sink struct {
	cfg Config
	inj *fault.Injector
	rec pipebench.Arrivals
	srv *httpserve.Server

	mu    sync.Mutex
	stats Stats

	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	samples  *prometheus.CounterVec
	series   prometheus.Counter
	bufs     sync.Pool
	v2       sync.Pool // *promrw.V2Decoder
}

var (
	_ pipebench.Sink        = (*Sink)(nil)
	_ pipebench.FaultSetter = (*Sink)(nil)
	_ pipebench.FaultSeeder = (*Sink)(nil)
)

// New returns a sink that is not yet listening; a zero field of cfg takes
// its default.
func New(cfg Config) *Sink {
	def := DefaultConfig()
	if cfg.Listen == "" {
		cfg.Listen = def.Listen
	}
	if cfg.Path == "" {
		cfg.Path = def.Path
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = def.MaxBodyBytes
	}
	s := &Sink{cfg: cfg, inj: fault.New(1), reg: prometheus.NewRegistry()}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipebench_sink_requests_total", Help: "Remote-write requests received, by HTTP status answered."}, []string{"code"})
	s.samples = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipebench_sink_samples_total", Help: "Samples received, by kind: matched (sequence numbered), served (by a target), report (the scraper's up and scrape_*), stale (staleness markers), histogram, faulted."}, []string{"kind"})
	s.series = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipebench_sink_series_total", Help: "Time series in the accepted requests (a series sent twice counts twice)."})
	s.reg.MustRegister(s.requests, s.samples, s.series)
	return s
}

// Start listens and serves; it returns once Endpoint is valid.
func (s *Sink) Start(_ context.Context, rec pipebench.Arrivals) error {
	if rec == nil {
		return errors.New("the remote-write sink needs an Arrivals recorder")
	}
	s.rec = rec
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc(s.cfg.Path, s.handle)
	srv, err := httpserve.Listen(s.cfg.Listen, mux)
	if err != nil {
		return fmt.Errorf("remote-write sink: %w", err)
	}
	s.srv = srv
	return nil
}

// Endpoint is the URL to remote-write to, such as
// http://127.0.0.1:9090/api/v1/write.
func (s *Sink) Endpoint() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL(s.cfg.Path)
}

// MetricsURL is the sink's own Prometheus endpoint.
func (s *Sink) MetricsURL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL("/metrics")
}

// SetFaults implements pipebench.FaultSetter.
func (s *Sink) SetFaults(p pipebench.FaultPolicy, phaseStart time.Time) { s.inj.Set(p, phaseStart) }

// SeedFaults implements pipebench.FaultSeeder.
func (s *Sink) SeedFaults(seed uint64) { s.inj.Reseed(seed) }

// Stats returns the totals so far.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Shutdown stops serving and waits for requests in flight (bounded by ctx).
func (s *Sink) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	return err
}

func (s *Sink) handle(w http.ResponseWriter, r *http.Request) {
	code := s.serve(w, r)
	s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
}

// refuse answers a request the sink cannot read.
func (s *Sink) refuse(w http.ResponseWriter, code int, msg string) int {
	s.mu.Lock()
	s.stats.Bad++
	s.mu.Unlock()
	http.Error(w, msg, code)
	return code
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodPost {
		return s.refuse(w, http.StatusMethodNotAllowed, "remote write is a POST")
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != promrw.ContentEncoding {
		return s.refuse(w, http.StatusUnsupportedMediaType, "Content-Encoding "+enc+" is not snappy")
	}
	version := 1
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if version = promrw.MessageOf(ct); version == 0 {
			return s.refuse(w, http.StatusUnsupportedMediaType, "Content-Type "+ct+" is neither application/x-protobuf (remote write 1.0, proto=prometheus.WriteRequest) nor "+promrw.ContentTypeV2+" (2.0)")
		}
	}
	bp := s.buffer()
	defer s.bufs.Put(bp)
	buf := (*bp)[:0]
	n, err := readAll(r.Body, &buf, s.cfg.MaxBodyBytes)
	if err != nil {
		return s.refuse(w, http.StatusBadRequest, "body unreadable: "+err.Error())
	}
	if n > s.cfg.MaxBodyBytes {
		return s.refuse(w, http.StatusRequestEntityTooLarge, "body larger than max_body_bytes")
	}
	dl, err := snappy.DecodedLen(buf)
	if err != nil || int64(dl) > s.cfg.MaxBodyBytes {
		return s.refuse(w, http.StatusBadRequest, "not a snappy block, or larger than max_body_bytes decompressed")
	}
	db := s.buffer()
	defer s.bufs.Put(db)
	plain, err := snappy.Decode((*db)[:cap(*db)], buf)
	if err != nil {
		return s.refuse(w, http.StatusBadRequest, "snappy: "+err.Error())
	}
	*db = plain[:0]
	*bp = buf[:0]
	decode := promrw.Decode
	if version == 2 {
		dec, _ := s.v2.Get().(*promrw.V2Decoder)
		if dec == nil {
			dec = new(promrw.V2Decoder)
		}
		defer s.v2.Put(dec)
		decode = dec.Decode
	}
	// The samples are counted before the fault decision (the rate limit
	// counts them), and decoded again, with their sequence numbers, only
	// when the request is accepted.
	c, err := decode(plain, nil)
	if err != nil {
		return s.refuse(w, http.StatusBadRequest, err.Error())
	}
	d := s.inj.Decide(fault.Request{At: time.Now(), Items: c.Samples})
	if !d.Wait(r.Context()) {
		return 499
	}
	if d.Fail {
		s.rec.Faulted(c.Samples)
		s.samples.WithLabelValues("faulted").Add(float64(c.Samples))
		s.mu.Lock()
		s.stats.Faulted += c.Samples
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "injected fault: "+d.Reason, d.Status)
		return d.Status
	}
	now := time.Now()
	c, err = decode(plain, func(seq uint64, sent int64) { s.rec.Arrive(seq, time.UnixMilli(sent), now) })
	if err != nil {
		// Samples matched before the error were reported; Prometheus does
		// not retry a 400, so they are not sent twice.
		return s.refuse(w, http.StatusBadRequest, err.Error())
	}
	if c.Other > 0 {
		s.rec.Unmatched(c.Other)
	}
	s.series.Add(float64(c.Series))
	for kind, v := range map[string]int{"matched": c.Matched, "served": c.Other, "report": c.Report, "stale": c.Stale, "histogram": c.Histograms} {
		if v > 0 {
			s.samples.WithLabelValues(kind).Add(float64(v))
		}
	}
	s.mu.Lock()
	s.stats.Counts.Add(c)
	s.stats.Requests++
	if version == 2 {
		s.stats.V2++
	}
	s.mu.Unlock()
	if version == 2 {
		// A 2.0 sender reads what was written from the answer; without
		// these headers it takes the receiver for a 1.0 one.
		sm, hi, ex := promrw.WrittenHeaders(c)
		w.Header().Set(promrw.SamplesWrittenHeader, sm)
		w.Header().Set(promrw.HistogramsWrittenHeader, hi)
		w.Header().Set(promrw.ExemplarsWrittenHeader, ex)
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}

// buffer returns a pooled byte slice.
func (s *Sink) buffer() *[]byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

// readAll reads r into *buf, at most limit+1 bytes, and returns how many.
func readAll(r io.Reader, buf *[]byte, limit int64) (int64, error) {
	b := *buf
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			*buf = b
			return int64(len(b)), nil
		}
		if err == io.EOF {
			*buf = b
			return int64(len(b)), nil
		}
		if err != nil {
			*buf = b
			return int64(len(b)), err
		}
	}
}
