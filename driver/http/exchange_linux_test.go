//go:build linux

package httpdriver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/rxstamp"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// An answer read late is stamped with when it arrived: rxstamp.Recv gives
// the kernel's receive time, and arrived puts it on the monotonic clock,
// before the read by the time it waited.
func TestRecvStampedTellsWhenDataArrived(t *testing.T) {
	c, peer := testutil.ConnPair(t, "tcp", "127.0.0.1:0")
	raw := rawConn(c)
	if !rxstamp.Enable(raw) {
		t.Fatal("the socket refused SO_TIMESTAMPNS")
	}
	// The kernel turns receive timestamps on a moment after the first
	// socket asks (when no other socket had): until bytes come stamped,
	// exchange a few without a check.
	var buf [16]byte
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := peer.Write([]byte("warm")); err != nil {
			t.Fatal(err)
		}
		var rx int64
		var rerr error
		raw.Read(func(fd uintptr) bool {
			_, rx, rerr = rxstamp.Recv(int(fd), buf[:])
			return rerr != syscall.EAGAIN
		})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if rx != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no receive timestamp on any read for 5 s")
		}
	}
	sent := time.Now()
	if _, err := peer.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	// The bytes are in the socket: read them 30 ms later, as a busy
	// generator would.
	if !readable(t, raw) {
		t.Fatal("the bytes written never became readable")
	}
	time.Sleep(30 * time.Millisecond)
	var n int
	var rx int64
	var rerr error
	raw.Read(func(fd uintptr) bool {
		n, rx, rerr = rxstamp.Recv(int(fd), buf[:])
		return true
	})
	read := time.Now()
	if rerr != nil || n != 4 {
		t.Fatalf("read %d bytes: %v", n, rerr)
	}
	at := rxstamp.Arrived(rx, read)
	if at.IsZero() {
		t.Fatalf("no receive timestamp (rx %d)", rx)
	}
	if at.Before(sent) || read.Sub(at) < 30*time.Millisecond {
		t.Errorf("arrived %v after the write and %v before the read; want at or after the write and 30 ms or more before the read", at.Sub(sent), read.Sub(at))
	}
}

// readable waits until raw has bytes to read, for up to 5 s.
func readable(t *testing.T, raw syscall.RawConn) bool {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		raw.Control(func(fd uintptr) {
			var b [1]byte
			n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		})
		if n > 0 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// A request over plain TCP reports when its answer arrived, between its
// write and the send's return, pipelined or not; with kernel_timestamps
// off, it does not.
// (The kernel may stamp nothing for a moment after the first socket of
// the machine asks: it turns stamping on from a work queue, which a busy
// machine runs late. The sends go on until one is stamped, for up to 10 s.)
func TestSendReportsWhenTheAnswerArrived(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	for _, tc := range []struct {
		stamp    bool
		pipeline int
	}{{true, 0}, {false, 0}, {true, 4}, {false, 4}} {
		stamp := tc.stamp
		c := defaultConfig()
		c.Connections, c.KernelTimestamps, c.Pipeline = 1, stamp, tc.pipeline
		d, err := New(*c, srv.URL+"/in")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		stamped := 0
		until := time.Now().Add(10 * time.Second)
		for i := 0; i < 3 || (stamp && stamped == 0 && time.Now().Before(until)); i++ {
			o := d.Send(context.Background(), &pipebench.Batch{Body: []byte("{}"), Count: 1})
			ended := time.Now()
			if o.Class != pipebench.ClassOK {
				t.Fatalf("pipeline %d, send %d: %+v", tc.pipeline, i, o)
			}
			if o.Answered.IsZero() {
				continue
			}
			stamped++
			if !stamp {
				t.Errorf("pipeline %d, send %d: kernel_timestamps off, but answered is set", tc.pipeline, i)
			} else if o.Answered.Before(o.Written) || o.Answered.After(ended) {
				t.Errorf("pipeline %d, send %d: answered %v after the write, %v before the return; want within", tc.pipeline, i, o.Answered.Sub(o.Written), ended.Sub(o.Answered))
			}
		}
		if stamp && stamped == 0 {
			t.Errorf("pipeline %d: no answer was stamped in 10 s", tc.pipeline)
		}
		d.Shutdown(context.Background())
	}
}
