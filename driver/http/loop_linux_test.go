//go:build linux

package httpdriver

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// A body far larger than a socket's send buffer goes out in several writes
// (the rest when the socket takes it, on the loop), and each arrives
// whole: the server counts every byte.
func TestLoopLargeBodiesArriveWhole(t *testing.T) {
	var got atomic.Int64
	d, stop := startLoopDriver(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Add(n)
	}, func(c *Config) { c.Connections = 2 })
	defer stop()
	const sends, size = 6, 8 << 20
	body := make([]byte, size)
	batches := make([]pipebench.Batch, sends)
	for i := range batches {
		batches[i] = pipebench.Batch{Body: body, Count: 1}
	}
	for i, o := range batchOutcomes(t, d, batches, 60*time.Second) {
		if o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	if n := got.Load(); n != sends*size {
		t.Errorf("the server received %d body bytes, want %d", n, sends*size)
	}
}

// A server that closes each connection right after its answer, without
// saying so (no Connection: close): the next send on that connection finds
// it closed before any byte of its answer and is sent again once on a new
// connection, so every send is answered ok, and the server answers each
// exactly once.
func TestLoopResendsOnceOnAConnectionClosedMeanwhile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var answered atomic.Int64
	drivertest.Serve(t, ln, func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		answered.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	c := defaultConfig()
	c.Connections = 1
	d := started(t, c, "http://"+ln.Addr().String()+"/")
	const sends = 20
	for i := 0; i < sends; i++ {
		b := pipebench.Batch{Body: []byte(strconv.Itoa(i)), Count: 1}
		if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	if n := answered.Load(); n != sends {
		t.Errorf("the server answered %d requests, want %d", n, sends)
	}
}

// The pacer's sends read the answers that came since the previous one
// (the loops do not wait on their sockets meanwhile) and, once no send
// comes, the loops read the rest: every send is answered, each timed when
// its answer reached the machine, whichever goroutine read it. With
// kernel_timestamps off the reads are never deferred: the same holds.
func TestLoopPacedSendsReadAnswersAtTheirWakeUps(t *testing.T) {
	for _, stamp := range []bool{true, false} {
		var received atomic.Int64
		d, stop := startLoopDriver(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			received.Add(1)
		}, func(c *Config) { c.Connections, c.KernelTimestamps = 4, stamp })
		const sends = 100
		type answer struct {
			o      pipebench.Outcome
			ended  time.Time
			bySend bool
		}
		outs := make(chan answer, sends)
		var sending atomic.Bool
		batches := make([]pipebench.Batch, sends)
		for i := range batches {
			batches[i] = pipebench.Batch{Body: []byte("{}"), Count: 1}
			sending.Store(true)
			d.sendAsync(context.Background(), &batches[i], func(_ time.Time, o pipebench.Outcome) {
				outs <- answer{o, time.Now(), sending.Load()}
			})
			sending.Store(false)
			// The next send comes once the server has this one: its answer
			// is on its way, for the next send (or the loop) to read.
			testutil.Eventually(t, 10*time.Second, func() bool { return received.Load() > int64(i) }, "the server received %d of %d requests", received.Load(), i+1)
		}
		bySend, stamped := 0, 0
		for i := 0; i < sends; i++ {
			select {
			case a := <-outs:
				if a.o.Class != pipebench.ClassOK {
					t.Fatalf("stamp %v, send: %+v", stamp, a.o)
				}
				if a.bySend {
					bySend++
				}
				if a.o.Answered.IsZero() {
					continue
				}
				stamped++
				if !stamp {
					t.Errorf("kernel_timestamps off, but answered is set")
				} else if a.o.Answered.Before(a.o.Written) || a.o.Answered.After(a.ended) {
					t.Errorf("answered %v after the write, %v before it was reported; want within", a.o.Answered.Sub(a.o.Written), a.ended.Sub(a.o.Answered))
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("stamp %v: %d of %d sends answered in 30 s", stamp, i, sends)
			}
		}
		t.Logf("kernel timestamps %v: %d of %d answers read by the next send, %d stamped", stamp, bySend, sends, stamped)
		stop()
	}
}

// startLoopDriver starts a server with handler on loopback and a started
// driver aimed at it, set by config; it skips the test where there are no
// event loops. stop shuts both down.
func startLoopDriver(t *testing.T, handler http.HandlerFunc, config func(*Config)) (d *Driver, stop func()) {
	t.Helper()
	srv := &http.Server{Handler: handler}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	c := defaultConfig()
	config(c)
	if d, err = New(*c, "http://"+ln.Addr().String()+"/"); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	if !d.h1.evented {
		srv.Close()
		t.Skip("no event loops here")
	}
	if err := d.Start(context.Background()); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	return d, func() {
		d.Shutdown(context.Background())
		srv.Close()
	}
}
