package drivertest

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SlowAnswer is how long the receivers here take over AnswerSlow: more
// than twice the timeout of about a second a harness gives its driver.
const SlowAnswer = 2 * time.Second

// Gate is the answer a receiver gives now, for the receivers of every
// protocol to give the suite's answers the same meaning. Safe for
// concurrent use; the zero value answers AnswerOK.
type Gate struct{ a atomic.Int32 }

// Set changes the answer from now on.
func (g *Gate) Set(a Answer) { g.a.Store(int32(a)) }

// Answer is the answer in force.
func (g *Gate) Answer() Answer { return Answer(g.a.Load()) }

// GRPC is the answer in force as a gRPC server's handler gives it:
// UNAVAILABLE for AnswerRefused, INVALID_ARGUMENT for AnswerError; for
// AnswerSlow it first waits SlowAnswer, and answers DEADLINE_EXCEEDED when
// ctx (the caller's deadline) ends sooner. nil means go on and accept.
func (g *Gate) GRPC(ctx context.Context) error {
	switch g.Answer() {
	case AnswerRefused:
		return status.Error(codes.Unavailable, "busy")
	case AnswerError:
		return status.Error(codes.InvalidArgument, "refused by the test")
	case AnswerSlow:
		if !wait(ctx) {
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return nil
}

// wait waits SlowAnswer, or until ctx ends (false).
func wait(ctx context.Context) bool {
	t := time.NewTimer(SlowAnswer)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Accept reads one request an HTTP receiver got (its body read whole):
// the items it carried, or why it cannot be read (answered 400).
type Accept func(r *http.Request, body []byte) (items int64, err error)

// HTTPReceiver starts a real net/http server on loopback, speaking
// HTTP/1.1 and h2c, that answers as the suite asks (AnswerRefused 503,
// AnswerError 400, AnswerSlow after SlowAnswer) and otherwise reads each
// request with accept and answers 200. Target is http://ADDR plus path.
// The server stops when the test ends.
func HTTPReceiver(t *testing.T, path string, accept Accept) Receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var items atomic.Int64
	var g Gate
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch g.Answer() {
		case AnswerRefused:
			w.WriteHeader(503)
			return
		case AnswerError:
			w.WriteHeader(400)
			return
		case AnswerSlow:
			if !wait(r.Context()) {
				return
			}
		}
		body, err := io.ReadAll(r.Body)
		var n int64
		if err == nil {
			n, err = accept(r, body)
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		items.Add(n)
	})
	srv := &http.Server{Handler: h2c.NewHandler(h, &http2.Server{}), ErrorLog: quiet}
	go srv.Serve(ln)
	var once sync.Once
	stop := func() { once.Do(func() { srv.Close() }) }
	t.Cleanup(stop)
	return Receiver{Target: "http://" + ln.Addr().String() + path, Addr: ln.Addr().String(),
		Received: items.Load, Set: g.Set, Close: stop, Slow: SlowAnswer}
}

// quiet drops a test server's log lines (the failed handshakes the
// mismatch tests cause on purpose).
var quiet = log.New(io.Discard, "", 0)

// TLSServer starts an HTTPS server on loopback that accepts every request
// and does not log the failed handshakes tests cause, and returns its
// host:port. It stops when the test ends.
func TLSServer(t *testing.T) string {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = quiet
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// HTTP1Server starts a plain HTTP/1.1 server on loopback (no h2c) that
// accepts every request, and returns its host:port. It stops when the
// test ends.
func HTTP1Server(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// Serve accepts connections on ln until the test ends and calls handle
// with each, in turn, on the accepting goroutine: a handle that starts a
// goroutine of its own and returns serves every connection at once, one
// that serves its connection first serves one at a time. ln and every
// connection it accepted are closed when the test ends.
func Serve(t *testing.T, ln net.Listener, handle func(c net.Conn)) {
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
			handle(c)
		}
	}()
}

// GRPCServer starts a real gRPC server on loopback with no service (every
// call is UNIMPLEMENTED) and returns its host:port; it stops when the test
// ends. For a driver of another protocol aimed at a gRPC port, and for
// opening gRPC connections.
func GRPCServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// SilentServer accepts connections on loopback, reads what comes and never
// answers; it closes them when the test ends. It returns its host:port.
func SilentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, ln, func(c net.Conn) { go io.Copy(io.Discard, c) })
	return ln.Addr().String()
}
