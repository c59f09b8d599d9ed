package otlpdriver

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
)

// traceServer is a real OTLP gRPC server whose answer the suite controls.
type traceServer struct {
	ptraceotlp.UnimplementedGRPCServer
	spans  atomic.Int64
	answer atomic.Int32
	slow   time.Duration
}

func (s *traceServer) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	switch drivertest.Answer(s.answer.Load()) {
	case drivertest.AnswerRefused:
		return ptraceotlp.NewExportResponse(), status.Error(codes.Unavailable, "busy")
	case drivertest.AnswerError:
		return ptraceotlp.NewExportResponse(), status.Error(codes.InvalidArgument, "bad")
	case drivertest.AnswerSlow:
		select {
		case <-time.After(s.slow):
		case <-ctx.Done():
			// The server's copy of the deadline can fire a moment before
			// the client's: answering OK then would race the timeout.
			return ptraceotlp.NewExportResponse(), status.FromContextError(ctx.Err()).Err()
		}
	}
	s.spans.Add(int64(req.Traces().SpanCount()))
	return ptraceotlp.NewExportResponse(), nil
}

func receiver(t *testing.T) drivertest.Receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ts := &traceServer{slow: 2 * time.Second}
	ptraceotlp.RegisterGRPCServer(srv, ts)
	go srv.Serve(ln)
	var once sync.Once
	stop := func() { once.Do(srv.Stop) }
	t.Cleanup(stop)
	return drivertest.Receiver{Target: ln.Addr().String(), Received: ts.spans.Load, Slow: ts.slow,
		Set: func(a drivertest.Answer) { ts.answer.Store(int32(a)) }, Close: stop}
}

func newDriver(t *testing.T, protocol, target string) pipebench.Driver {
	d, err := New(Config{Protocol: protocol, Compression: "none", Timeout: pipebench.Duration(time.Second), Connections: 2}, target)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// http1Server is a plain net/http server without h2c.
func http1Server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv
}

func TestConformanceGRPC(t *testing.T) {
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	drivertest.Run(t, drivertest.Harness{
		Generator: gen, Count: 10, Receiver: receiver, Connections: 2,
		New: func(t *testing.T, target string) pipebench.Driver { return newDriver(t, "grpc", target) },
		Mismatches: []drivertest.Mismatch{
			{Name: "HTTP/1.1 server for a gRPC client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
				return http1Server(t).Listener.Addr().String()
			}},
		},
	})
}

// httpReceiver is a real OTLP/HTTP traces server on loopback whose answer
// the suite controls.
func httpReceiver(t *testing.T) drivertest.Receiver {
	var spans atomic.Int64
	var answer atomic.Int32
	slow := 2 * time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch drivertest.Answer(answer.Load()) {
		case drivertest.AnswerRefused:
			w.WriteHeader(503)
			return
		case drivertest.AnswerError:
			w.WriteHeader(400)
			return
		case drivertest.AnswerSlow:
			select {
			case <-time.After(slow):
			case <-r.Context().Done():
			}
		}
		body, _ := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if r.URL.Path != "/v1/traces" || req.UnmarshalProto(body) != nil {
			w.WriteHeader(400)
			return
		}
		spans.Add(int64(req.Traces().SpanCount()))
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	var once sync.Once
	stop := func() { once.Do(srv.Close) }
	t.Cleanup(stop)
	return drivertest.Receiver{Target: srv.URL, Received: spans.Load, Slow: slow,
		Set: func(a drivertest.Answer) { answer.Store(int32(a)) }, Close: stop}
}

func TestConformanceHTTP(t *testing.T) {
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	drivertest.Run(t, drivertest.Harness{
		Generator: gen, Count: 10, Receiver: httpReceiver,
		Target: func(addr string) string { return "http://" + addr },
		New:    func(t *testing.T, target string) pipebench.Driver { return newDriver(t, "http", target) },
		Mismatches: []drivertest.Mismatch{
			{Name: "gRPC server for an HTTP client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
				return "http://" + receiver(t).Target
			}},
			{Name: "TLS server for a plain client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
				srv := quietTLSServer()
				t.Cleanup(srv.Close)
				return "http://" + srv.Listener.Addr().String()
			}},
		},
	})
}

// The endpoint follows the protocol: the runner's target for it first, then
// its target, then the OTLP default port; the configured endpoint wins.
func TestEndpointFollowsTheProtocol(t *testing.T) {
	targets := map[string]string{"grpc": "127.0.0.1:14317", "http": "http://127.0.0.1:14318"}
	for _, tc := range []struct {
		protocol, endpoint string
		env                pipebench.Env
		want               string
	}{
		{"grpc", "", pipebench.Env{}, "127.0.0.1:4317"},
		{"http", "", pipebench.Env{}, "http://127.0.0.1:4318"},
		{"grpc", "", pipebench.Env{Targets: targets, Target: "127.0.0.1:9"}, "127.0.0.1:14317"},
		{"http", "", pipebench.Env{Targets: targets, Target: "127.0.0.1:9"}, "http://127.0.0.1:14318"},
		{"http", "", pipebench.Env{Targets: map[string]string{"grpc": "127.0.0.1:14317"}, Target: "127.0.0.1:9"}, "http://127.0.0.1:9"},
		{"grpc", "", pipebench.Env{Target: "http://127.0.0.1:9"}, "127.0.0.1:9"},
		{"http", "127.0.0.1:5", pipebench.Env{Targets: targets}, "http://127.0.0.1:5"},
	} {
		cfg := DefaultConfig()
		cfg.Protocol, cfg.Endpoint = tc.protocol, tc.endpoint
		d, err := Factory().New(cfg, tc.env)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.(*Driver).Endpoint(); got != tc.want {
			t.Errorf("%s with endpoint %q and %+v: aims at %q, want %q", tc.protocol, tc.endpoint, tc.env, got, tc.want)
		}
		d.Shutdown(context.Background())
	}
}

// connections: 300 over gRPC opens 300 connections at Start that stay
// ready while requests go round-robin over them.
func TestGRPCConnectionsOpenAtStart(t *testing.T) {
	const conns = 300
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var open atomic.Int64
	srv := grpc.NewServer(grpc.StatsHandler(&connStats{open: &open}))
	ts := &traceServer{}
	ptraceotlp.RegisterGRPCServer(srv, ts)
	go srv.Serve(ln)
	defer srv.Stop()
	d, err := New(Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(10 * time.Second), Connections: conns}, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := d.OpenConnections(); n != conns {
		t.Errorf("OpenConnections after Start = %d, want %d", n, conns)
	}
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	for i := 0; i < conns; i++ {
		b := gen.Next(uint64(1+i*2), 2, time.Now())
		if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	for end := time.Now().Add(10 * time.Second); open.Load() != conns && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
	}
	if n := open.Load(); n != conns {
		t.Errorf("the server sees %d connections, want %d", n, conns)
	}
	if n := d.OpenConnections(); n != conns {
		t.Errorf("OpenConnections after the sends = %d, want %d", n, conns)
	}
}

// connStats counts the server's open connections.
type connStats struct{ open *atomic.Int64 }

func (s *connStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (s *connStats) HandleRPC(context.Context, stats.RPCStats)                         {}
func (s *connStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (s *connStats) HandleConn(_ context.Context, st stats.ConnStats) {
	switch st.(type) {
	case *stats.ConnBegin:
		s.open.Add(1)
	case *stats.ConnEnd:
		s.open.Add(-1)
	}
}

type counter struct {
	mu      sync.Mutex
	seqs    map[uint64]int
	faulted int
}

func (c *counter) Arrive(seq uint64, _, _ time.Time) { c.mu.Lock(); c.seqs[seq]++; c.mu.Unlock() }
func (c *counter) Faulted(n int)                     { c.mu.Lock(); c.faulted += n; c.mu.Unlock() }
func (c *counter) Unmatched(int)                     {}

// Straight into the real OTLP sink, every signal, gRPC and HTTP, gzip on
// and off: every item arrives with its sequence number; faults are
// refusals on the driver's side and counted by the sink.
func TestEverySignalAndProtocolReachesTheSink(t *testing.T) {
	ctx := context.Background()
	gens := map[string]pipebench.Generator{}
	for _, f := range []pipebench.Factory[pipebench.Generator]{otlpgen.TracesFactory(), otlpgen.MetricsFactory(), otlpgen.LogsFactory()} {
		gens[f.Name], _ = f.New(nil, pipebench.Env{})
	}
	for _, proto := range []string{"grpc", "http"} {
		for _, comp := range []string{"none", "gzip"} {
			rec := &counter{seqs: map[uint64]int{}}
			sink := otlpsink.New(otlpsink.Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}, 1)
			if err := sink.Start(ctx, rec); err != nil {
				t.Fatal(err)
			}
			target := sink.GRPCEndpoint()
			if proto == "http" {
				target = sink.HTTPEndpoint()
			}
			d, err := New(Config{Protocol: proto, Compression: comp, Timeout: pipebench.Duration(5 * time.Second), Connections: 2}, target)
			if err != nil {
				t.Fatal(err)
			}
			seq := uint64(1)
			for name, g := range gens {
				b := g.Next(seq, 50, time.Now())
				if o := d.Send(ctx, &b); o.Class != pipebench.ClassOK {
					t.Fatalf("%s/%s %s: %+v", proto, comp, name, o)
				}
				seq += 50
			}
			if len(rec.seqs) != 150 {
				t.Errorf("%s/%s: %d of 150 items arrived", proto, comp, len(rec.seqs))
			}
			sink.SetFaults(pipebench.FaultPolicy{ErrorRatio: 0.5, ErrorStatus: 503}, time.Now())
			refused := 0
			for i := 0; i < 10; i++ {
				b := gens["otlp-traces"].Next(seq, 10, time.Now())
				seq += 10
				if o := d.Send(ctx, &b); o.Class == pipebench.ClassRefused {
					refused++
				}
			}
			if refused != 5 || rec.faulted != 50 {
				t.Errorf("%s/%s: refused %d of 10, sink faulted %d items; want 5 and 50", proto, comp, refused, rec.faulted)
			}
			d.Shutdown(ctx)
			sink.Shutdown(ctx)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	c := &Config{Protocol: "udp", Compression: "zstd"}
	err := c.Validate()
	for _, want := range []string{"protocol:", "compression:", "timeout:", "connections:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %s", err, want)
		}
	}
	if _, err := New(Config{Protocol: "grpc", Compression: "none", Timeout: 1, Connections: 1}, "nohostport"); err == nil {
		t.Error("bad endpoint accepted")
	}
}

// BenchmarkTracesEndToEnd drives the traces generator and the gRPC driver
// into the OTLP sink on loopback (2 spans per trace, 40 attributes, 1,000
// spans per request, 8 senders), all in this process and unpinned, and
// reports delivered spans/s and spans per CPU second of the whole process
// (generator, driver and sink together).
func BenchmarkTracesEndToEnd(b *testing.B) {
	ctx := context.Background()
	rec := &benchArrivals{}
	sink := otlpsink.New(otlpsink.Config{GRPCListen: "127.0.0.1:0"}, 1)
	sink.Start(ctx, rec)
	defer sink.Shutdown(ctx)
	d, _ := New(Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(10 * time.Second), Connections: 2}, sink.Endpoint())
	defer d.Shutdown(ctx)
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	var seq atomic.Uint64
	var failed atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuSeconds()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s := seq.Add(1000) - 999
			bt := gen.Next(s, 1000, time.Now())
			if o := d.Send(ctx, &bt); o.Class != pipebench.ClassOK {
				failed.Add(1)
			}
			if rel, ok := gen.(pipebench.Releaser); ok {
				rel.Release(&bt)
			}
		}
	})
	wall, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
	b.StopTimer()
	if n := rec.n.Load(); failed.Load() > 0 || n != int64(seq.Load()) {
		b.Fatalf("%d sends failed; %d of %d spans arrived", failed.Load(), n, seq.Load())
	}
	b.ReportMetric(float64(rec.n.Load())/wall, "spans/s")
	if cpu > 0 {
		b.ReportMetric(float64(rec.n.Load())/cpu, "spans/cpu-s")
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

type benchArrivals struct{ n atomic.Int64 }

func (a *benchArrivals) Arrive(uint64, time.Time, time.Time) { a.n.Add(1) }
func (a *benchArrivals) Faulted(int)                         {}
func (a *benchArrivals) Unmatched(int)                       {}

// quietTLSServer is an HTTPS server on loopback that does not log the
// failed handshakes the tests cause.
func quietTLSServer() *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	return srv
}
