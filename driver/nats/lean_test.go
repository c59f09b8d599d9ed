package natsdriver

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
)

// The tests of the driver's own NATS client (package wire), each against
// a real nats-server on loopback.

// serverWith runs a nats-server with JetStream in the test process,
// configured by set; it is shut down when the test ends (stopping it
// earlier is fine).
func serverWith(t testing.TB, dir string, set func(*server.Options)) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, HTTPHost: "127.0.0.1", HTTPPort: -1, JetStream: true,
		StoreDir: dir, NoSigs: true, NoLog: true, MaxConn: 1 << 20}
	if set != nil {
		set(opts)
	}
	return natstest.Start(t, opts)
}

func genSized(t testing.TB, size int) pipebench.Generator {
	g, err := payload.EventFactory().New(&payload.EventConfig{Size: size, SeqIn: "header", ContentType: "application/json"}, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A server that goes away and comes back on the same port: sends fail
// while it is gone (at last refused and unreached), every connection
// reconnects by itself once it is back, and publishes are acked again; the
// stream (kept on disk across the restart) holds exactly what was acked.
func TestReconnectAfterServerRestart(t *testing.T) {
	dir := t.TempDir()
	s := serverWith(t, dir, nil)
	port := s.Addr().(*net.TCPAddr).Port
	url := s.ClientURL()
	_, j := jsClient(t, url)
	createStream(t, j, js.StreamConfig{Name: "S", Subjects: []string{"events.>"}, Storage: js.FileStorage})
	cfg := *DefaultConfig()
	cfg.Connections = 4
	d := newDriver(t, cfg, url)
	g := newGen(t)
	var seq uint64
	acked := 0
	for range 20 {
		seq++
		if o := send(d, g, seq, 1); o.Class != pipebench.ClassOK {
			t.Fatalf("before the restart: %+v", o)
		}
		acked++
	}
	s.Shutdown()
	s.WaitForShutdown()
	var o pipebench.Outcome
	testutil.Eventually(t, 10*time.Second, func() bool {
		seq++
		o = send(d, g, seq, 1)
		if o.Class == pipebench.ClassOK {
			t.Fatalf("a send to a stopped server was acked")
		}
		return o.Class == pipebench.ClassRefused && o.Unreached
	}, "sends to the stopped server are refused and unreached (last %+v)", o)
	testutil.Eventually(t, 10*time.Second, func() bool { return d.OpenConnections() == 0 }, "no connection open to the stopped server (%d)", d.OpenConnections())

	s2 := serverWith(t, dir, func(o *server.Options) { o.Port = port })
	testutil.Eventually(t, 15*time.Second, func() bool { return d.OpenConnections() == 4 }, "all 4 connections back (%d)", d.OpenConnections())
	if n := connz(t, s2); n != 4 {
		t.Errorf("/connz of the restarted server shows %d connections, want 4", n)
	}
	// JetStream may need a moment to recover the stream from disk.
	testutil.Eventually(t, 15*time.Second, func() bool {
		seq++
		return send(d, g, seq, 1).Class == pipebench.ClassOK
	}, "a publish acked after the restart")
	acked++
	for range 40 {
		seq++
		if o := send(d, g, seq, 1); o.Class != pipebench.ClassOK {
			t.Fatalf("after the restart: %+v", o)
		}
		acked++
	}
	_, j2 := jsClient(t, s2.ClientURL())
	if got := streamMsgs(t, j2, "S"); got != int64(acked) {
		t.Errorf("the stream holds %d messages, %d were acked", got, acked)
	}
}

// A server that pings every 50 ms and drops a client after two unanswered
// pings: the driver's idle connections answer and stay the same
// connections over many intervals.
func TestServerPingsAnswered(t *testing.T) {
	s := serverWith(t, t.TempDir(), func(o *server.Options) { o.PingInterval, o.MaxPingsOut = 50*time.Millisecond, 2 })
	cfg := *DefaultConfig()
	cfg.Mode, cfg.Connections = ModeCore, 3
	d := newDriver(t, cfg, s.ClientURL())
	before, err := s.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool {
		for _, c := range d.conns {
			if c.wc.Pings() < 10 {
				return false
			}
		}
		return true
	}, "every connection answered 10 pings")
	after, err := s.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if after.TotalConnections != before.TotalConnections || d.OpenConnections() != 3 || s.NumClients() != 3 {
		t.Errorf("connections were dropped and made again: %d then %d made, %d open, the server has %d",
			before.TotalConnections, after.TotalConnections, d.OpenConnections(), s.NumClients())
	}
	if o := send(d, newGen(t), 1, 1); o.Class != pipebench.ClassOK {
		t.Errorf("publish after the pings: %+v", o)
	}
}

// Credentials in the URL's user info: user and password, or a token
// alone. Wrong credentials fail Start with the server's reason.
func TestAuthFromURL(t *testing.T) {
	for _, tc := range []struct {
		name      string
		set       func(*server.Options)
		good, bad string // user info
	}{
		{"user and password", func(o *server.Options) { o.Username, o.Password = "pb", "s3cret" }, "pb:s3cret", "pb:wrong"},
		{"token", func(o *server.Options) { o.Authorization = "t0ken" }, "t0ken", "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serverWith(t, t.TempDir(), tc.set)
			addr := s.Addr().String()
			_, j := jsClient(t, "nats://"+tc.good+"@"+addr)
			createStream(t, j, js.StreamConfig{Name: "S", Subjects: []string{"events.>"}})
			cfg := *DefaultConfig()
			cfg.Connections = 2
			d := newDriver(t, cfg, "nats://"+tc.good+"@"+addr)
			g := newGen(t)
			for i := range 10 {
				if o := send(d, g, uint64(i+1), 1); o.Class != pipebench.ClassOK {
					t.Fatalf("send %d: %+v", i, o)
				}
			}
			if got := streamMsgs(t, j, "S"); got != 10 {
				t.Errorf("the stream holds %d, want 10", got)
			}
			bad, err := New(cfg, "nats://"+tc.bad+"@"+addr)
			if err != nil {
				t.Fatal(err)
			}
			err = bad.Start(context.Background())
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Errorf("Start with wrong credentials: %v, want the server's authorization violation", err)
			}
			// The scenario's credentials: a usage error (exit 2), with
			// what to check, and the secret not repeated.
			if code := pipebench.ExitCode(err); code != pipebench.ExitUsage || strings.Contains(err.Error(), tc.bad) {
				t.Errorf("Start with wrong credentials: exit %d, %v; want %d and no credentials in the message", code, err, pipebench.ExitUsage)
			}
			bad.Shutdown(context.Background())
		})
	}
}

// A message above the server's max_payload is not sent: the send is
// "message too large", reached, and the connection stays up for the next.
func TestMaxPayloadRefused(t *testing.T) {
	s := serverWith(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 1024 })
	_, j := jsClient(t, s.ClientURL())
	createStream(t, j, js.StreamConfig{Name: "S", Subjects: []string{"events.>"}})
	for _, mode := range []string{ModeCore, ModeJS, ModeJSAsync} {
		cfg := *DefaultConfig()
		cfg.Mode = mode
		d := newDriver(t, cfg, s.ClientURL())
		o := send(d, genSized(t, 2000), 1, 1)
		if o.Class != pipebench.ClassError || o.Detail != "message too large" || o.Unreached || o.Message == "" {
			t.Errorf("%s: a 2 KB message to a 1 KiB max_payload classified %+v", mode, o)
		}
		if o := send(d, genSized(t, 200), 2, 1); o.Class != pipebench.ClassOK {
			t.Errorf("%s: a small message after the large one: %+v", mode, o)
		}
		if d.OpenConnections() != 1 {
			t.Errorf("%s: the connection was lost", mode)
		}
	}
}

// Many publishes outstanding at once on one connection (batches of 2,000
// split into messages, a window of 1,000, four senders): every one is
// acked, exactly once, and the stream holds exactly that many; the same
// through sync publishes.
func TestManyOutstandingAcks(t *testing.T) {
	s := startServer(t)
	_, j := jsClient(t, s.ClientURL())
	createStream(t, j, js.StreamConfig{Name: "S", Subjects: []string{"events.>"}, Storage: js.FileStorage})
	total := int64(0)
	for _, tc := range []struct {
		mode                   string
		senders, batches, size int
	}{{ModeJSAsync, 4, 5, 2000}, {ModeJS, 2, 3, 200}} {
		cfg := *DefaultConfig()
		cfg.Mode, cfg.Connections, cfg.Window, cfg.Timeout = tc.mode, 1, 1000, pipebench.Duration(20*time.Second)
		d := newDriver(t, cfg, s.ClientURL())
		g := newGen(t)
		var next atomic.Uint64
		next.Store(uint64(total))
		var acked atomic.Int64
		var wg sync.WaitGroup
		for range tc.senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range tc.batches {
					seq := next.Add(uint64(tc.size)) - uint64(tc.size) + 1
					if o := send(d, g, seq, tc.size); o.Class != pipebench.ClassOK {
						t.Errorf("%s: %+v", tc.mode, o)
						return
					}
					acked.Add(int64(tc.size))
				}
			}()
		}
		wg.Wait()
		want := int64(tc.senders * tc.batches * tc.size)
		if acked.Load() != want {
			t.Fatalf("%s: %d acked, want %d", tc.mode, acked.Load(), want)
		}
		total += want
		if got := streamMsgs(t, j, "S"); got != total {
			t.Errorf("%s: the stream holds %d, want %d", tc.mode, got, total)
		}
		c := d.conns[0]
		c.amu.Lock()
		pending := len(c.pending)
		c.amu.Unlock()
		if pending != 0 || len(c.room) != 0 {
			t.Errorf("%s: %d acks still pending, %d window slots taken", tc.mode, pending, len(c.room))
		}
	}
}

// 2,000 connections are really open (the server's /connz counts them),
// each publishes and is acked, and Shutdown closes them all.
func TestTwoThousandConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 connections")
	}
	heldOpen(t, 2000, 64)
}

// heldOpen opens conns connections (connect at most concurrency at once):
// they are really open (the server's /connz counts them), each publishes
// once and is acked, the stream holds exactly those, one subject per
// connection, and Shutdown closes them all.
func heldOpen(t *testing.T, conns, concurrency int) {
	s := startServer(t)
	_, j := jsClient(t, s.ClientURL())
	createStream(t, j, js.StreamConfig{Name: "S", Subjects: []string{"events.>"}})
	cfg := *DefaultConfig()
	cfg.Connections, cfg.ConnectConcurrency = conns, concurrency
	d := newDriver(t, cfg, s.ClientURL())
	if n := d.OpenConnections(); n != conns {
		t.Fatalf("driver reports %d open, want %d", n, conns)
	}
	if n := connz(t, s); n != conns+1 {
		t.Fatalf("/connz shows %d connections, want %d (the driver's and the test's)", n, conns+1)
	}
	g := newGen(t)
	var next atomic.Uint64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seq := next.Add(1)
				if seq > uint64(conns) {
					return
				}
				if o := send(d, g, seq, 1); o.Class != pipebench.ClassOK {
					t.Errorf("send %d: %+v", seq, o)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := streamMsgs(t, j, "S"); got != int64(conns) {
		t.Errorf("the stream holds %d, want %d", got, conns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := j.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, js.WithSubjectFilter("events.>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != conns {
		t.Errorf("%d distinct subjects, want one per connection (%d)", len(info.State.Subjects), conns)
	}
	d.Shutdown(context.Background())
	testutil.Eventually(t, 20*time.Second, func() bool { return connz(t, s) == 1 }, "the driver's connections closed")
}

// The header block of a split item: the item's own sequence number, no
// count; a whole batch keeps a count above 1.
func TestHeaderBlock(t *testing.T) {
	b := &pipebench.Batch{Seq: 7, Count: 3, Headers: []pipebench.Header{
		{Name: payload.HeaderSeq, Value: "7"}, {Name: payload.HeaderCount, Value: "3"}, {Name: "X", Value: "a"}, {Name: "X", Value: "b"}}}
	if got, want := string(headerBlock(nil, b, true, 9)), "NATS/1.0\r\nPipebench-Seq: 9\r\nX: b\r\n\r\n"; got != want {
		t.Errorf("item: %q, want %q", got, want)
	}
	if got, want := string(headerBlock(nil, b, false, 0)), "NATS/1.0\r\nPipebench-Seq: 7\r\nPipebench-Count: 3\r\nX: b\r\n\r\n"; got != want {
		t.Errorf("batch: %q, want %q", got, want)
	}
	hdr, err := nats.DecodeHeadersMsg(headerBlock(nil, b, true, 9))
	if err != nil || hdr.Get(payload.HeaderSeq) != "9" {
		t.Errorf("nats.go reads the block as %v (%v)", hdr, err)
	}
	if n := len(headerBlock(nil, &pipebench.Batch{Count: 1, Headers: []pipebench.Header{{Name: payload.HeaderCount, Value: "1"}}}, false, 0)); n != 0 {
		t.Errorf("a count of 1 alone made a %d-byte block", n)
	}
}

// Each message of a split batch gets the header block headerBlock makes
// for it, with its own sequence number, whether or not the batch's headers
// carry one (the block made once a batch, the number put in place).
func TestEachMessageHeaderBlocks(t *testing.T) {
	d := &Driver{cfg: *DefaultConfig()}
	d.cfg.Split = true
	for _, hs := range [][]pipebench.Header{
		{{Name: "X", Value: "a"}, {Name: payload.HeaderSeq, Value: "98"}, {Name: payload.HeaderCount, Value: "3"}, {Name: "Y", Value: "b"}},
		{{Name: "X", Value: "a"}},
		nil,
	} {
		b := &pipebench.Batch{Seq: 98, Count: 3, Headers: hs, Body: []byte(`[{"a":1},{"a":2},{"a":3}]`)}
		var i uint64
		err := d.eachMessage(b, func(hdr, data []byte) error {
			if got, want := string(hdr), string(headerBlock(nil, b, true, b.Seq+i)); got != want {
				t.Errorf("headers %v, message %d: block %q, want %q", hs, i, got, want)
			}
			if want := fmt.Sprintf(`{"a":%d}`, i+1); string(data) != want {
				t.Errorf("message %d: %s, want %s", i, data, want)
			}
			i++
			return nil
		})
		if err != nil || i != 3 {
			t.Errorf("headers %v: %d messages, %v", hs, i, err)
		}
	}
}
