package conncount

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// A client's count and a real server's count of the same connections
// agree: each counts from open to its first close, either side's.
func TestClientAndServerCountsAgree(t *testing.T) {
	var server, client Counter
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ConnState: server.ConnState}
	go srv.Serve(ln)
	defer srv.Close()
	dial := client.Dial((&net.Dialer{Timeout: time.Second}).DialContext)
	tr := &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 3, MaxConnsPerHost: 3}
	defer tr.CloseIdleConnections()
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		c, err := dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return server.Open() == 3 }, "the server counts %d open, want 3", server.Open())
	if client.Open() != 3 {
		t.Errorf("the client counts %d open, want 3", client.Open())
	}
	conns[0].Close()
	conns[0].Close() // a second Close does not count again
	if client.Open() != 2 {
		t.Errorf("after one closed the client counts %d, want 2", client.Open())
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return server.Open() == 2 }, "the server counts %d open, want 2", server.Open())
	srv.Close() // the server closes the rest
	testutil.Eventually(t, 5*time.Second, func() bool { return server.Open() == 0 }, "the server counts %d open after closing", server.Open())
	if Unwrap(conns[1]) == conns[1] {
		t.Error("Unwrap did not return the wrapped connection")
	}
	for _, c := range conns[1:] {
		c.Close()
	}
	if client.Open() != 0 {
		t.Errorf("the client counts %d open after closing all", client.Open())
	}
}
