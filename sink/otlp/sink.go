// Package otlpsink is the OTLP test backend (gRPC and HTTP/protobuf): it
// receives traces, metrics and logs, matches pb.seq/pb.sent through a
// pipebench.Arrivals (reading them straight from the protobuf wire format,
// without building pdata), injects faults per phase (UNAVAILABLE,
// RESOURCE_EXHAUSTED, INTERNAL over gRPC; the HTTP status over HTTP), and
// serves its own counters on /metrics of the HTTP listener.
package otlpsink

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipebench/pipebench"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/sink/fault"
)

// Config configures the OTLP sink.
type Config struct {
	GRPCListen string `yaml:"grpc_listen" json:"grpc_listen"` // host:port or unix:///path.sock; "" = no gRPC
	HTTPListen string `yaml:"http_listen" json:"http_listen"` // host:port or unix:///path.sock; "" = no HTTP
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.GRPCListen == "" && c.HTTPListen == "" {
		errs = append(errs, errors.New("grpc_listen: give grpc_listen, http_listen or both"))
	}
	for key, v := range map[string]string{"grpc_listen": c.GRPCListen, "http_listen": c.HTTPListen} {
		if v != "" {
			if err := checkListen(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "otlp" sink.
func Factory() pipebench.Factory[pipebench.Sink] {
	def := func() *Config { return &Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"} }
	return pipebench.NewFactory("otlp", "OTLP backend (gRPC and HTTP): matches pb.seq, injects faults, serves /metrics", def,
		func(c *Config, _ pipebench.Env) (pipebench.Sink, error) { return New(*c, 1), nil })
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
	// pipes caches the recorder of each pipeline named by the
	// x-pipebench-pipeline header (pipebench.PipelineArrivals).
	pipes sync.Map
}

var (
	_ pipebench.Sink          = (*Sink)(nil)
	_ pipebench.FaultSetter   = (*Sink)(nil)
	_ pipebench.FaultSeeder   = (*Sink)(nil)
	_ pipebench.MultiEndpoint = (*Sink)(nil)
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
		ln, err := listen(s.cfg.GRPCListen)
		if err != nil {
			return fmt.Errorf("otlp sink: listen on %s: %w", s.cfg.GRPCListen, err)
		}
		s.grpcLn = ln
		s.grpcSrv = grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.ForceServerCodecV2(rawCodec{}), experimental.BufferPool(dirty))
		s.register(s.grpcSrv)
		go s.grpcSrv.Serve(ln)
	}
	if s.cfg.HTTPListen != "" {
		ln, err := listen(s.cfg.HTTPListen)
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
		return grpcAddr(s.grpcLn)
	}
	return s.HTTPEndpoint()
}

// GRPCEndpoint returns the gRPC host:port ("" when off).
func (s *Sink) GRPCEndpoint() string {
	if s.grpcLn == nil {
		return ""
	}
	return grpcAddr(s.grpcLn)
}

// HTTPEndpoint returns the HTTP base URL ("" when off).
func (s *Sink) HTTPEndpoint() string {
	if s.httpLn == nil {
		return ""
	}
	return httpAddr(s.httpLn)
}

// Endpoints implements pipebench.MultiEndpoint: "grpc" is the gRPC
// host:port, "http" the HTTP base URL, each present when its listener is.
// Valid after Start.
func (s *Sink) Endpoints() map[string]string {
	m := map[string]string{}
	if e := s.GRPCEndpoint(); e != "" {
		m["grpc"] = e
	}
	if e := s.HTTPEndpoint(); e != "" {
		m["http"] = e
	}
	return m
}

// SetFaults implements pipebench.FaultSetter.
func (s *Sink) SetFaults(p pipebench.FaultPolicy, phaseStart time.Time) { s.inj.Set(p, phaseStart) }

// SeedFaults implements pipebench.FaultSeeder.
func (s *Sink) SeedFaults(seed uint64) { s.inj.Reseed(seed) }

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

// recorder returns where the items of the named pipeline are reported:
// the pipeline's own recorder when the Arrivals keeps pipelines apart, else
// (and for requests that name none, or no valid one) the Arrivals itself.
func (s *Sink) recorder(pipeline string) pipebench.Arrivals {
	if pipeline == "" {
		return s.rec
	}
	if r, ok := s.pipes.Load(pipeline); ok {
		return r.(pipebench.Arrivals)
	}
	pa, ok := s.rec.(pipebench.PipelineArrivals)
	if !ok || !pipebench.ValidPipelineName(pipeline) {
		return s.rec
	}
	r := pa.Pipeline(pipeline)
	if r == nil { // no more pipelines told apart: the totals alone
		return s.rec
	}
	s.pipes.Store(pipeline, r)
	return r
}

// grpcPipeline returns the pipeline a gRPC request names in its metadata
// ("" when none).
func grpcPipeline(ctx context.Context) string {
	if v := metadata.ValueFromIncomingContext(ctx, pipebench.PipelineHeader); len(v) > 0 {
		return v[0]
	}
	return ""
}

// admit applies the fault policy to a request of n items of the named
// pipeline, reported to rec; it returns the HTTP status to fail with, or 0
// to accept.
func (s *Sink) admit(ctx context.Context, n int, pipeline string, rec pipebench.Arrivals) int {
	d := s.inj.Decide(fault.Request{At: time.Now(), Items: n, Pipeline: pipeline})
	d.Wait(ctx)
	if d.Fail {
		rec.Faulted(n)
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

// raw is an encoded request as gRPC received it.
type raw struct{ buf mem.Buffer }

// empty is an empty answer: an Export*ServiceResponse without partial
// success.
type empty struct{}

// rawCodec hands a *raw the request bytes without decoding them and
// encodes an *empty as no bytes; anything else goes to the registered
// proto codec.
type rawCodec struct{}

var protoCodec = encoding.GetCodecV2("proto")

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(*empty); ok {
		return nil, nil
	}
	return protoCodec.Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*raw); ok {
		r.buf = data.MaterializeToBuffer(dirty)
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

// dirtyPool is a mem.BufferPool that does not zero what it hands out (gRPC
// overwrites every byte it asks for; zeroing megabyte requests cost the
// sink a tenth of its CPU): one sync.Pool per power of two.
type dirtyPool struct{ pools [27]sync.Pool }

var dirty = &dirtyPool{}

func (p *dirtyPool) Get(n int) *[]byte {
	c := bits.Len(uint(n - 1))
	if n <= 1 {
		c = 0
	}
	if c >= len(p.pools) {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.pools[c].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<c)
	return &b
}

func (p *dirtyPool) Put(b *[]byte) {
	c := bits.Len(uint(cap(*b))) - 1
	if c < 0 || c >= len(p.pools) || cap(*b) != 1<<c {
		return
	}
	p.pools[c].Put(b)
}

var scans = sync.Pool{New: func() any { return new(otlpgen.Scan) }}

// export is one signal's Export method.
type export struct {
	s      *Sink
	method string
	scan   func([]byte, *otlpgen.Scan) error
}

// handle reads the request with the wire scanner, applies the fault policy
// to its items, and reports the arrivals.
func (e *export) handle(ctx context.Context, r *raw) (*empty, error) {
	defer r.buf.Free()
	sc := scans.Get().(*otlpgen.Scan)
	defer scans.Put(sc)
	if err := e.scan(r.buf.ReadOnlyData(), sc); err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: error unmarshalling request: %v", err)
	}
	pipeline := grpcPipeline(ctx)
	rec := e.s.recorder(pipeline)
	if code := e.s.admit(ctx, sc.Items, pipeline, rec); code != 0 {
		e.s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
		return nil, grpcError(code)
	}
	e.s.arrive(sc, time.Now(), rec)
	e.s.requests.WithLabelValues("200").Inc()
	return &empty{}, nil
}

func (e *export) desc(service, file string) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Export",
			Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
				r := new(raw)
				if err := dec(r); err != nil {
					return nil, err
				}
				if icpt == nil {
					return e.handle(ctx, r)
				}
				info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + service + "/Export"}
				return icpt(ctx, r, info, func(ctx context.Context, req any) (any, error) { return e.handle(ctx, req.(*raw)) })
			},
		}},
		Metadata: file,
	}
}

// register serves the three OTLP export services on srv.
func (s *Sink) register(srv *grpc.Server) {
	for _, e := range []struct {
		service, file string
		scan          func([]byte, *otlpgen.Scan) error
	}{
		{"opentelemetry.proto.collector.trace.v1.TraceService", "opentelemetry/proto/collector/trace/v1/trace_service.proto", otlpgen.ScanTraces},
		{"opentelemetry.proto.collector.metrics.v1.MetricsService", "opentelemetry/proto/collector/metrics/v1/metrics_service.proto", otlpgen.ScanMetrics},
		{"opentelemetry.proto.collector.logs.v1.LogsService", "opentelemetry/proto/collector/logs/v1/logs_service.proto", otlpgen.ScanLogs},
	} {
		ex := &export{s: s, scan: e.scan}
		srv.RegisterService(ex.desc(e.service, e.file), ex)
	}
}

// arrive reports the items of an accepted request to rec.
func (s *Sink) arrive(sc *otlpgen.Scan, now time.Time, rec pipebench.Arrivals) {
	for _, m := range sc.Marks {
		rec.Arrive(m.Seq, time.Unix(0, m.Sent), now)
	}
	s.record(sc.Items, sc.Unmatched)
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
		buf := bodies.Get().(*[]byte)
		defer func() {
			if cap(*buf) <= 16<<20 {
				bodies.Put(buf)
			}
		}()
		body, err := readBody(src, r.ContentLength, (*buf)[:0])
		*buf = body
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		sc := scans.Get().(*otlpgen.Scan)
		defer scans.Put(sc)
		switch signal {
		case "traces":
			err = otlpgen.ScanTraces(body, sc)
		case "metrics":
			err = otlpgen.ScanMetrics(body, sc)
		default:
			err = otlpgen.ScanLogs(body, sc)
		}
		if err != nil {
			s.requests.WithLabelValues("400").Inc()
			http.Error(w, "not an OTLP protobuf request: "+err.Error(), http.StatusBadRequest)
			return
		}
		pipeline := r.Header.Get(pipebench.PipelineHeader)
		rec := s.recorder(pipeline)
		if code := s.admit(r.Context(), sc.Items, pipeline, rec); code != 0 {
			s.requests.WithLabelValues(strconv.Itoa(code)).Inc()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "injected fault", code)
			return
		}
		s.arrive(sc, time.Now(), rec)
		s.requests.WithLabelValues("200").Inc()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}
}

// maxBody is the largest request body read.
const maxBody = 64 << 20

var bodies = sync.Pool{New: func() any { return new([]byte) }}

// readBody reads up to maxBody bytes of src into buf, sized by the
// request's Content-Length when it is known.
func readBody(src io.Reader, length int64, buf []byte) ([]byte, error) {
	if length > 0 && length <= maxBody && int64(cap(buf)) < length+1 {
		buf = make([]byte, 0, length+1)
	}
	src = io.LimitReader(src, maxBody)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
