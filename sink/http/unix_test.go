package httpsink

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/unixsock"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
)

// The sink listens on a Unix socket: a real HTTP client dialing the socket
// posts events, each arrival is reported once, /metrics answers on the
// same socket, and the endpoint names the socket.
func TestSinkOnUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "sink.sock")
	if (&Config{Listen: "unix://" + sock, Path: "/", MaxBodyBytes: 1}).Validate() != nil {
		t.Fatal("unix:// refused by Validate")
	}
	s, c := start(t, Params{Listen: "unix://" + sock, Path: "/events"})
	if got := s.Endpoint(); got != "unix://"+sock {
		t.Fatalf("Endpoint() = %q, want unix://%s", got, sock)
	}
	client := unixsock.HTTPClient(sock, 5*time.Second)
	gen, err := payload.EventFactory().New(nil, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 20; seq++ {
		if code := postVia(t, client, "http://sink/events", gen.Next(seq, 1, time.Now())); code != http.StatusOK {
			t.Fatalf("POST over the socket: HTTP %d", code)
		}
	}
	if n, _ := c.Count(); n != 20 {
		t.Errorf("%d of 20 events arrived", n)
	}
	c.ExpectEachOnce(t, 1, 20, "seq")
	resp, err := client.Get("http://sink/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), `pipebench_sink_items_total{outcome="delivered"} 20`) {
		t.Errorf("/metrics over the socket lacks 20 delivered:\n%.600s", body.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket file is left after Shutdown: %v", err)
	}
}

// A socket file a killed run left behind is replaced; a regular file in
// the way, a relative path or a path too long for a socket is refused
// with the reason.
func TestUnixSocketAddresses(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	s, _ := start(t, Params{Listen: "unix://" + stale})
	if s.Endpoint() != "unix://"+stale {
		t.Errorf("over a stale socket: endpoint %q", s.Endpoint())
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	s2, _ := New(Params{Listen: "unix://" + file})
	if err := s2.Start(context.Background(), &testutil.Arrivals{}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a regular file: %v", err)
	}
	for _, bad := range []string{"unix://rel.sock", "unix:///" + strings.Repeat("x", 120)} {
		if err := (&Config{Listen: bad, Path: "/", MaxBodyBytes: 1}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "listen:") {
			t.Errorf("Validate(%q) = %v", bad, err)
		}
	}
}
