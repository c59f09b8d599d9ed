package otlpdriver

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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

func TestConformanceGRPC(t *testing.T) {
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	drivertest.Run(t, drivertest.Harness{
		Generator: gen, Count: 10, Receiver: receiver,
		New: func(t *testing.T, target string) pipebench.Driver {
			d, err := New(Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(300 * time.Millisecond), Connections: 2}, target)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	})
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
	if _, err := New(Config{Protocol: "grpc", Compression: "none", Timeout: 1, Connections: 1}, ""); err == nil {
		t.Error("no endpoint accepted")
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
