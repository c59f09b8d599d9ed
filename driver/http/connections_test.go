package httpdriver

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/conn/conncount"
	"github.com/pipebench/pipebench/internal/conn/fdlimit"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// connCounter is a real net/http server on loopback that counts the
// connections open now and the distinct connections that carried requests.
type connCounter struct {
	open conncount.Counter
	mu   sync.Mutex
	used map[string]bool
	srv  *http.Server
	addr string
}

func newConnCounter(t *testing.T) *connCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cc := &connCounter{used: map[string]bool{}, addr: ln.Addr().String()}
	cc.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cc.mu.Lock()
			cc.used[r.RemoteAddr] = true
			cc.mu.Unlock()
		}),
		ConnState: cc.open.ConnState,
	}
	go cc.srv.Serve(ln)
	t.Cleanup(func() { cc.srv.Close() })
	return cc
}

// started builds a driver of c aimed at target and starts it, failing the
// test when either fails; the driver is shut down when the test ends.
func started(t *testing.T, c *Config, target string) *Driver {
	t.Helper()
	d, err := New(*c, target)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, d.Start, d.Shutdown)
	return d
}

func (cc *connCounter) distinct() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.used)
}

// connections: 2000 opens 2,000 connections at Start and keeps them while
// a bounded number of requests is sent; the sends use every one of them.
func TestTwoThousandConnectionsOpenAndUsed(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 4,000 sockets")
	}
	const conns = 2000
	for _, pipeline := range []int{0, 4} {
		cc := newConnCounter(t)
		c := defaultConfig()
		c.Connections, c.Pipeline, c.Timeout = conns, pipeline, pipebench.Duration(10*time.Second)
		d, err := New(*c, "http://"+cc.addr+"/in")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := d.OpenConnections(); n != conns {
			t.Errorf("pipeline %d: OpenConnections after Start = %d, want %d", pipeline, n, conns)
		}
		if !testutil.Poll(15*time.Second, func() bool { return cc.open.Open() == conns }) {
			t.Errorf("pipeline %d: the server sees %d connections open, want %d", pipeline, cc.open.Open(), conns)
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for g := 0; g < 50; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2*conns/50; i++ {
					b := pipebench.Batch{Body: []byte("{}"), Count: 1}
					if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if failed.Load() > 0 {
			t.Errorf("pipeline %d: %d of %d sends failed", pipeline, failed.Load(), 2*conns)
		}
		if n := cc.distinct(); n != conns {
			t.Errorf("pipeline %d: %d sends went over %d distinct connections, want all %d", pipeline, 2*conns, n, conns)
		}
		if n, open := d.OpenConnections(), cc.open.Open(); n != conns || open != conns {
			t.Errorf("pipeline %d: after the sends the driver says %d open and the server sees %d, want %d", pipeline, n, open, conns)
		}
		d.Shutdown(context.Background())
		if !testutil.Poll(10*time.Second, func() bool { return cc.open.Open() == 0 }) {
			t.Errorf("pipeline %d: after Shutdown the server still sees %d connections", pipeline, cc.open.Open())
		}
		if n := d.OpenConnections(); n != 0 {
			t.Errorf("pipeline %d: OpenConnections after Shutdown = %d", pipeline, n)
		}
	}
}

// A limit on open files too low for the connections asked for fails Start
// with a message saying how to raise it.
func TestTooFewFilesFailsStart(t *testing.T) {
	_, hard := fdlimit.Current()
	if hard == 0 || hard+1000 > maxConnections {
		t.Skipf("the hard limit on open files (%d) is not below %d", hard, maxConnections)
	}
	c := defaultConfig()
	c.Connections = int(hard) + 1000
	d, err := New(*c, "http://127.0.0.1:9/")
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ulimit -n") || !strings.Contains(err.Error(), "connections") {
		t.Fatalf("Start with %d connections: %v", c.Connections, err)
	}
	if pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("exit code %d, want %d", pipebench.ExitCode(err), pipebench.ExitUsage)
	}
}

// OpenConnections counts what is really open: connections the server
// closed while idle stop counting before a send finds them closed, and a
// send opens its connection again.
func TestOpenConnectionsSeesServerClosedIdleConnections(t *testing.T) {
	// First as it is (the connections look idle for less than idleCheck:
	// the send finds out by writing), then with every send checking first.
	t.Run("found by writing", serverClosesIdle)
	t.Run("found by checking", func(t *testing.T) {
		defer func(d time.Duration) { idleCheck = d }(idleCheck)
		idleCheck = 0
		serverClosesIdle(t)
	})
}

func serverClosesIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var accepted []net.Conn
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				mu.Lock()
				accepted = append(accepted, c)
				mu.Unlock()
			}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := defaultConfig()
	c.Connections = 4
	d := started(t, c, "http://"+ln.Addr().String()+"/")
	if n := d.OpenConnections(); n != 4 {
		t.Fatalf("after Start %d open, want 4", n)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(accepted) == 4 }, "the server did not accept 4 connections")
	mu.Lock()
	for _, c := range accepted {
		c.Close()
	}
	mu.Unlock()
	testutil.Eventually(t, 10*time.Second, func() bool { return d.OpenConnections() == 0 }, "the server closed every connection; the driver still counts %d open", d.OpenConnections())
	for i := 0; i < 4; i++ {
		b := pipebench.Batch{Body: []byte("{}"), Count: 1}
		if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d on a connection the server closed: %+v", i, o)
		}
	}
	if n := d.OpenConnections(); n != 4 {
		t.Errorf("after a send on each, %d open, want 4", n)
	}
}

// singleThreaded starts a real HTTP/1.1 server on loopback that serves one
// connection at a time, as Python's http.server.HTTPServer does: an accept
// backlog of 5, every request of a connection answered in turn
// (keep-alive) until the client closes it, and only then the next
// connection accepted. It returns its address and its own count of the
// requests it answered.
func singleThreaded(t *testing.T) (string, *atomic.Int64) {
	ln := drivertest.ListenBacklog(t, 5)
	var served atomic.Int64
	drivertest.Serve(t, ln, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
				return
			}
			served.Add(1)
		}
	})
	return ln.Addr().String(), &served
}

// A single-threaded HTTP/1.1 server takes a few of 64 connections at once
// (the one it serves and the five its backlog holds): Start opens those
// and succeeds (it used to fail, "nothing reached the system under
// test"), the rest keep opening in the background, and the sends that
// reach the server are answered: as many ok as the server counts.
func TestSingleThreadedServerIsReached(t *testing.T) {
	addr, served := singleThreaded(t)
	c := defaultConfig()
	c.Connections, c.Timeout = 64, pipebench.Duration(time.Second)
	d, err := Factory().New(c, pipebench.Env{Target: "http://" + addr + "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start against a single-threaded server: %v", err)
	}
	cr := d.(pipebench.ConnectionReporter)
	if n := cr.OpenConnections(); n < 1 || n >= 64 {
		t.Errorf("after Start %d connections are open; want some, not all 64", n)
	}
	var ok, unreached atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2; i++ {
				b := pipebench.Batch{Body: []byte("{}"), Count: 1}
				switch o := d.Send(context.Background(), &b); {
				case o.Class == pipebench.ClassOK:
					ok.Add(1)
				case o.Unreached:
					unreached.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() < 1 || ok.Load() != served.Load() {
		t.Errorf("%d of 16 sends ok, the server answered %d; want at least one, the same number", ok.Load(), served.Load())
	}
	t.Logf("%d ok, %d unreached, %d connections open", ok.Load(), unreached.Load(), cr.OpenConnections())
}
