package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipebench/pipebench/internal/conn/netclass"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/internal/testkit/tlstest"
)

// rawCodec hands a server's handler each message's bytes as they came.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// server is a real grpc-go server on loopback answering any method: each
// call's messages are counted and its metadata kept; how it answers is
// set by the test.
type server struct {
	addr  string // unix:/path or host:port, as Options.Addr takes it
	srv   *grpc.Server
	calls atomic.Int64
	msgs  atomic.Int64
	bytes atomic.Int64
	code  atomic.Int32                  // the status every call ends with
	delay atomic.Int64                  // nanoseconds each call waits before it answers
	block atomic.Pointer[chan struct{}] // set: each call waits for it to close
	mu    sync.Mutex
	mds   []metadata.MD
	paths []string
}

func startServer(t testing.TB, network string, opts ...grpc.ServerOption) *server {
	t.Helper()
	s := &server{}
	var ln net.Listener
	var err error
	if network == "unix" {
		p := filepath.Join(t.TempDir(), "s.sock")
		ln, err = net.Listen("unix", p)
		s.addr = "unix:" + p
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			s.addr = ln.Addr().String()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	s.serve(t, ln, opts...)
	return s
}

func (s *server) serve(t testing.TB, ln net.Listener, opts ...grpc.ServerOption) {
	opts = append(opts, grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(s.handle))
	s.srv = grpc.NewServer(opts...)
	go s.srv.Serve(ln)
	t.Cleanup(s.srv.Stop)
}

func (s *server) handle(_ any, ss grpc.ServerStream) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	path, _ := grpc.MethodFromServerStream(ss)
	s.mu.Lock()
	s.mds = append(s.mds, md)
	s.paths = append(s.paths, path)
	s.mu.Unlock()
	n := 0
	for {
		var b []byte
		if err := ss.RecvMsg(&b); err != nil {
			if err == io.EOF {
				break
			}
			return err
		}
		s.msgs.Add(1)
		s.bytes.Add(int64(len(b)))
		n++
	}
	s.calls.Add(1)
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ss.Context().Done():
			return status.FromContextError(ss.Context().Err()).Err()
		}
	}
	if b := s.block.Load(); b != nil {
		select {
		case <-*b:
		case <-ss.Context().Done():
			return status.FromContextError(ss.Context().Err()).Err()
		}
	}
	if c := codes.Code(s.code.Load()); c != codes.OK {
		return status.Error(c, "answered "+c.String()+" by the test, 100% sure")
	}
	ack := []byte{0x08, byte(n)}
	return ss.SendMsg(&ack)
}

// hold makes every call from now on wait until the returned channel
// closes.
func (s *server) hold() chan struct{} {
	ch := make(chan struct{})
	s.block.Store(&ch)
	return ch
}

// msg is one message with gRPC's prefix.
func msg(body []byte) []byte {
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(len(body)))
	return append(out, body...)
}

// results collects calls' ends.
type results struct {
	mu   sync.Mutex
	done []*Call
	n    map[*Call]int
	ch   chan *Call
}

func newResults() *results { return &results{n: map[*Call]int{}, ch: make(chan *Call, 100000)} }

func (r *results) fn(k *Call) {
	r.mu.Lock()
	r.done = append(r.done, k)
	r.n[k]++
	r.mu.Unlock()
	r.ch <- k
}

// wait waits for n calls to end (bounded).
func (r *results) wait(t testing.TB, n int, within time.Duration) []*Call {
	t.Helper()
	var out []*Call
	deadline := time.After(within)
	for len(out) < n {
		select {
		case k := <-r.ch:
			out = append(out, k)
		case <-deadline:
			t.Fatalf("%d of %d calls ended within %v", len(out), n, within)
		}
	}
	return out
}

// once checks that no call ended twice.
func (r *results) once(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, n := range r.n {
		if n != 1 {
			t.Errorf("a call ended %d times: %v", n, k)
		}
	}
}

func newClient(t testing.TB, o Options) *Client {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Path == "" {
		o.Path = "/test.v1.Svc/Call"
	}
	if o.Authority == "" {
		o.Authority = "localhost"
	}
	cl, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func openAll(t testing.TB, cl *Client) {
	t.Helper()
	for i := range cl.conns {
		if err := cl.Open(context.Background(), i); err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
}

// Calls and their metadata reach a real server over a Unix socket and TCP:
// the first request on each connection fills the server's HPACK table,
// the next name its entries; every call's own values arrive as sent.
func TestCallsAndMetadata(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			s := startServer(t, network)
			cl := newClient(t, Options{Addr: s.addr, Conns: 2, UserAgent: "pipebench-test",
				Metadata: []Field{{Name: "x-tenant", Value: "t1"}, {Name: "authorization", Value: "Bearer s3cret", Secret: true}},
				Vary:     []string{"pipebench-seq", "pipebench-count", "pipebench-sent"}})
			openAll(t, cl)
			if cl.Ready() != 2 {
				t.Fatalf("%d connections ready, want 2", cl.Ready())
			}
			r := newResults()
			const n = 300
			for i := 0; i < n; i++ {
				k := &Call{Data: msg([]byte{0x08, byte(i)}), Done: r.fn}
				k.Values = []string{strconv.Itoa(1000 + i), "1", ""}
				if i%7 == 0 {
					k.Values[2] = strconv.Itoa(i * 11)
				}
				cl.Do(k)
				if i%10 == 9 {
					cl.Flush()
				}
			}
			cl.Flush()
			for _, k := range r.wait(t, n, 10*time.Second) {
				if k.Status != 0 || k.Err != nil || k.Unsent != Sent {
					t.Fatalf("call: status %d %q, err %v, unsent %v", k.Status, k.Message, k.Err, k.Unsent)
				}
				if k.Written.Before(k.Taken) || (!k.Answered.IsZero() && k.Answered.Before(k.Written)) {
					t.Errorf("times out of order: taken %v written %v answered %v", k.Taken, k.Written, k.Answered)
				}
			}
			r.once(t)
			if got := s.calls.Load(); got != n {
				t.Fatalf("server counted %d calls, want %d", got, n)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			seen := map[string]bool{}
			for i, md := range s.mds {
				if s.paths[i] != "/test.v1.Svc/Call" {
					t.Errorf("path %q", s.paths[i])
				}
				if g := md.Get("x-tenant"); len(g) != 1 || g[0] != "t1" {
					t.Errorf("x-tenant %v", g)
				}
				if g := md.Get("authorization"); len(g) != 1 || g[0] != "Bearer s3cret" {
					t.Errorf("authorization %v", g)
				}
				if g := md.Get("user-agent"); len(g) != 1 || !strings.HasPrefix(g[0], "pipebench-test") {
					t.Errorf("user-agent %v", g)
				}
				seq := md.Get("pipebench-seq")
				if len(seq) != 1 || md.Get("pipebench-count")[0] != "1" {
					t.Fatalf("call %d: pipebench-seq %v, count %v", i, seq, md.Get("pipebench-count"))
				}
				seen[seq[0]] = true
				v, _ := strconv.Atoi(seq[0])
				sent := md.Get("pipebench-sent")
				if (v-1000)%7 == 0 {
					if len(sent) != 1 || sent[0] != strconv.Itoa((v-1000)*11) {
						t.Errorf("seq %d: pipebench-sent %v", v, sent)
					}
				} else if len(sent) != 0 {
					t.Errorf("seq %d: pipebench-sent %v, want none (an empty value is not sent)", v, sent)
				}
			}
			if len(seen) != n {
				t.Errorf("the server saw %d distinct sequence numbers, want %d", len(seen), n)
			}
		})
	}
}

// The header blocks decode with HPACK's own decoder: a connection's first
// request, its steady ones, and with a first request that leaves some
// changing fields out, or a table too small, literals only.
func TestHeaderBlocksDecode(t *testing.T) {
	fields := []field{
		{name: ":method", value: "POST", static: staticMethodPOST, whole: true},
		{name: ":scheme", value: "http", static: staticSchemeHTTP, whole: true},
		{name: ":path", value: "/a.B/C", static: staticPath},
		{name: ":authority", value: "h:1", static: staticAuthority},
		{name: "content-type", value: "application/grpc", static: staticContentType},
		{name: "te", value: "trailers"},
		{name: "secret", value: "v", secret: true},
		{name: "grpc-timeout", value: "5000m"},
	}
	vary := []string{"a", "b", "c"}
	bl := makeBlocks(fields, vary)
	want := func(values []string) string {
		var out []string
		for _, f := range fields {
			out = append(out, f.name+"="+f.value)
		}
		for i, v := range values {
			if v != "" {
				out = append(out, vary[i]+"="+v)
			}
		}
		return strings.Join(out, " ")
	}
	for _, first := range [][]string{{"1", "2", "3"}, {"1", "", "3"}, {"", "", ""}} {
		dec := hpack.NewDecoder(4096, nil)
		decode := func(b []byte) string {
			hf, err := dec.DecodeFull(b)
			if err != nil {
				t.Fatalf("first %v: %v", first, err)
			}
			var out []string
			for _, f := range hf {
				out = append(out, f.Name+"="+f.Value)
				if f.Name == "secret" && !f.Sensitive {
					t.Errorf("the secret field was not sent never-indexed")
				}
			}
			return strings.Join(out, " ")
		}
		idx, _ := bl.firstVary(first)
		n := 0
		for _, x := range idx {
			if x != 0 {
				n++
			}
		}
		b := bl.appendVary(append([]byte(nil), bl.first...), blockFirst, nil, first)
		if got := decode(b); got != want(first) {
			t.Errorf("first request:\n got %s\nwant %s", got, want(first))
		}
		steady := bl.steadyFor(fields, n)
		for _, values := range [][]string{{"10", "20", "30"}, {"11", "", "31"}, {"", "", ""}, {"123456789012345678901234567890", "1", "2"}} {
			b := bl.appendVary(append([]byte(nil), steady...), blockSteady, idx, values)
			if got := decode(b); got != want(values) {
				t.Errorf("first %v, steady request:\n got %s\nwant %s", first, got, want(values))
			}
			if len(b) > 40+len(strings.Join(values, "")) {
				t.Errorf("a steady block of %d bytes: the fixed fields are not named by index", len(b))
			}
		}
	}
	// Literals only, for a server whose table is too small.
	dec := hpack.NewDecoder(0, nil)
	b := bl.appendVary(append([]byte(nil), bl.plain...), blockPlain, nil, []string{"1", "2", "3"})
	hf, err := dec.DecodeFull(b)
	if err != nil || len(hf) != len(fields)+3 {
		t.Errorf("plain block: %v, %d fields", err, len(hf))
	}
	if got := timeoutValue(5 * time.Second); got != "5000000u" {
		t.Errorf("grpc-timeout of 5s: %q", got)
	}
	if got := timeoutValue(300 * time.Hour); got != "1080000S" {
		t.Errorf("grpc-timeout of 300h: %q", got)
	}
}

// A call the server ends with a status comes back with it and its
// message (percent-decoded).
func TestStatusAndMessage(t *testing.T) {
	s := startServer(t, "unix")
	s.code.Store(int32(codes.ResourceExhausted))
	cl := newClient(t, Options{Addr: s.addr})
	openAll(t, cl)
	r := newResults()
	cl.Do(&Call{Data: msg(nil), Done: r.fn})
	cl.Flush()
	k := r.wait(t, 1, 5*time.Second)[0]
	if k.Status != int(codes.ResourceExhausted) || k.Message != "answered ResourceExhausted by the test, 100% sure" || k.Err != nil {
		t.Errorf("status %d %q, err %v", k.Status, k.Message, k.Err)
	}
}

// Messages larger than the server's windows go as the windows open: a
// unary call of 300 KB and a client stream of 2,000 messages.
func TestFlowControl(t *testing.T) {
	s := startServer(t, "tcp", grpc.InitialWindowSize(65535), grpc.InitialConnWindowSize(65535), grpc.MaxRecvMsgSize(1<<20))
	cl := newClient(t, Options{Addr: s.addr, Conns: 1})
	openAll(t, cl)
	r := newResults()
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte(i)
	}
	var stream []byte
	for i := 0; i < 2000; i++ {
		stream = append(stream, msg([]byte(strings.Repeat("x", 100)))...)
	}
	for i := 0; i < 3; i++ {
		cl.Do(&Call{Data: msg(big), Done: r.fn})
		cl.Do(&Call{Data: stream, Done: r.fn})
		cl.Do(&Call{Data: msg([]byte{1}), Done: r.fn})
	}
	cl.Flush()
	for _, k := range r.wait(t, 9, 20*time.Second) {
		if k.Status != 0 {
			t.Errorf("status %d %q err %v unsent %v", k.Status, k.Message, k.Err, k.Unsent)
		}
	}
	if got, want := s.msgs.Load(), int64(3*(1+2000+1)); got != want {
		t.Errorf("server got %d messages, want %d", got, want)
	}
	if got, want := s.bytes.Load(), int64(3*(300<<10+2000*100+1)); got != want {
		t.Errorf("server got %d bytes, want %d", got, want)
	}
}

// At the server's MAX_CONCURRENT_STREAMS the calls wait in the queue and
// go when streams free; those that wait out their deadline come back
// unsent: no free stream.
func TestMaxConcurrentStreams(t *testing.T) {
	s := startServer(t, "unix", grpc.MaxConcurrentStreams(2))
	s.delay.Store(int64(50 * time.Millisecond))
	cl := newClient(t, Options{Addr: s.addr, Conns: 1, Timeout: 2 * time.Second})
	openAll(t, cl)
	r := newResults()
	for i := 0; i < 10; i++ {
		cl.Do(&Call{Data: msg(nil), Done: r.fn})
	}
	cl.Flush()
	for _, k := range r.wait(t, 10, 10*time.Second) {
		if k.Status != 0 {
			t.Errorf("status %d %q err %v unsent %v", k.Status, k.Message, k.Err, k.Unsent)
		}
	}
	// Now the streams stay busy past the timeout.
	s.delay.Store(int64(3 * time.Second))
	for i := 0; i < 5; i++ {
		cl.Do(&Call{Data: msg(nil), Done: r.fn})
	}
	cl.Flush()
	unsent := 0
	for _, k := range r.wait(t, 5, 10*time.Second) {
		switch {
		case k.Unsent == NoStream:
			unsent++
			if !k.Written.IsZero() {
				t.Errorf("an unsent call has a write time")
			}
		case k.Err == ErrTimeout || k.Status == int(codes.DeadlineExceeded):
		default:
			t.Errorf("status %d %q err %v unsent %v", k.Status, k.Message, k.Err, k.Unsent)
		}
	}
	if unsent != 3 {
		t.Errorf("%d calls came back unsent (no free stream), want 3", unsent)
	}
	r.once(t)
}

// A call past its deadline ends with ErrTimeout (or the server's
// DEADLINE_EXCEEDED), a cancelled one with its context's error; Close ends
// what is in flight and what waits.
func TestDeadlineCancelClose(t *testing.T) {
	s := startServer(t, "tcp")
	defer close(s.hold())
	cl := newClient(t, Options{Addr: s.addr, Conns: 1, Timeout: 300 * time.Millisecond})
	openAll(t, cl)
	r := newResults()
	cl.Do(&Call{Data: msg(nil), Done: r.fn})
	cl.Flush()
	k := r.wait(t, 1, 5*time.Second)[0]
	if k.Err != ErrTimeout && k.Status != int(codes.DeadlineExceeded) {
		t.Errorf("past its deadline: status %d %q err %v", k.Status, k.Message, k.Err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cl.Do(&Call{Data: msg(nil), Ctx: ctx, Done: r.fn})
	if k := r.wait(t, 1, time.Second)[0]; k.Unsent != Cancelled {
		t.Errorf("a cancelled call: %v", k)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cl2 := newClient(t, Options{Addr: s.addr, Conns: 1, Timeout: time.Minute})
	openAll(t, cl2)
	cl2.Do(&Call{Data: msg(nil), Ctx: ctx, Done: r.fn})
	cl2.Flush()
	cancel()
	if k := r.wait(t, 1, 5*time.Second)[0]; !errors.Is(k.Err, context.Canceled) {
		t.Errorf("a call cancelled in flight: %v", k)
	}
	for i := 0; i < 20; i++ {
		cl2.Do(&Call{Data: msg(nil), Done: r.fn})
	}
	cl2.Flush()
	cl2.Close()
	for _, k := range r.wait(t, 20, 5*time.Second) {
		if k.Err == nil && k.Unsent != Closed {
			t.Errorf("a call ended by Close: %v", k)
		}
	}
	cl2.Do(&Call{Data: msg(nil), Done: r.fn})
	if k := r.wait(t, 1, time.Second)[0]; k.Unsent != Closed {
		t.Errorf("a call after Close: %v", k)
	}
	r.once(t)
}

// A server that goes away: the calls in flight end with the connection's
// failure, a call while nothing listens fails at once, unsent (connect
// refused); once a server listens again on the address, the connection
// opens again by itself and calls succeed.
func TestServerGoneAndBack(t *testing.T) {
	s := startServer(t, "tcp")
	cl := newClient(t, Options{Addr: s.addr, Conns: 2, Timeout: 2 * time.Second})
	openAll(t, cl)
	s.hold()
	r := newResults()
	for i := 0; i < 4; i++ {
		cl.Do(&Call{Data: msg(nil), Done: r.fn})
	}
	cl.Flush()
	testutil.Eventually(t, 5*time.Second, func() bool { return s.calls.Load() == 4 }, "the server has %d of 4 calls", s.calls.Load())
	s.srv.Stop()
	for _, k := range r.wait(t, 4, 5*time.Second) {
		if k.Err == nil || k.Unsent != Sent {
			t.Errorf("a call in flight when the server stopped: %v", k)
		}
	}
	var k *Call
	testutil.Eventually(t, 5*time.Second, func() bool {
		cl.Do(&Call{Data: msg(nil), Done: r.fn})
		cl.Flush()
		k = r.wait(t, 1, 5*time.Second)[0]
		return k.Unsent == DialFailed
	}, "calls while nothing listens: %v", k)
	if o := netclass.Classify(k.Err); o.Detail != netclass.DetailRefused {
		t.Errorf("a call while nothing listens failed with %v (%s), want connection refused", k.Err, o.Detail)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	s2 := &server{addr: s.addr}
	s2.serve(t, ln)
	testutil.Eventually(t, 10*time.Second, func() bool { return cl.Ready() == 2 }, "%d of 2 connections ready again", cl.Ready())
	for i := 0; i < 10; i++ {
		cl.Do(&Call{Data: msg(nil), Done: r.fn})
	}
	cl.Flush()
	for _, k := range r.wait(t, 10, 5*time.Second) {
		if k.Status != 0 {
			t.Errorf("after the server came back: %v", k)
		}
	}
	r.once(t)
}

// GracefulStop: the call in flight is answered; the connection is not
// used for new calls.
func TestGoAway(t *testing.T) {
	s := startServer(t, "unix")
	cl := newClient(t, Options{Addr: s.addr, Conns: 1, Timeout: 5 * time.Second})
	openAll(t, cl)
	block := s.hold()
	r := newResults()
	cl.Do(&Call{Data: msg(nil), Done: r.fn})
	cl.Flush()
	testutil.Eventually(t, 5*time.Second, func() bool { return s.calls.Load() == 1 }, "the server has not got the call")
	stopped := make(chan struct{})
	go func() { s.srv.GracefulStop(); close(stopped) }()
	testutil.Eventually(t, 5*time.Second, func() bool { return cl.Ready() == 0 }, "the connection still takes calls after GOAWAY")
	close(block)
	if k := r.wait(t, 1, 5*time.Second)[0]; k.Status != 0 {
		t.Errorf("the call in flight at GOAWAY: %v", k)
	}
	<-stopped
	r.once(t)
}

// Servers that do not speak gRPC: Open says so, as a protocol mismatch
// (an HTTP/1.1 server, a TLS server to a plaintext client) or a timeout
// (a server that accepts and says nothing).
func TestOpenMismatch(t *testing.T) {
	h1 := &http.Server{Handler: http.NotFoundHandler()}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go h1.Serve(ln)
	defer h1.Close()
	certs := tlstest.New(t)
	tlsSrv := startServer(t, "tcp", grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{certs.Server(t)}})))
	silent, _ := net.Listen("tcp", "127.0.0.1:0")
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tc := range []struct {
		name, addr string
		mismatch   bool
	}{{"HTTP/1.1", ln.Addr().String(), true}, {"TLS", tlsSrv.addr, true}, {"silent", silent.Addr().String(), false}} {
		cl := newClient(t, Options{Addr: tc.addr, Timeout: 300 * time.Millisecond})
		err := cl.Open(context.Background(), 0)
		switch {
		case err == nil:
			t.Errorf("%s: opened", tc.name)
		case tc.mismatch && !errors.Is(err, netclass.ErrProtocolMismatch):
			t.Errorf("%s: %v, want a protocol mismatch", tc.name, err)
		case !tc.mismatch && !errors.Is(err, os.ErrDeadlineExceeded):
			t.Errorf("%s: %v, want a timeout", tc.name, err)
		}
	}
	// With TLS, the TLS server takes the calls.
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(certs.CA)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("the test CA: %v", err)
	}
	cl := newClient(t, Options{Addr: tlsSrv.addr, TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}})
	openAll(t, cl)
	r := newResults()
	cl.Do(&Call{Data: msg(nil), Done: r.fn})
	cl.Flush()
	if k := r.wait(t, 1, 5*time.Second)[0]; k.Status != 0 {
		t.Errorf("over TLS: %v", k)
	}
}

// Many goroutines hand calls over at once; every call ends once.
func TestConcurrentCalls(t *testing.T) {
	s := startServer(t, "tcp")
	cl := newClient(t, Options{Addr: s.addr, Conns: 3})
	openAll(t, cl)
	r := newResults()
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				cl.Do(&Call{Data: msg([]byte{byte(i)}), Done: r.fn})
				if i%5 == 0 {
					cl.Flush()
				}
			}
			cl.Flush()
		}()
	}
	wg.Wait()
	for _, k := range r.wait(t, 16*200, 20*time.Second) {
		if k.Status != 0 {
			t.Fatalf("%v", k)
		}
	}
	r.once(t)
	if got := s.calls.Load(); got != 16*200 {
		t.Errorf("the server counted %d calls", got)
	}
}

// A server that stops reading (its process stopped): once its flow-control
// windows are spent, calls wait in the queue, and those that wait out
// their deadline come back unsent (the window stayed shut) while those
// that left time out; the goroutines stay few. A pause shorter than the
// timeout costs nothing: once the server runs again, what left is
// answered and what waited goes.
func TestPausedServer(t *testing.T) {
	addr, proc := helperServer(t)
	pause := func() func() {
		if err := proc.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, func() bool { return stopped(proc.Pid) }, "the server process did not stop")
		var once sync.Once
		resume := func() { once.Do(func() { proc.Signal(syscall.SIGCONT) }) }
		t.Cleanup(resume)
		return resume
	}
	big := msg(make([]byte, 1000)) // 65,535 bytes of window: about 65 calls a connection
	const n = 400

	// Stopped for longer than the timeout.
	cl := newClient(t, Options{Addr: addr, Conns: 2, Timeout: time.Second})
	openAll(t, cl)
	r := newResults()
	resume := pause()
	before := goroutines()
	for i := 0; i < n; i++ {
		cl.Do(&Call{Data: big, Done: r.fn})
		cl.Flush()
	}
	if g := goroutines(); g > before+4 {
		t.Errorf("%d goroutines with %d calls handed over, %d before", g, n, before)
	}
	unsent, timedOut := 0, 0
	for _, k := range r.wait(t, n, 10*time.Second) {
		switch {
		case k.Unsent == NoWindow:
			unsent++
		case k.Err == ErrTimeout:
			timedOut++
		default:
			t.Errorf("a call to the stopped server: %v", k)
		}
	}
	if unsent < n/2 || timedOut == 0 || unsent+timedOut != n {
		t.Errorf("of %d calls to the stopped server %d came back unsent and %d timed out", n, unsent, timedOut)
	}
	t.Logf("stopped for longer than the timeout: %d calls unsent (window shut), %d timed out", unsent, timedOut)
	resume()
	for i := 0; i < 50; i++ {
		cl.Do(&Call{Data: big, Done: r.fn})
	}
	cl.Flush()
	for _, k := range r.wait(t, 50, 10*time.Second) {
		if k.Status != 0 {
			t.Errorf("after the server ran again: %v", k)
		}
	}
	r.once(t)

	// Stopped for less than the timeout.
	cl2 := newClient(t, Options{Addr: addr, Conns: 2, Timeout: 20 * time.Second})
	openAll(t, cl2)
	r2 := newResults()
	resume = pause()
	for i := 0; i < n; i++ {
		cl2.Do(&Call{Data: big, Done: r2.fn})
		cl2.Flush()
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return cl2.qlen.Load() > 0 }, "no call waits while the server is stopped")
	resume()
	for _, k := range r2.wait(t, n, 15*time.Second) {
		if k.Status != 0 {
			t.Errorf("a call across a short stop: %v", k)
		}
	}
	r2.once(t)
}

func goroutines() int { return runtime.NumGoroutine() }

// stopped reports whether every thread of process pid is stopped (the
// signal takes effect asynchronously).
func stopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		// pid (comm) state ...: the state follows the last parenthesis.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}

// helperServer runs this test binary again as a gRPC server (TestHelper)
// on a loopback TCP port and returns the address and the process.
func helperServer(t *testing.T) (string, *os.Process) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelper$")
	cmd.Env = append(os.Environ(), "WIRE_HELPER_ADDR="+addr)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGCONT); stdin.Close(); cmd.Wait() })
	testutil.Eventually(t, 20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if c != nil {
			c.Close()
		}
		return err == nil
	}, "the helper server did not listen on %s", addr)
	return addr, cmd.Process
}

// TestHelper is not a test: it is helperServer's process, and skips unless
// started as one.
func TestHelper(t *testing.T) {
	addr := os.Getenv("WIRE_HELPER_ADDR")
	if addr == "" {
		t.Skip("the helper server of TestPausedServer")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := &server{}
	s.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(s.handle))
	go s.srv.Serve(ln)
	io.Copy(io.Discard, os.Stdin)
	s.srv.Stop()
}
