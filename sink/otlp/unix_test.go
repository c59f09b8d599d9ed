package otlpsink

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/unixsock"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
)

// Both listeners on Unix sockets: the collector's OTLP/gRPC client exports
// to unix:///…, and a real HTTP client dialing the other socket posts
// OTLP/HTTP; every span arrives once; the endpoints name the sockets.
func TestSinkOnUnixSockets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gsock, hsock := filepath.Join(dir, "g.sock"), filepath.Join(dir, "h.sock")
	cfg := Config{GRPCListen: "unix://" + gsock, HTTPListen: "unix://" + hsock}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rec := newArrivals()
	s := New(cfg, 1)
	testutil.Start(t, func(ctx context.Context) error { return s.Start(ctx, rec) }, s.Shutdown)
	if s.GRPCEndpoint() != "unix://"+gsock || s.HTTPEndpoint() != "unix://"+hsock || s.Endpoints()["grpc"] != "unix://"+gsock {
		t.Fatalf("endpoints %v", s.Endpoints())
	}
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	at := time.Unix(1_760_000_000, 42)

	// The collector's own OTLP/gRPC client, dialing unix:///….
	conn, err := grpc.NewClient(s.GRPCEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	b := gen.Next(1, 500, at)
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(b.Body); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := ptraceotlp.NewGRPCClient(conn).Export(cctx, req); err != nil {
		t.Fatalf("OTLP/gRPC over the socket: %v", err)
	}

	client := unixsock.HTTPClient(hsock, 5*time.Second)
	b = gen.Next(501, 500, at)
	hreq, _ := http.NewRequest(http.MethodPost, "http://sink/v1/traces", bytes.NewReader(b.Body))
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := client.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("OTLP/HTTP over the socket: HTTP %d", resp.StatusCode)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seqs) != 1000 || rec.sent[at.UnixNano()] != 1000 || rec.unmatched != 0 {
		t.Errorf("%d distinct seqs, %d with the send time, %d unmatched; want 1000", len(rec.seqs), rec.sent[at.UnixNano()], rec.unmatched)
	}
}
