// Package conncount counts the connections a driver holds open, for the
// connections_open KPI (pipebench.ConnectionReporter), the same way for
// every driver: a connection counts from the moment it is opened until it
// is first closed, on either side of it. A Counter wraps what a client
// dials (Wrap, Dial) or follows what a net/http server accepts
// (ConnState).
package conncount

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// Counter counts open connections. The zero value is ready; it is safe for
// concurrent use.
type Counter struct{ n atomic.Int64 }

// Open is the number of connections open now.
func (c *Counter) Open() int { return int(c.n.Load()) }

// Wrap counts conn as open and returns it wrapped so that its first Close
// takes it off the count (later Closes only close).
func (c *Counter) Wrap(conn net.Conn) net.Conn {
	c.n.Add(1)
	return &counted{Conn: conn, c: c}
}

// Dial returns a dial function (the shape of net/http's
// Transport.DialContext) that dials with dial and counts what it opens.
func (c *Counter) Dial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return c.Wrap(conn), nil
	}
}

// ConnState follows a net/http server's connections (its ConnState hook):
// a new connection counts until it is closed or hijacked.
func (c *Counter) ConnState(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.n.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.n.Add(-1)
	}
}

// counted is a connection on a Counter.
type counted struct {
	net.Conn
	c    *Counter
	once sync.Once
}

// Close closes the connection, taking it off the count the first time.
func (k *counted) Close() error {
	k.once.Do(func() { k.c.n.Add(-1) })
	return k.Conn.Close()
}

// Unwrap returns the connection a Counter wrapped in conn, or conn itself
// when no Counter wrapped it (a TLS connection stays one).
func Unwrap(conn net.Conn) net.Conn {
	if k, ok := conn.(*counted); ok {
		return k.Conn
	}
	return conn
}
