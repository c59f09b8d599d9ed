package httppost

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// Posts to a real server on loopback: the body arrives whole, the answer
// is classified by the rules, the transport is done with the body once the
// answer is read, and the pool holds at most Conns connections.
func TestPost(t *testing.T) {
	var got atomic.Int64
	var status atomic.Int32
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Add(int64(len(b)))
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	c := New(Params{Conns: 2, Timeout: 5 * time.Second, Rules: netclass.OTLPStatuses})
	defer c.CloseIdle()
	body := make([]byte, 1000)
	for i := 0; i < 10; i++ {
		o, released := c.Post(context.Background(), srv.URL, http.Header{}, body)
		if o.Class != pipebench.ClassOK || !released {
			t.Fatalf("post %d: %+v, released %v", i, o, released)
		}
	}
	if got.Load() != 10000 {
		t.Errorf("the server got %d bytes, want 10000", got.Load())
	}
	if n := c.Open(); n < 1 || n > 2 {
		t.Errorf("%d connections open, want 1 or 2", n)
	}
	status.Store(502)
	if o, _ := c.Post(context.Background(), srv.URL, http.Header{}, body); o.Class != pipebench.ClassRefused || o.Code != 502 {
		t.Errorf("a 502 under the OTLP rules: %+v", o)
	}
	c.CloseIdle()
	if n := c.Open(); n != 0 {
		t.Errorf("%d connections open after CloseIdle", n)
	}
	srv.Close()
	if o, _ := c.Post(context.Background(), srv.URL, http.Header{}, body); o.Class != pipebench.ClassRefused || !o.Unreached {
		t.Errorf("a post to a closed server: %+v", o)
	}
}
