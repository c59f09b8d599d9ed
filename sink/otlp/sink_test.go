package otlpsink

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/pipebench/pipebench"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/sut/otelcol/collector/full"
)

type arrivals struct {
	mu        sync.Mutex
	seqs      map[uint64]int
	sent      map[int64]int
	faulted   int
	unmatched int
}

func newArrivals() *arrivals {
	return &arrivals{seqs: map[uint64]int{}, sent: map[int64]int{}}
}

func (a *arrivals) Arrive(seq uint64, sent, _ time.Time) {
	a.mu.Lock()
	a.seqs[seq]++
	a.sent[sent.UnixNano()]++
	a.mu.Unlock()
}
func (a *arrivals) Faulted(n int)   { a.mu.Lock(); a.faulted += n; a.mu.Unlock() }
func (a *arrivals) Unmatched(n int) { a.mu.Lock(); a.unmatched += n; a.mu.Unlock() }

// Over gRPC and HTTP, every span of an encoded request is reported once with
// its send time; a request that is not OTLP is refused without reporting
// anything; an injected fault reports the request's spans as faulted.
func TestSinkReportsEverySpanOnce(t *testing.T) {
	ctx := context.Background()
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	at := time.Unix(1_760_000_000, 42)
	for _, proto := range []string{"grpc", "http"} {
		rec := newArrivals()
		s := New(Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}, 1)
		if err := s.Start(ctx, rec); err != nil {
			t.Fatal(err)
		}
		target := s.GRPCEndpoint()
		if proto == "http" {
			target = s.HTTPEndpoint()
		}
		d, err := otlpdriver.New(otlpdriver.Config{Protocol: proto, Compression: "none", Timeout: pipebench.Duration(5 * time.Second), Connections: 1}, target)
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); seq <= 3000; seq += 1000 {
			b := gen.Next(seq, 1000, at)
			if o := d.Send(ctx, &b); o.Class != pipebench.ClassOK {
				t.Fatalf("%s: %+v", proto, o)
			}
		}
		if len(rec.seqs) != 3000 || rec.sent[at.UnixNano()] != 3000 || rec.unmatched != 0 {
			t.Errorf("%s: %d distinct seqs, %d with the send time, %d unmatched", proto, len(rec.seqs), rec.sent[at.UnixNano()], rec.unmatched)
		}
		for seq, n := range rec.seqs {
			if n != 1 || seq < 1 || seq > 3000 {
				t.Fatalf("%s: seq %d arrived %d times", proto, seq, n)
			}
		}

		bad := &otlpgen.Encoded{Signal: otlpgen.SignalTraces, Body: []byte{0x0a, 0x05, 0x12}}
		o := d.Send(ctx, &pipebench.Batch{Count: 1, Body: bad.Body, Data: bad})
		wantCode := http.StatusBadRequest
		if proto == "grpc" {
			wantCode = int(codes.Internal)
		}
		if o.Class != pipebench.ClassError || o.Code != wantCode {
			t.Errorf("%s: a malformed request got %+v", proto, o)
		}

		s.SetFaults(pipebench.FaultPolicy{ErrorRatio: 1, ErrorStatus: 429}, time.Now())
		b := gen.Next(5000, 10, at)
		if o := d.Send(ctx, &b); o.Class != pipebench.ClassRefused {
			t.Errorf("%s: an injected 429 got %+v", proto, o)
		}
		if rec.faulted != 10 || len(rec.seqs) != 3000 {
			t.Errorf("%s: %d faulted, %d arrived", proto, rec.faulted, len(rec.seqs))
		}
		d.Shutdown(ctx)
		s.Shutdown(ctx)
	}
}

const childEnv = "PIPEBENCH_OTLP_SINK_CHILD"

// TestMain lets the test binary be the sink's child (serveChild) and the
// collector child (collector_test.go), as pipebench is.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(serveChild())
	}
	full.MaybeRunChild()
	os.Exit(m.Run())
}

// countArrivals only counts, as cheaply as an Arrivals can.
type countArrivals struct{ n atomic.Int64 }

func (a *countArrivals) Arrive(uint64, time.Time, time.Time) { a.n.Add(1) }
func (a *countArrivals) Faulted(int)                         {}
func (a *countArrivals) Unmatched(int)                       {}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// serveChild runs the sink alone in this process: it prints its endpoint,
// then answers "start" and "stop" on stdin; stop prints the spans received
// and the CPU seconds this process used since start.
func serveChild() int {
	rec := &countArrivals{}
	s := New(Config{GRPCListen: "127.0.0.1:0"}, 1)
	if err := s.Start(context.Background(), rec); err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println("ENDPOINT", s.Endpoint())
	var cpu0 float64
	var n0 int64
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "start":
			cpu0, n0 = cpuSeconds(), rec.n.Load()
			fmt.Println("STARTED")
		case "stop":
			fmt.Println("RESULT", rec.n.Load()-n0, cpuSeconds()-cpu0)
		}
	}
	s.Shutdown(context.Background())
	return 0
}

// sinkChild is the sink running in a child process.
type sinkChild struct {
	cmd      *exec.Cmd
	send     func(line string)
	out      *bufio.Scanner
	endpoint string
}

func startChild(b *testing.B, gomaxprocs int) *sinkChild {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GOMAXPROCS="+strconv.Itoa(gomaxprocs))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &sinkChild{cmd: cmd, out: bufio.NewScanner(stdout)}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	c.endpoint = strings.TrimPrefix(c.line(b, "ENDPOINT "), "ENDPOINT ")
	c.send = func(s string) { fmt.Fprintln(stdin, s) }
	return c
}

func (c *sinkChild) line(b *testing.B, prefix string) string {
	for c.out.Scan() {
		if strings.HasPrefix(c.out.Text(), prefix) {
			return c.out.Text()
		}
	}
	b.Fatalf("the sink child ended before %q", prefix)
	return ""
}

// BenchmarkSinkTraces pushes pre-encoded trace requests (1,000 spans of 40
// attributes each, 2 spans per trace) over gRPC into the OTLP sink running
// alone in a child process limited to one core (GOMAXPROCS=1), and reports
// the spans/s it received and the spans it handles per second of its own
// CPU (user+system, measured in the child).
func BenchmarkSinkTraces(b *testing.B) {
	c := startChild(b, 1)
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	bodies := make([][]byte, 16)
	for i := range bodies {
		bt := gen.Next(uint64(i*1000+1), 1000, time.Now())
		bodies[i] = bytes.Clone(bt.Body)
	}
	d, err := otlpdriver.New(otlpdriver.Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(10 * time.Second), Connections: 2}, c.endpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	// Warm the connections up before measuring.
	for _, body := range bodies {
		e := &otlpgen.Encoded{Signal: otlpgen.SignalTraces, Body: body}
		d.Send(context.Background(), &pipebench.Batch{Count: 1000, Body: body, Data: e})
	}
	c.send("start")
	c.line(b, "STARTED")
	var next atomic.Uint64
	var failed atomic.Int64
	b.SetParallelism(2)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := bodies[next.Add(1)%uint64(len(bodies))]
			e := &otlpgen.Encoded{Signal: otlpgen.SignalTraces, Body: body}
			if o := d.Send(context.Background(), &pipebench.Batch{Count: 1000, Body: body, Data: e}); o.Class != pipebench.ClassOK {
				failed.Add(1)
			}
		}
	})
	wall := time.Since(start).Seconds()
	b.StopTimer()
	c.send("stop")
	var spans int64
	var cpu float64
	fmt.Sscanf(c.line(b, "RESULT "), "RESULT %d %g", &spans, &cpu)
	if failed.Load() > 0 || spans != int64(b.N)*1000 {
		b.Fatalf("%d sends failed; the sink got %d spans of %d", failed.Load(), spans, b.N*1000)
	}
	b.ReportMetric(float64(spans)/wall, "spans/s")
	if cpu > 0 {
		b.ReportMetric(float64(spans)/cpu, "spans/sink-cpu-s")
		b.ReportMetric(cpu/wall, "sink-cores")
	}
}

// Endpoints names each listener by its protocol, and only those that are on.
func TestEndpointsByProtocol(t *testing.T) {
	ctx := context.Background()
	s := New(Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}, 1)
	if err := s.Start(ctx, newArrivals()); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	var me pipebench.MultiEndpoint = s
	e := me.Endpoints()
	if len(e) != 2 || e["grpc"] != s.GRPCEndpoint() || e["http"] != s.HTTPEndpoint() || !strings.HasPrefix(e["http"], "http://127.0.0.1:") {
		t.Errorf("endpoints %v", e)
	}
	h := New(Config{HTTPListen: "127.0.0.1:0"}, 1)
	if err := h.Start(ctx, newArrivals()); err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(ctx)
	if e := h.Endpoints(); len(e) != 1 || e["http"] == "" {
		t.Errorf("HTTP-only sink: endpoints %v", e)
	}
}
