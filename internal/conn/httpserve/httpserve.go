// Package httpserve serves an http.Handler on a listener in a goroutine of
// its own and stops it, waiting for that goroutine: the shape shared by the
// loopback HTTP endpoints of sinks and systems under test (a receiver, an
// attach endpoint, a /metrics page).
package httpserve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ReadHeaderTimeout bounds how long a client may take to send a request's
// header.
const ReadHeaderTimeout = 10 * time.Second

// Server is a handler served on a listener until Shutdown. Its methods
// are safe to call from several goroutines; a nil *Server is one that was
// never started.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Serve serves h on ln, which the Server then owns, until Shutdown.
func Serve(ln net.Listener, h http.Handler) *Server {
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// Listen listens on the TCP address addr (host:port; port 0 picks a free
// one) and serves h there until Shutdown. The error says which address
// could not be listened on.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return Serve(ln, h), nil
}

// Listener is the listener served.
func (s *Server) Listener() net.Listener { return s.ln }

// URL is http://HOST:PORT followed by path, HOST:PORT the listener's
// address.
func (s *Server) URL(path string) string { return "http://" + s.ln.Addr().String() + path }

// Shutdown stops accepting, waits for the requests in flight to be
// answered (until ctx ends: its error is then returned, and the
// connections still open are left to end by themselves) and for the
// serving goroutine to return. It does nothing on a nil Server.
func (s *Server) Shutdown(ctx context.Context) error {
	if s == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}

// Close closes the listener and every connection at once, without
// waiting for the requests in flight, and waits for the serving goroutine
// to return. It does nothing on a nil Server.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	err := s.srv.Close()
	<-s.done
	return err
}
