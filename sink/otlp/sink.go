// Package otlpsink is the OTLP test backend (gRPC and HTTP/protobuf): it
// receives traces, metrics and logs, matches pb.seq/pb.sent through a
// pipebench.Arrivals, injects faults per phase (UNAVAILABLE,
// RESOURCE_EXHAUSTED, INTERNAL over gRPC; the HTTP status over HTTP), and
// serves its own counters on /metrics of the HTTP listener.
package otlpsink

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipebench/pipebench"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/sink/fault"
)

// Config configures the OTLP sink.
type Config struct {
	GRPCListen string `yaml:"grpc_listen" json:"grpc_listen"` // "" = no gRPC
	HTTPListen string `yaml:"http_listen" json:"http_listen"` // "" = no HTTP
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.GRPCListen == "" && c.HTTPListen == "" {
		errs = append(errs, errors.New("grpc_listen: give grpc_listen, http_listen or both"))
	}
	for key, v := range map[string]string{"grpc_listen": c.GRPCListen, "http_listen": c.HTTPListen} {
		if v != "" {
			if _, _, err := net.SplitHostPort(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not host:port", key, v))
			}
		}
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "otlp" sink.
func Factory() pipebench.Factory[pipebench.Sink] {
	def := func() *Config { return &Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"} }
	return pipebench.Factory[pipebench.Sink]{
		Name:      "otlp",
		Doc:       "OTLP backend (gRPC and HTTP): matches pb.seq, injects faults, serves /metrics",
		NewConfig: func() any { return def() },
		New: func(cfg any, _ pipebench.Env) (pipebench.Sink, error) {
			c, ok := cfg.(*Config)
			if !ok || c == nil {
				c = def()
			}
			if err := c.Validate(); err != nil {
				return nil, err
			}
			return New(*c, 1), nil
		},
	}
}

// Sink is the OTLP backend. Start once, Shutdown once.
type Sink struct {
	cfg            Config
	inj            *fault.Injector
	rec            pipebench.Arrivals
	grpcLn, httpLn net.Listener
	grpcSrv        *grpc.Server
	httpSrv        *http.Server
	reg            *prometheus.Registry
	items          *prometheus.CounterVec
	requests       *prometheus.CounterVec
}

var (
	_ pipebench.Sink        = (*Sink)(nil)
	_ pipebench.FaultSetter = (*Sink)(nil)
)

// New returns a sink that is not yet listening.
func New(cfg Config, seed uint64) *Sink {
	s := &Sink{cfg: cfg, inj: fault.New(seed), reg: prometheus.NewRegistry()}
	s.items = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipebench_sink_items_total", Help: "Items received, by outcome."}, []string{"outcome"})
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipebench_sink_requests_total", Help: "Requests, by answer code."}, []string{"code"})
	s.reg.MustRegister(s.items, s.requests)
	return s
}

// Start listens on the configured addresses.
func (s *Sink) Start(ctx context.Context, rec pipebench.Arrivals) error {
	if rec == nil {
		return errors.New("the OTLP sink needs an Arrivals recorder")
	}
	s.rec = rec
	if s.cfg.GRPCListen != "" {
		ln, err := net.Listen("tcp", s.cfg.GRPCListen)
		if err != nil {
			return fmt.Errorf("otlp sink: listen on %s: %w", s.cfg.GRPCListen, err)
		}
		s.grpcLn = ln
		s.grpcSrv = grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
		ptraceotlp.RegisterGRPCServer(s.grpcSrv, &traces{s: s})
		pmetricotlp.RegisterGRPCServer(s.grpcSrv, &metrics{s: s})
		plogotlp.RegisterGRPCServer(s.grpcSrv, &logs{s: s})
		go s.grpcSrv.Serve(ln)
	}
	if s.cfg.HTTPListen != "" {
		ln, err := net.Listen("tcp", s.cfg.HTTPListen)
		if err != nil {
			s.Shutdown(ctx)
			return fmt.Errorf("otlp sink: listen on %s: %w", s.cfg.HTTPListen, err)
		}
		s.httpLn = ln
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("POST /v1/traces", s.httpHandler("traces"))
		mux.HandleFunc("POST /v1/metrics", s.httpHandler("metrics"))
		mux.HandleFunc("POST /v1/logs", s.httpHandler("logs"))
		s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go s.httpSrv.Serve(ln)
	}
	return nil
}

// Endpoint returns the gRPC host:port, or the HTTP base URL when there is
// no gRPC listener.
func (s *Sink) Endpoint() string {
	if s.grpcLn != nil {
		return s.grpcLn.Addr().String()
	}
	return s.HTTPEndpoint()
}

// GRPCEndpoint returns the gRPC host:port ("" when off).
func (s *Sink) GRPCEndpoint() string {
	if s.grpcLn == nil {
		return ""
	}
	return s.grpcLn.Addr().String()
}

// HTTPEndpoint returns the HTTP base URL ("" when off).
func (s *Sink) HTTPEndpoint() string {
	if s.httpLn == nil {
		return ""
	}
	return "http://" + s.httpLn.Addr().String()
}

// SetFaults implements pipebench.FaultSetter.
func (s *Sink) SetFaults(p pipebench.FaultPolicy, phaseStart time.Time) { s.inj.Set(p, phaseStart) }

// Shutdown stops both servers.
func (s *Sink) Shutdown(ctx context.Context) error {
	if s.grpcSrv != nil {
		done := make(chan struct{})
		go func() { s.grpcSrv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.grpcSrv.Stop()
		}
	}
	if s.httpSrv != nil {
		return s.httpSrv.Shutdown(ctx)
	}
	return nil
}

// admit applies the fault policy to a request of n items; it returns the
// HTTP status to fail with, or 0 to accept.
func (s *Sink) admit(ctx context.Context, n int) int {
	d := s.inj.Decide(time.Now())
	if d.Delay > 0 {
		t := time.NewTimer(d.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	if d.Fail {
		s.rec.Faulted(n)
		s.items.WithLabelValues("faulted").Add(float64(n))
		return d.Status
	}
	return 0
}

func (s *Sink) record(n, unmatched int) {
	if unmatched > 0 {
		s.rec.Unmatched(unmatched)
		s.items.WithLabelValues("unmatched").Add(float64(unmatched))
	}
	s.items.WithLabelValues("delivered").Add(float64(n - unmatched))
}

// grpcError maps an injected HTTP status to the gRPC status a real backend
// would answer.
func grpcError(code int) error {
	switch code {
	case 429:
		return status.Error(codes.ResourceExhausted, "injected fault")
	case 503, 502, 504:
		return status.Error(codes.Unavailable, "injected fault")
	}
	return status.Error(codes.Internal, "injected fault")
}

type traces struct {
	ptraceotlp.UnimplementedGRPCServer
	s *Sink
}

func (t *traces) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	td := req.Traces()
	if code := t.s.admit(ctx, td.SpanCount()); code != 0 {
		t.s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
		return ptraceotlp.NewExportResponse(), grpcError(code)
	}
	now := time.Now()
	n, u := otlpgen.ExtractTraces(td, func(seq uint64, sent time.Time) { t.s.rec.Arrive(seq, sent, now) })
	t.s.record(n, u)
	t.s.requests.WithLabelValues("200").Inc()
	return ptraceotlp.NewExportResponse(), nil
}

type metrics struct {
	pmetricotlp.UnimplementedGRPCServer
	s *Sink
}

func (m *metrics) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	md := req.Metrics()
	if code := m.s.admit(ctx, md.DataPointCount()); code != 0 {
		m.s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
		return pmetricotlp.NewExportResponse(), grpcError(code)
	}
	now := time.Now()
	n, u := otlpgen.ExtractMetrics(md, func(seq uint64, sent time.Time) { m.s.rec.Arrive(seq, sent, now) })
	m.s.record(n, u)
	m.s.requests.WithLabelValues("200").Inc()
	return pmetricotlp.NewExportResponse(), nil
}

type logs struct {
	plogotlp.UnimplementedGRPCServer
	s *Sink
}

func (l *logs) Export(ctx context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	ld := req.Logs()
	if code := l.s.admit(ctx, ld.LogRecordCount()); code != 0 {
		l.s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
		return plogotlp.NewExportResponse(), grpcError(code)
	}
	now := time.Now()
	n, u := otlpgen.ExtractLogs(ld, func(seq uint64, sent time.Time) { l.s.rec.Arrive(seq, sent, now) })
	l.s.record(n, u)
	l.s.requests.WithLabelValues("200").Inc()
	return plogotlp.NewExportResponse(), nil
}

// httpHandler serves OTLP/HTTP protobuf for one signal.
func (s *Sink) httpHandler(signal string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var src io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, "bad gzip body", http.StatusBadRequest)
				return
			}
			defer zr.Close()
			src = zr
		}
		body, err := io.ReadAll(io.LimitReader(src, 64<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		now := time.Now()
		arrive := func(seq uint64, sent time.Time) { s.rec.Arrive(seq, sent, now) }
		var n, u, items int
		var accept func()
		switch signal {
		case "traces":
			req := ptraceotlp.NewExportRequest()
			err = req.UnmarshalProto(body)
			items = req.Traces().SpanCount()
			accept = func() { n, u = otlpgen.ExtractTraces(req.Traces(), arrive) }
		case "metrics":
			req := pmetricotlp.NewExportRequest()
			err = req.UnmarshalProto(body)
			items = req.Metrics().DataPointCount()
			accept = func() { n, u = otlpgen.ExtractMetrics(req.Metrics(), arrive) }
		default:
			req := plogotlp.NewExportRequest()
			err = req.UnmarshalProto(body)
			items = req.Logs().LogRecordCount()
			accept = func() { n, u = otlpgen.ExtractLogs(req.Logs(), arrive) }
		}
		if err != nil {
			s.requests.WithLabelValues("400").Inc()
			http.Error(w, "not an OTLP protobuf request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if code := s.admit(r.Context(), items); code != 0 {
			s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "injected fault", code)
			return
		}
		accept()
		s.record(n, u)
		s.requests.WithLabelValues("200").Inc()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}
}
