package drivertest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Narrow is a loopback listener in front of a real server that takes few
// connections at once, as a server with a small accept backlog that
// accepts slowly does (a single-threaded one): its accept backlog is 1, so
// the kernel completes two or three connects at a time and drops the
// connection requests beyond them (their connects wait for a retry of the
// SYN and time out), and it accepts one connection every NarrowPace, each
// forwarded to the server.
type Narrow struct {
	// Addr is the listener's host:port.
	Addr string
	open atomic.Int64
}

// NarrowPace is how often a Narrow listener accepts a connection.
const NarrowPace = 20 * time.Millisecond

// Open is the number of connections the listener accepted and forwards
// now: its own count, to check a driver's against.
func (n *Narrow) Open() int { return int(n.open.Load()) }

// NarrowListener starts a Narrow listener forwarding to upstream
// (host:port); it and its connections close when the test ends.
func NarrowListener(t *testing.T, upstream string) *Narrow {
	ln := ListenBacklog(t, 1)
	n := &Narrow{Addr: ln.Addr().String()}
	pace := time.NewTicker(NarrowPace)
	t.Cleanup(pace.Stop)
	Serve(t, ln, func(c net.Conn) {
		defer func() { // the next accept waits for its turn
			select {
			case <-pace.C:
			case <-t.Context().Done():
			}
		}()
		up, err := net.Dial("tcp", upstream)
		if err != nil {
			c.Close()
			return
		}
		n.open.Add(1)
		var once sync.Once
		end := func() {
			once.Do(func() {
				c.Close()
				up.Close()
				n.open.Add(-1)
			})
		}
		go func() { io.Copy(up, c); end() }()
		go func() { io.Copy(c, up); end() }()
	})
	return n
}

// FullListener starts a loopback listener that takes no connection: its
// accept backlog of 1 is filled by connections of its own and it never
// accepts, so a connect to it waits for a SYN retry and times out, as to
// a server that is wedged. It returns its host:port; it closes when the
// test ends.
func FullListener(t *testing.T) string {
	ln := ListenBacklog(t, 1)
	addr := ln.Addr().String()
	var fill []net.Conn
	t.Cleanup(func() {
		ln.Close()
		for _, c := range fill {
			c.Close()
		}
	})
	for i := 0; i < 16; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // full: a connect now times out
		}
		fill = append(fill, c)
	}
	t.Fatalf("the listener at %s took 16 connections with a backlog of 1", addr)
	return ""
}

// ListenBacklog listens on loopback (an ephemeral port) with an accept
// backlog of n, as a server that asks for a small one does (Python's
// socketserver asks for 5): the kernel then completes about n+1 connects
// that the server has not accepted yet and drops the connection requests
// beyond them. (listen(2) again on the listening socket sets the backlog,
// on Linux.) The caller closes it.
func ListenBacklog(t *testing.T, n int) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), n) }); err != nil || lerr != nil {
		ln.Close()
		t.Fatalf("set the accept backlog to %d: %v %v", n, err, lerr)
	}
	return ln
}
