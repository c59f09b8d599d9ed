package command

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// `pipebench sink --otlp-http unix:///…` listens on a Unix socket: a real
// HTTP client dialing the socket exports spans, they are counted as
// delivered on the socket's /metrics, and the banner names the socket.
func TestSinkOnUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "otlp.sock")
	c := startCommand(t, "sink", "--otlp-http", "unix://"+sock, "--every", "1h")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	body := tracesRequest(t, 0, 9)
	code := 0
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp, err := client.Post("http://sink/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return false
		}
		resp.Body.Close()
		code = resp.StatusCode
		return true
	}, "the sink never answered on %s", sock)
	if code != http.StatusOK {
		t.Fatalf("export over the socket answered %d", code)
	}
	resp, err := client.Get("http://sink/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `pipebench_sink_items_total{outcome="delivered"} 9`) {
		t.Errorf("/metrics over the socket:\n%.800s", metrics)
	}
	if code := c.stop(t); code != 0 {
		t.Errorf("exit %d: %s", code, c.errb.String())
	}
	if !strings.Contains(c.out.String(), "the socket unix://"+sock+" for OTLP/HTTP") {
		t.Errorf("banner: %s", c.out.String())
	}

	var errb bytes.Buffer
	for _, args := range [][]string{
		{"sink", "--listen", "unix://relative.sock"},
		{"sink", "--otlp-grpc", "unix://relative.sock"},
	} {
		errb.Reset()
		if code := runCLI(context.Background(), args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "unix:///") {
			t.Errorf("%v: exit %d, want 2 and a hint: %s", args, code, errb.String())
		}
	}
}

// A real OpenTelemetry Collector exports to the OTLP sink on a Unix
// socket: the sink's unix:///… endpoint is the collector's exporter
// target, and every span sent arrives.
func TestCollectorExportsToSinkOnUnixSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "uds.yaml")
	os.WriteFile(file, []byte(`name: collector-to-uds-sink
sut: {type: otelcol, signal: traces}
target: {driver: otlp}
workload: {generator: otlp-traces, batch: 50}
sink: {type: otlp, grpc_listen: "unix://`+filepath.Join(dir, "sink.sock")+`", http_listen: ""}
interval: 500ms
drain: 20s
phases:
  - {name: load, duration: 2s, rate: 500/s}
`), 0o644)
	out := filepath.Join(dir, "result.json")
	stdout, stderr, code := cli(t, "run", file, "-q", "--no-store", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := readResult(t, out)
	sent, _ := res.Total.Get("accepted")
	del, _ := res.Total.Get("delivered")
	lost, _ := res.Total.Get("lost")
	if sent < 900 || del != sent || lost != 0 {
		t.Errorf("accepted %g, delivered %g, lost %g: every span should reach the sink over the socket", sent, del, lost)
	}
}
