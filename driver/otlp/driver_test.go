package otlpdriver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
)

// traceServer is a real OTLP gRPC server whose answer the suite controls.
type traceServer struct {
	ptraceotlp.UnimplementedGRPCServer
	spans atomic.Int64
	gate  drivertest.Gate
}

func (s *traceServer) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	if err := s.gate.GRPC(ctx); err != nil {
		return ptraceotlp.NewExportResponse(), err
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
	ts := &traceServer{}
	ptraceotlp.RegisterGRPCServer(srv, ts)
	go srv.Serve(ln)
	var once sync.Once
	stop := func() { once.Do(srv.Stop) }
	t.Cleanup(stop)
	return drivertest.Receiver{Target: ln.Addr().String(), Addr: ln.Addr().String(), Received: ts.spans.Load, Slow: drivertest.SlowAnswer,
		Set: ts.gate.Set, Close: stop}
}

// harness is the suite's harness for protocol, the driver built by its
// factory with a 1 s timeout and 2 connections.
func harness(protocol string) drivertest.Harness {
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	return drivertest.Harness{
		Factory: Factory(), Generator: gen, Count: 10,
		Configure: func(cfg any) {
			c := cfg.(*Config)
			c.Protocol, c.Timeout, c.Connections = protocol, pipebench.Duration(time.Second), 2
		},
		Invalid: func(cfg any) string { cfg.(*Config).Compression = "zstd"; return "compression" },
	}
}

func TestConformanceGRPC(t *testing.T) {
	h := harness("grpc")
	h.Receiver, h.Connections = receiver, 2
	h.Mismatches = []drivertest.Mismatch{
		{Name: "HTTP/1.1 server for a gRPC client", Detail: "protocol mismatch", Start: drivertest.HTTP1Server},
	}
	drivertest.Run(t, h)
}

// httpReceiver is a real OTLP/HTTP traces server on loopback (drivertest's)
// that counts the spans of each export request.
func httpReceiver(t *testing.T) drivertest.Receiver {
	return drivertest.HTTPReceiver(t, "", func(r *http.Request, body []byte) (int64, error) {
		req := ptraceotlp.NewExportRequest()
		if r.URL.Path != "/v1/traces" {
			return 0, fmt.Errorf("path %s is not /v1/traces", r.URL.Path)
		}
		if err := req.UnmarshalProto(body); err != nil {
			return 0, err
		}
		return int64(req.Traces().SpanCount()), nil
	})
}

func TestConformanceHTTP(t *testing.T) {
	h := harness("http")
	h.Receiver = httpReceiver
	h.Target = func(addr string) string { return "http://" + addr }
	h.Mismatches = []drivertest.Mismatch{
		{Name: "gRPC server for an HTTP client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
			return "http://" + receiver(t).Target
		}},
		{Name: "TLS server for a plain client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
			return "http://" + drivertest.TLSServer(t)
		}},
	}
	drivertest.Run(t, h)
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
	if !testutil.Poll(10*time.Second, func() bool { return open.Load() == conns }) {
		t.Errorf("the server sees %d connections, want %d", open.Load(), conns)
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
