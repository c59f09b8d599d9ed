// Package drivertest is the conformance suite every driver runs against a
// real receiver of its protocol on loopback.
package drivertest

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
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
}

// Harness is what a driver's test gives the suite.
type Harness struct {
	// New builds the driver aimed at target, with a timeout well below
	// the receiver's Slow (half of it or less) yet long enough for 32
	// concurrent senders on a loaded machine (about a second).
	New func(t *testing.T, target string) pipebench.Driver
	// Receiver starts a fresh receiver.
	Receiver func(t *testing.T) Receiver
	// Generator builds the batches to send.
	Generator pipebench.Generator
	// Count is the items per batch (default 1).
	Count int
	// Target turns a loopback host:port into a target New takes
	// ("http://127.0.0.1:4318/v1/traces"); nil leaves it as it is.
	Target func(addr string) string
	// Connections, when more than 0, is how many connections a driver New
	// built holds open after Start; a driver that is a
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

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.Count < 1 {
		h.Count = 1
	}
	send := func(d pipebench.Driver, seq uint64) pipebench.Outcome {
		b := h.Generator.Next(seq, h.Count, time.Now())
		return d.Send(context.Background(), &b)
	}
	t.Run("lifecycle and counts", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
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
		if got := r.Received(); got != int64(50*h.Count) {
			t.Errorf("receiver got %d items, want %d", got, 50*h.Count)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Run("refused is backpressure", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Set(AnswerRefused)
		checkFailure(t, "a refused answer (503, UNAVAILABLE)", send(d, 1), pipebench.ClassRefused, false)
		r.Set(AnswerError)
		checkFailure(t, "an error answer (400, INVALID_ARGUMENT)", send(d, 2), pipebench.ClassError, false)
	})
	t.Run("slow answer is a timeout", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Set(AnswerSlow)
		start := time.Now()
		checkFailure(t, "a slow answer", send(d, 1), pipebench.ClassTimeout, false)
		if el := time.Since(start); el >= r.Slow {
			t.Errorf("the timeout took %v, as long as the receiver's delay", el)
		}
	})
	t.Run("receiver gone is refused and unreached, not a panic", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Close()
		// The first sends may fail on connections the receiver closed;
		// once they are gone, reconnecting is refused.
		var o pipebench.Outcome
		for i, end := 0, time.Now().Add(10*time.Second); i < 50 && time.Now().Before(end); i++ {
			if o = send(d, uint64(1+i)); o.Class == pipebench.ClassOK {
				t.Fatalf("send to a closed receiver classified ok")
			}
			if o.Message == "" {
				t.Errorf("a failed send without a message: %+v", o)
			}
			if o.Class == pipebench.ClassRefused && o.Unreached {
				break
			}
		}
		checkFailure(t, "a send to a closed receiver", o, pipebench.ClassRefused, true)
	})
	t.Run("refused port: Start fails clearly or sends are refused and unreached", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		d := h.New(t, target(h, addr))
		if err := d.Start(context.Background()); err != nil {
			if !strings.Contains(err.Error(), "refused") {
				t.Errorf("Start against a closed port: %v; want an error saying the connection was refused", err)
			}
			return
		}
		defer d.Shutdown(context.Background())
		o := send(d, 1)
		checkFailure(t, "a send to a closed port", o, pipebench.ClassRefused, true)
		if o.Detail != "connection refused" || !strings.Contains(o.Message, "refused") {
			t.Errorf("a send to a closed port: %+v", o)
		}
	})
	t.Run("accepts and never answers is a timeout, reached", func(t *testing.T) {
		addr := SilentServer(t)
		d := h.New(t, target(h, addr))
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
	for _, m := range h.Mismatches {
		t.Run("mismatch: "+m.Name, func(t *testing.T) {
			d := h.New(t, m.Start(t))
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
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Set(AnswerSlow)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		b := h.Generator.Next(1, h.Count, time.Now())
		done := make(chan pipebench.Outcome, 1)
		go func() { done <- d.Send(ctx, &b) }()
		select {
		case o := <-done:
			if o.Class == pipebench.ClassOK {
				t.Errorf("cancelled send classified ok")
			}
		case <-time.After(r.Slow + 5*time.Second):
			t.Fatal("send with a cancelled context hung")
		}
	})
	t.Run("concurrent sends", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
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
		if got := r.Received(); got != int64(640*h.Count) {
			t.Errorf("receiver got %d, want %d", got, 640*h.Count)
		}
	})
}

func target(h Harness, addr string) string {
	if h.Target == nil {
		return addr
	}
	return h.Target(addr)
}

// SilentServer accepts connections on loopback, reads what comes and never
// answers; it closes them when the test ends. It returns its host:port.
func SilentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	return ln.Addr().String()
}
