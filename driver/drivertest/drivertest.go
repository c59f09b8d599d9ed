// Package drivertest is the conformance suite every driver runs against a
// real receiver of its protocol on loopback, and the loopback receivers the
// drivers' tests share (receivers.go, narrow_linux.go).
//
// The suite builds each driver as the runner does, through its Factory:
// the defaults, the test's changes to them, Validate, and the target handed
// over as the runner's Env.Target (the endpoint fallback), as the
// OpenTelemetry Collector's generated component tests build each component
// through its factory.
package drivertest

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// Answer is how a receiver should answer the next requests.
type Answer int

// The answers a Receiver must be able to give.
const (
	AnswerOK      Answer = iota // accept
	AnswerRefused               // backpressure: HTTP 503, gRPC UNAVAILABLE
	AnswerError                 // a non-retryable failure: HTTP 400, gRPC INVALID_ARGUMENT
	AnswerSlow                  // answer after longer than the driver's timeout
)

// Receiver is a live server of the driver's protocol on loopback.
type Receiver struct {
	Target   string        // what the driver is aimed at
	Received func() int64  // items received and accepted so far
	Set      func(Answer)  // how to answer from now on
	Close    func()        // stop the server (later sends must fail cleanly)
	Slow     time.Duration // how long AnswerSlow waits
	// Addr is the host:port the receiver listens on, when it listens on
	// TCP (empty: a Unix socket): the suite then puts a listener that
	// takes few connections at once in front of it.
	Addr string
}

// Harness is what a driver's test gives the suite.
type Harness struct {
	// Factory is the driver's factory, as the registry holds it.
	Factory pipebench.Factory[pipebench.Driver]
	// Configure changes the factory's defaults for the test (nil: the
	// defaults): a timeout well below the receiver's Slow (half of it or
	// less) yet long enough for 32 concurrent senders on a loaded machine
	// (about a second), a few connections. It leaves the endpoint empty:
	// the suite aims the driver through Env.Target, as the runner does.
	Configure func(cfg any)
	// Invalid, when set, breaks a configuration (the test's) in one way
	// its Validate must refuse and returns the key the refusal names.
	Invalid func(cfg any) (key string)
	// Receiver starts a fresh receiver.
	Receiver func(t *testing.T) Receiver
	// Generator builds the batches to send.
	Generator pipebench.Generator
	// Count is the items per batch (default 1).
	Count int
	// Target turns a loopback host:port into a target the driver takes
	// ("http://127.0.0.1:4318/v1/traces"); nil leaves it as it is.
	Target func(addr string) string
	// Connections, when more than 0, is how many connections the driver
	// holds open after Start; a driver that is a
	// pipebench.ConnectionReporter must report that many.
	Connections int
	// Mismatches are servers the driver cannot talk to: a TLS server for
	// a plain client, a plain server for a TLS client, an HTTP/1.1 server
	// for a gRPC client. Either Start fails with an error naming
	// the Detail, or a send is ClassError, unreached, with that Detail.
	Mismatches []Mismatch
	// ServerSpeaksFirst says the protocol's server greets first (NATS
	// sends INFO): a server that accepts and stays silent is then not of
	// the protocol at all, so sends are a protocol mismatch (ClassError,
	// unreached) instead of timeouts.
	ServerSpeaksFirst bool
	// NoAnswer says the protocol sends no answer to a send (UDP, syslog
	// over UDP, NATS core publish, a scrape target that waits to be
	// collected): Send cannot tell a refusal, an error or a slow receiver
	// from success. The suite then checks what such a driver can keep:
	// the items arrive (waited for: nothing acknowledges them), sends
	// never hang, a receiver gone or a closed port never panics and is
	// either ok or a failure that says why, a cancelled send returns. The
	// answers, the silent server and the connection tests are left out.
	NoAnswer bool
}

// Mismatch is a server speaking another protocol than the driver.
type Mismatch struct {
	Name string
	// Start starts the server on loopback and returns the driver's
	// target for it.
	Start func(t *testing.T) string
	// Detail is the Outcome.Detail expected ("tls handshake", "protocol
	// mismatch").
	Detail string
}

// checkFailure reports what every failed outcome must hold: a Message, and
// Unreached only when want says so.
func checkFailure(t *testing.T, what string, o pipebench.Outcome, class pipebench.Class, unreached bool) {
	t.Helper()
	if o.Class != class || o.Unreached != unreached || o.Message == "" || o.Detail == "" {
		t.Errorf("%s classified %+v; want class %s, unreached %t, a detail and a message", what, o, class, unreached)
	}
}

// checkQuiet reports what a send of a protocol without answers may come
// to where the receiver is gone: ok (nothing tells it), or a failure with
// a detail and a message (a broken connection, a refused connect, an ICMP
// port unreachable).
func checkQuiet(t *testing.T, what string, o pipebench.Outcome) {
	t.Helper()
	if o.Class != pipebench.ClassOK && (o.Message == "" || o.Detail == "") {
		t.Errorf("%s classified %+v; want ok, or a failure with a detail and a message", what, o)
	}
}

// config is the test's configuration: the factory's defaults with the
// harness' changes.
func (h Harness) config() any {
	if h.Factory.NewConfig == nil {
		return nil
	}
	cfg := h.Factory.NewConfig()
	if h.Configure != nil {
		h.Configure(cfg)
	}
	return cfg
}

// env is the runner's environment for a driver aimed at target.
func env(t *testing.T, target string) pipebench.Env {
	return pipebench.Env{Target: target, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
}

// started starts a fresh receiver and a driver aimed at it, started (a
// failed Start fails the test) and shut down when the test ends.
func (h Harness) started(t *testing.T) (Receiver, pipebench.Driver) {
	t.Helper()
	r := h.Receiver(t)
	d := h.build(t, r.Target)
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start against a live receiver: %v", err)
	}
	t.Cleanup(func() { d.Shutdown(context.Background()) })
	return r, d
}

// build makes the driver through the factory, aimed at target.
func (h Harness) build(t *testing.T, target string) pipebench.Driver {
	t.Helper()
	d, err := h.Factory.New(h.config(), env(t, target))
	if err != nil {
		t.Fatalf("%s driver aimed at %s: %v", h.Factory.Name, target, err)
	}
	return d
}

func (h Harness) target(addr string) string {
	if h.Target == nil {
		return addr
	}
	return h.Target(addr)
}

// items waits (bounded) until the receiver counts want items; a protocol
// with answers must have counted them already.
func (h Harness) items(t *testing.T, r Receiver, want int64) {
	t.Helper()
	if !h.NoAnswer {
		if got := r.Received(); got != want {
			t.Errorf("receiver got %d items, want %d", got, want)
		}
		return
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return r.Received() >= want }, "the receiver got %d of %d items", r.Received(), want)
	if got := r.Received(); got != want {
		t.Errorf("receiver got %d items, want %d", got, want)
	}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.Count < 1 {
		h.Count = 1
	}
	send := func(d pipebench.Driver, seq uint64) pipebench.Outcome {
		b := h.Generator.Next(seq, h.Count, time.Now())
		return d.Send(context.Background(), &b)
	}
	t.Run("factory: name, doc, payloads, defaults and validation", func(t *testing.T) { checkFactory(t, h) })
	t.Run("built with no target: a usage error or a driver that shuts down unstarted", func(t *testing.T) {
		d, err := h.Factory.New(h.config(), env(t, ""))
		if err != nil {
			if pipebench.ExitCode(err) != pipebench.ExitUsage {
				t.Errorf("no target: %v (exit %d); want a usage error (exit %d) saying what to set", err, pipebench.ExitCode(err), pipebench.ExitUsage)
			}
			return
		}
		shutdownQuickly(t, d)
	})
	t.Run("shutdown without start", func(t *testing.T) {
		r := h.Receiver(t)
		shutdownQuickly(t, h.build(t, r.Target))
	})
	t.Run("lifecycle and counts", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.build(t, r.Target)
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if cr, ok := d.(pipebench.ConnectionReporter); ok && h.Connections > 0 {
			if n := cr.OpenConnections(); n != h.Connections {
				t.Errorf("after Start %d connections are open, want %d", n, h.Connections)
			}
		}
		for i := 0; i < 50; i++ {
			if o := send(d, uint64(1+i*h.Count)); o.Class != pipebench.ClassOK {
				t.Fatalf("send %d: %+v", i, o)
			}
		}
		h.items(t, r, int64(50*h.Count))
		if err := d.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if !h.NoAnswer {
		t.Run("refused is backpressure", func(t *testing.T) {
			r, d := h.started(t)
			r.Set(AnswerRefused)
			checkFailure(t, "a refused answer (503, UNAVAILABLE)", send(d, 1), pipebench.ClassRefused, false)
			r.Set(AnswerError)
			checkFailure(t, "an error answer (400, INVALID_ARGUMENT)", send(d, 2), pipebench.ClassError, false)
		})
		t.Run("slow answer is a timeout", func(t *testing.T) {
			r, d := h.started(t)
			r.Set(AnswerSlow)
			start := time.Now()
			checkFailure(t, "a slow answer", send(d, 1), pipebench.ClassTimeout, false)
			if el := time.Since(start); el >= r.Slow {
				t.Errorf("the timeout took %v, as long as the receiver's delay", el)
			}
		})
	}
	gone, refused := "receiver gone is refused and unreached, not a panic", "refused port: Start fails clearly or sends are refused and unreached"
	if h.NoAnswer {
		gone, refused = "receiver gone is not a panic", "refused port: Start fails clearly or sends do not panic"
	}
	t.Run(gone, func(t *testing.T) {
		r, d := h.started(t)
		r.Close()
		// The first sends may fail on connections the receiver closed;
		// once they are gone, reconnecting is refused.
		var o pipebench.Outcome
		for i, end := 0, time.Now().Add(10*time.Second); i < 50 && time.Now().Before(end); i++ {
			o = send(d, uint64(1+i))
			if h.NoAnswer {
				checkQuiet(t, "a send to a receiver gone", o)
				continue
			}
			if o.Class == pipebench.ClassOK {
				t.Fatalf("send to a closed receiver classified ok")
			}
			if o.Message == "" {
				t.Errorf("a failed send without a message: %+v", o)
			}
			if o.Class == pipebench.ClassRefused && o.Unreached {
				break
			}
		}
		if !h.NoAnswer {
			checkFailure(t, "a send to a closed receiver", o, pipebench.ClassRefused, true)
			if o.Unsent != pipebench.OwnerSystem {
				t.Errorf("a send to a closed receiver: Unsent %q, want the system's (held back, not sent): %+v", o.Unsent, o)
			}
		}
	})
	t.Run(refused, func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		d := h.build(t, h.target(addr))
		if err := d.Start(context.Background()); err != nil {
			if !h.NoAnswer && (!strings.Contains(err.Error(), "refused") || !pipebench.IsUnreached(err)) {
				t.Errorf("Start against a closed port: %v; want an error saying the connection was refused, marked unreached", err)
			}
			return
		}
		defer d.Shutdown(context.Background())
		o := send(d, 1)
		if h.NoAnswer {
			checkQuiet(t, "a send to a closed port", o)
			return
		}
		checkFailure(t, "a send to a closed port", o, pipebench.ClassRefused, true)
		if o.Detail != "connection refused" || !strings.Contains(o.Message, "refused") {
			t.Errorf("a send to a closed port: %+v", o)
		}
		// The request never left: the system's connect refused it, so it
		// is held back, not sent (pipebench.Outcome.Unsent).
		if o.Unsent != pipebench.OwnerSystem {
			t.Errorf("a send to a closed port: Unsent %q, want the system's (held back, not sent): %+v", o.Unsent, o)
		}
	})
	if !h.NoAnswer {
		t.Run("accepts and never answers is a timeout, reached", func(t *testing.T) {
			addr := SilentServer(t)
			d := h.build(t, h.target(addr))
			if err := d.Start(context.Background()); err != nil {
				t.Fatalf("Start against a server that accepts connections: %v", err)
			}
			defer d.Shutdown(context.Background())
			if h.ServerSpeaksFirst {
				o := send(d, 1)
				checkFailure(t, "a send to a silent server", o, pipebench.ClassError, true)
				if o.Detail != "protocol mismatch" {
					t.Errorf("a send to a silent server: %+v, want detail protocol mismatch", o)
				}
				return
			}
			checkFailure(t, "a send to a server that never answers", send(d, 1), pipebench.ClassTimeout, false)
		})
		t.Run("takes few connections at once: Start opens what it can, the rest open in the background", func(t *testing.T) {
			takesFew(t, h, send)
		})
		t.Run("takes no connection: unreached", func(t *testing.T) {
			takesNone(t, h, send)
		})
	}
	for _, m := range h.Mismatches {
		t.Run("mismatch: "+m.Name, func(t *testing.T) {
			d := h.build(t, m.Start(t))
			if err := d.Start(context.Background()); err != nil {
				if !strings.Contains(err.Error(), m.Detail) {
					t.Errorf("Start: %v; want an error naming %q", err, m.Detail)
				}
				return
			}
			defer d.Shutdown(context.Background())
			o := send(d, 1)
			checkFailure(t, m.Name, o, pipebench.ClassError, true)
			if o.Detail != m.Detail {
				t.Errorf("%s: detail %q, want %q (%s)", m.Name, o.Detail, m.Detail, o.Message)
			}
		})
	}
	t.Run("cancelled context does not hang", func(t *testing.T) {
		r, d := h.started(t)
		r.Set(AnswerSlow)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		b := h.Generator.Next(1, h.Count, time.Now())
		done := make(chan pipebench.Outcome, 1)
		go func() { done <- d.Send(ctx, &b) }()
		select {
		case o := <-done:
			if o.Class == pipebench.ClassOK && !h.NoAnswer {
				t.Errorf("cancelled send classified ok")
			}
		case <-time.After(r.Slow + 5*time.Second):
			t.Fatal("send with a cancelled context hung")
		}
	})
	t.Run("concurrent sends", func(t *testing.T) {
		r, d := h.started(t)
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					if o := send(d, uint64((g*20+i)*h.Count+1)); o.Class != pipebench.ClassOK {
						t.Errorf("concurrent send: %+v", o)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		if !h.NoAnswer {
			h.items(t, r, int64(640*h.Count))
			return
		}
		// Nothing acknowledges what a burst without answers delivers, and
		// a datagram protocol may lose some of it on the way (a receiver's
		// full socket buffer): what arrived, arrived once.
		want := int64(640 * h.Count)
		testutil.Poll(5*time.Second, func() bool { return r.Received() >= want })
		if got := r.Received(); got < 1 || got > want {
			t.Errorf("receiver got %d items of a burst of %d", got, want)
		} else if got < want {
			t.Logf("receiver got %d items of a burst of %d", got, want)
		}
	})
	t.Run("sends handed over (AsyncSender) are each answered once", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.build(t, r.Target)
		as, ok := d.(pipebench.AsyncSender)
		if !ok {
			d.Shutdown(context.Background())
			t.Skipf("the %s driver sends synchronously only", h.Factory.Name)
		}
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer d.Shutdown(context.Background())
		const n = 100
		outs := make(chan pipebench.Outcome, 2*n)
		batches := make([]pipebench.Batch, n)
		for i := range batches {
			batches[i] = h.Generator.Next(uint64(1+i*h.Count), h.Count, time.Now())
			as.SendAsync(context.Background(), &batches[i], func(_ time.Time, o pipebench.Outcome) { outs <- o })
		}
		if f, ok := d.(pipebench.Flusher); ok {
			f.Flush() // the end of the row, as the runner's pacer
		}
		for i := 0; i < n; i++ {
			select {
			case o := <-outs:
				if o.Class != pipebench.ClassOK {
					t.Errorf("send handed over: %+v", o)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%d of %d sends handed over were answered", i, n)
			}
		}
		select {
		case o := <-outs:
			t.Errorf("a send was answered twice: %+v", o)
		default:
		}
		h.items(t, r, int64(n*h.Count))
	})
}

// checkFactory checks the factory as the registry and the scenario
// decoder use it.
func checkFactory(t *testing.T, h Harness) {
	f := h.Factory
	if f.Name == "" || f.Doc == "" || f.New == nil {
		t.Fatalf("factory %q: a name, a one-line doc and a New function are required", f.Name)
	}
	if len(f.Accepts) == 0 {
		t.Errorf("the %s driver declares no payloads it accepts (WithPayloads): validate cannot check its generator", f.Name)
	}
	if f.NewConfig == nil {
		return
	}
	a, b := f.NewConfig(), f.NewConfig()
	if a == nil || a == b {
		t.Errorf("NewConfig must return a new configuration each call (got %p and %p)", a, b)
	}
	cfg := h.config()
	if v, ok := cfg.(pipebench.Validator); ok {
		if err := v.Validate(); err != nil {
			t.Errorf("the test's configuration (the defaults with its changes) does not validate: %v", err)
		}
	}
	if h.Invalid == nil {
		return
	}
	bad := h.config()
	key := h.Invalid(bad)
	_, err := f.New(bad, env(t, "127.0.0.1:9"))
	if err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage || !strings.Contains(ErrorText(err), key+":") {
		t.Errorf("an invalid configuration built: %v; want a usage error (exit %d) naming %s:", err, pipebench.ExitUsage, key)
	}
}

// ErrorText is an error with every error it wraps, one after the other,
// as the CLI prints them: what a test looks for a message in.
func ErrorText(err error) string {
	var b strings.Builder
	for e := err; e != nil; {
		b.WriteString(e.Error())
		b.WriteString(" | ")
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return b.String()
}

// shutdownQuickly shuts d down (it was never started) and fails the test
// when that takes more than 5 s.
func shutdownQuickly(t *testing.T, d pipebench.Driver) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown without Start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown without Start hung")
	}
}

// takesFew aims the driver at its receiver through a listener that takes
// few connections at once (NarrowListener): Start must succeed, and the
// connections it could not open must open in the background. A burst of
// connects to a small backlog also leaves a few half open: the kernel
// acknowledged the client's SYN but dropped the request when the backlog
// overflowed, so the client thinks it connected and learns otherwise only
// when it sends (a reset). Sends that find one may fail; then every send
// is ok, and the driver's count of open connections and the listener's own
// agree.
func takesFew(t *testing.T, h Harness, send func(pipebench.Driver, uint64) pipebench.Outcome) {
	r := h.Receiver(t)
	if r.Addr == "" {
		t.Skip("the receiver does not listen on TCP")
	}
	n := NarrowListener(t, r.Addr)
	d := h.build(t, h.target(n.Addr))
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start against a target that takes few connections at once: %v", err)
	}
	defer d.Shutdown(context.Background())
	cr, counts := d.(pipebench.ConnectionReporter)
	counts = counts && h.Connections > 0
	if counts {
		if cr.OpenConnections() < 1 {
			t.Errorf("after Start no connection is open")
		}
		testutil.Eventually(t, 30*time.Second, func() bool { return cr.OpenConnections() == h.Connections },
			"the driver says %d of %d connections are open", cr.OpenConnections(), h.Connections)
	}
	sends, ok := 3*max(h.Connections, 2)+5, int64(0)
	for i := 0; i < sends; i++ {
		o := send(d, uint64(1+i*h.Count))
		switch {
		case o.Class == pipebench.ClassOK:
			ok++
		case i >= sends-5:
			t.Errorf("send %d of %d through a listener that takes few connections at once: %+v", i+1, sends, o)
		}
	}
	h.items(t, r, ok*int64(h.Count))
	if counts {
		testutil.Eventually(t, 10*time.Second, func() bool { return cr.OpenConnections() == h.Connections && n.Open() == h.Connections },
			"the driver says %d of %d connections are open, the listener forwards %d", cr.OpenConnections(), h.Connections, n.Open())
	}
}

// takesNone aims the driver at a listener that takes no connection
// (FullListener): Start fails marked unreached, or the sends are
// unreached.
func takesNone(t *testing.T, h Harness, send func(pipebench.Driver, uint64) pipebench.Outcome) {
	d := h.build(t, h.target(FullListener(t)))
	if err := d.Start(context.Background()); err != nil {
		if !pipebench.IsUnreached(err) {
			t.Errorf("Start against a target that takes no connection: %v; want it marked unreached", err)
		}
		return
	}
	defer d.Shutdown(context.Background())
	if o := send(d, 1); !o.Unreached || o.Class == pipebench.ClassOK || o.Message == "" {
		t.Errorf("a send to a target that takes no connection: %+v; want unreached with a message", o)
	}
}
