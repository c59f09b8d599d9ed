package natsdriver

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
)

// startServer runs a real nats-server with JetStream in the test process,
// on loopback, storing in a temporary directory.
func startServer(t testing.TB) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, HTTPHost: "127.0.0.1", HTTPPort: -1, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true, MaxConn: 1 << 20}
	return natstest.Start(t, opts)
}

func jsClient(t testing.TB, url string) (*nats.Conn, js.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	j, err := js.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, j
}

func createStream(t testing.TB, j js.JetStream, cfg js.StreamConfig) js.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := j.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func streamMsgs(t testing.TB, j js.JetStream, name string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := j.Stream(ctx, name)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int64(info.State.Msgs)
}

func newGen(t testing.TB) pipebench.Generator {
	g, err := payload.EventFactory().New(&payload.EventConfig{Size: 128, SeqIn: "header", ContentType: "application/json"}, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newDriver(t testing.TB, cfg Config, url string) *Driver {
	t.Helper()
	d, err := New(cfg, url)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, d.Start, d.Shutdown)
	return d
}

// receiver is a real JetStream stream S on pb.>; each answer the suite
// asks for is made real: refused is the stream full with discard new,
// error is no stream at all (no responders), slow is a subscriber that
// answers publishes after 2 s in place of the stream.
func receiver(t *testing.T) drivertest.Receiver {
	s := startServer(t)
	nc, j := jsClient(t, s.ClientURL())
	base := js.StreamConfig{Name: "S", Subjects: []string{"pb.>"}, Storage: js.FileStorage}
	createStream(t, j, base)
	var mu sync.Mutex
	var slowSub *nats.Subscription
	slow := drivertest.SlowAnswer
	var once sync.Once
	stop := func() { once.Do(func() { s.Shutdown(); s.WaitForShutdown() }) }
	ctx := context.Background()
	return drivertest.Receiver{
		Target:   s.ClientURL(),
		Addr:     s.Addr().String(),
		Slow:     slow,
		Received: func() int64 { return streamMsgs(t, j, "S") },
		Close:    stop,
		Set: func(a drivertest.Answer) {
			mu.Lock()
			defer mu.Unlock()
			if slowSub != nil {
				slowSub.Unsubscribe()
				slowSub = nil
			}
			switch a {
			case drivertest.AnswerOK:
				createStream(t, j, base)
			case drivertest.AnswerRefused:
				full := base
				full.MaxMsgs, full.Discard = 1, js.DiscardNew
				createStream(t, j, full)
				if _, err := j.Publish(ctx, "pb.fill", []byte("x")); err != nil {
					t.Fatalf("fill the stream: %v", err)
				}
			case drivertest.AnswerError:
				j.DeleteStream(ctx, "S")
			case drivertest.AnswerSlow:
				j.DeleteStream(ctx, "S")
				sub, err := nc.Subscribe("pb.>", func(m *nats.Msg) {
					go func() { time.Sleep(slow); m.Respond([]byte(`{"stream":"S","seq":1}`)) }()
				})
				if err != nil {
					t.Fatal(err)
				}
				nc.Flush()
				slowSub = sub
			}
		},
	}
}

// TestConformance runs the suite in each mode: JetStream publishes are
// answered by their acks; a core publish has no answer (NoAnswer), so the
// stream's count is waited for.
func TestConformance(t *testing.T) {
	for _, mode := range []string{ModeJS, ModeJSAsync, ModeCore} {
		t.Run(mode, func(t *testing.T) {
			drivertest.Run(t, drivertest.Harness{
				Factory:   Factory(),
				Generator: newGen(t), Count: 1, Receiver: receiver, ServerSpeaksFirst: true, Connections: 4,
				NoAnswer: mode == ModeCore,
				Configure: func(cfg any) {
					c := cfg.(*Config)
					c.Mode, c.Connections, c.Subject, c.Timeout = mode, 4, "pb.{conn}", pipebench.Duration(300*time.Millisecond)
				},
				Invalid: func(cfg any) string { cfg.(*Config).Subject = "pb.*"; return "subject" },
			})
		})
	}
}

func send(d *Driver, g pipebench.Generator, seq uint64, count int) pipebench.Outcome {
	b := g.Next(seq, count, time.Now())
	return d.Send(context.Background(), &b)
}

// A stream with a small max_bytes and discard new fills: publishes then are
// refused by the server (reached), with the reason.
func TestStreamFullIsRefused(t *testing.T) {
	s := startServer(t)
	_, j := jsClient(t, s.ClientURL())
	createStream(t, j, js.StreamConfig{Name: "S", Subjects: []string{"events.>"}, MaxBytes: 16 << 10, Discard: js.DiscardNew})
	for _, mode := range []string{ModeJS, ModeJSAsync} {
		cfg := *DefaultConfig()
		cfg.Mode = mode
		d := newDriver(t, cfg, s.ClientURL())
		g := newGen(t)
		var ok, refused int
		var last pipebench.Outcome
		for i := 0; i < 1000 && refused < 5; i++ {
			o := send(d, g, uint64(i+1), 1)
			switch o.Class {
			case pipebench.ClassOK:
				ok++
			case pipebench.ClassRefused:
				refused++
				last = o
			default:
				t.Fatalf("%s: send %d: unexpected %+v", mode, i, o)
			}
		}
		if refused == 0 {
			t.Fatalf("%s: the 16 KiB stream never refused a publish (%d accepted)", mode, ok)
		}
		if last.Detail != "stream full" || last.Unreached || last.Code != errStreamStoreFailed {
			t.Errorf("%s: refusal classified %+v", mode, last)
		}
		t.Logf("%s: %d accepted before the stream was full; refusal: %s", mode, ok, last.Message)
	}
}

// Publishing to a subject no stream captures is "no responders", an error.
func TestNoStreamIsError(t *testing.T) {
	s := startServer(t)
	cfg := *DefaultConfig()
	for _, mode := range []string{ModeJS, ModeJSAsync} {
		cfg.Mode = mode
		d := newDriver(t, cfg, s.ClientURL())
		o := send(d, newGen(t), 1, 1)
		if o.Class != pipebench.ClassError || o.Detail != "no responders" || o.Unreached {
			t.Errorf("%s: publish with no stream classified %+v", mode, o)
		}
	}
}

// A server that refuses connections: sends are refused and unreached, and
// Start does not fail (the connections keep retrying).
func TestConnectionRefusedIsUnreached(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, mode := range []string{ModeCore, ModeJSAsync} {
		cfg := *DefaultConfig()
		cfg.Mode, cfg.Connections = mode, 3
		d := newDriver(t, cfg, "nats://"+addr)
		o := send(d, newGen(t), 1, 1)
		if o.Class != pipebench.ClassRefused || !o.Unreached || o.Detail != "connection refused" {
			t.Errorf("%s: send to a closed port classified %+v", mode, o)
		}
		if n := d.OpenConnections(); n != 0 {
			t.Errorf("%s: %d connections reported open to a closed port", mode, n)
		}
	}
}

func connz(t testing.TB, s *server.Server) int {
	t.Helper()
	resp, err := http.Get("http://" + s.MonitorAddr().String() + "/connz?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		N int `json:"total"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c.N
}

// N connections are really open (the server's /connz counts them), every
// one of them publishes, and the stream holds exactly what was accepted.
func TestConnectionsHeldOpen(t *testing.T) { heldOpen(t, 200, 16) }

// A batch of N JSON events becomes N messages, each with its own sequence
// number; core publishes reach the stream too.
func TestBatchSplitAndCore(t *testing.T) {
	s := startServer(t)
	nc, j := jsClient(t, s.ClientURL())
	createStream(t, j, js.StreamConfig{Name: "S", Subjects: []string{"events.>"}})
	seen := map[string]int{}
	var mu sync.Mutex
	sub, err := nc.Subscribe("events.>", func(m *nats.Msg) {
		mu.Lock()
		seen[m.Header.Get(payload.HeaderSeq)]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	g := newGen(t)
	for _, mode := range []string{ModeJSAsync, ModeCore} {
		cfg := *DefaultConfig()
		cfg.Mode, cfg.Connections = mode, 2
		d := newDriver(t, cfg, s.ClientURL())
		base := uint64(1)
		if mode == ModeCore {
			base = 101
		}
		for i := 0; i < 10; i++ {
			if o := send(d, g, base+uint64(i*10), 10); o.Class != pipebench.ClassOK {
				t.Fatalf("%s: %+v", mode, o)
			}
		}
		d.Shutdown(context.Background())
	}
	testutil.Poll(10*time.Second, func() bool { return streamMsgs(t, j, "S") >= 200 })
	if got := streamMsgs(t, j, "S"); got != 200 {
		t.Fatalf("stream holds %d messages, want 200", got)
	}
	testutil.Poll(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 200 })
	mu.Lock()
	defer mu.Unlock()
	for seq := 1; seq <= 200; seq++ {
		if seen[strconv.Itoa(seq)] != 1 {
			t.Fatalf("sequence %d seen %d times", seq, seen[strconv.Itoa(seq)])
		}
	}
}

func TestConfigErrors(t *testing.T) {
	c := Config{URL: "http://x", Mode: "fast", Connections: 0, Subject: "a.{nope}", Window: 0, Timeout: 0, ConnectConcurrency: 0}
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"url:", "mode:", "connections:", "subject:", "window:", "timeout:", "connect_concurrency:"} {
		if !contains(err.Error(), key) {
			t.Errorf("no %s line in:\n%v", key, err)
		}
	}
	if _, err := New(*DefaultConfig(), ""); err == nil {
		t.Error("a driver with no url was built")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// benchServer is a server in the test process; PIPEBENCH_NATS_URL aims the
// benchmarks at another (a nats-server started by hand, to compare with
// `nats bench` on the same server).
func benchServer(b *testing.B) string {
	if u := os.Getenv("PIPEBENCH_NATS_URL"); u != "" {
		return u
	}
	return startServer(b).ClientURL()
}

// BenchmarkCorePublish publishes 128-byte events (with their sequence
// headers) as fast as one goroutine can, and reports msgs/s.
func BenchmarkCorePublish(b *testing.B) {
	for _, seqIn := range []string{"header", "field"} {
		b.Run("seq_in="+seqIn, func(b *testing.B) { benchCore(b, seqIn) })
	}
}

// coreBench is a core-mode driver on a server of the benchmark's own, and
// a generator of 128-byte events with their sequence numbers in seqIn.
func coreBench(b *testing.B, seqIn string) (*Driver, pipebench.Generator) {
	url := benchServer(b)
	cfg := *DefaultConfig()
	cfg.Mode = ModeCore
	d := newDriver(b, cfg, url)
	g, err := payload.EventFactory().New(&payload.EventConfig{Size: 128, SeqIn: seqIn, ContentType: "application/json"}, pipebench.Env{})
	if err != nil {
		b.Fatal(err)
	}
	return d, g
}

func benchCore(b *testing.B, seqIn string) {
	d, g := coreBench(b, seqIn)
	batch := g.Next(1, 1, time.Now())
	b.SetBytes(int64(len(batch.Body)))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if o := d.Send(context.Background(), &batch); o.Class != pipebench.ClassOK {
			b.Fatalf("%+v", o)
		}
	}
	<-d.conns[0].wc.Flush()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkJetStreamAsyncPublish publishes 128-byte events to a file
// stream from many goroutines, each Send waiting for its ack, with a window
// of outstanding acks per connection, and reports acked msgs/s.
//
// With batch=100 every Send carries 100 events, published as 100 messages
// before waiting for their acks (nats bench's way); msgs/s counts messages.
func BenchmarkJetStreamAsyncPublish(b *testing.B) {
	for _, tc := range []struct{ conns, batch, senders int }{{1, 1, 512}, {4, 1, 512}, {1, 100, 8}} {
		conns, count := tc.conns, tc.batch
		b.Run("conns="+strconv.Itoa(conns)+"/batch="+strconv.Itoa(count), func(b *testing.B) {
			url := benchServer(b)
			_, j := jsClient(b, url)
			name := "BENCH" + strconv.Itoa(conns)
			createStream(b, j, js.StreamConfig{Name: name, Subjects: []string{name + ".>"}, Storage: js.FileStorage})
			defer j.DeleteStream(context.Background(), name)
			cfg := *DefaultConfig()
			cfg.Connections, cfg.Window, cfg.Subject = conns, 1024, name+".{conn}"
			d := newDriver(b, cfg, url)
			g := newGen(b)
			b.SetParallelism(max(1, tc.senders/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				batch := g.Next(1, count, time.Now())
				for pb.Next() {
					if o := d.Send(context.Background(), &batch); o.Class != pipebench.ClassOK {
						b.Errorf("%+v", o)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*count)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkRawJetStreamAsyncPublish is the yardstick: nats.go's async
// publish used directly the way `nats bench js pub --async` uses it (one
// goroutine, a window of 256 outstanding, no per-message outcome), with the
// same 128-byte bodies, to compare the driver with on the same server.
func BenchmarkRawJetStreamAsyncPublish(b *testing.B) {
	url := benchServer(b)
	nc, _ := jsClient(b, url)
	j, err := js.New(nc, js.WithPublishAsyncMaxPending(256))
	if err != nil {
		b.Fatal(err)
	}
	createStream(b, j, js.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Storage: js.FileStorage})
	defer j.DeleteStream(context.Background(), "RAW")
	body := newGen(b).Next(1, 1, time.Now()).Body
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := j.PublishAsync("raw.x", body); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-j.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		b.Fatal("acks did not arrive")
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkPipelineCore is what `pipebench run` does per batch in a blast
// of core publishes: the event generator builds a batch of 1,000 events
// (128 bytes each), the driver splits it into 1,000 messages and publishes
// them, the generator gets its buffer back. It reports msgs/s; profile it
// with -cpuprofile to see where a message's cost goes.
func BenchmarkPipelineCore(b *testing.B) {
	for _, seqIn := range []string{"header", "field"} {
		b.Run("seq_in="+seqIn, func(b *testing.B) {
			d, g := coreBench(b, seqIn)
			rel := g.(pipebench.Releaser)
			const count = 1000
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				batch := g.Next(uint64(i*count), count, time.Now())
				if o := d.Send(context.Background(), &batch); o.Class != pipebench.ClassOK {
					b.Fatalf("%+v", o)
				}
				rel.Release(&batch)
			}
			<-d.conns[0].wc.Flush()
			b.ReportMetric(float64(b.N*count)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
