package command

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
	otlppayload "github.com/pipebench/pipebench/payload/otlp"
)

// command is a pipebench command running in the background until stop.
type command struct {
	out, errb bytes.Buffer
	cancel    context.CancelFunc
	done      chan int
}

func startCommand(t *testing.T, args ...string) *command {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &command{cancel: cancel, done: make(chan int, 1)}
	t.Cleanup(cancel)
	go func() { c.done <- runCLI(ctx, args, &c.out, &c.errb) }()
	return c
}

// stop cancels the command as Ctrl-C would and returns its exit code.
func (c *command) stop(t *testing.T) int {
	t.Helper()
	c.cancel()
	select {
	case code := <-c.done:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not stop")
		return -1
	}
}

// tracesRequest is an OTLP/HTTP protobuf body of n spans carrying pb.seq
// first..first+n-1 and a send time, as pipebench's generators write them.
func tracesRequest(t *testing.T, first, n int) []byte {
	t.Helper()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := 0; i < n; i++ {
		sp := spans.AppendEmpty()
		sp.SetName("op")
		sp.Attributes().PutInt(otlppayload.AttrSeq, int64(first+i))
		sp.Attributes().PutInt(otlppayload.AttrSent, time.Now().UnixNano())
	}
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// export posts body to addr's /v1/traces, retrying until the sink listens,
// and returns the status it answered.
func export(t *testing.T, addr string, body []byte) int {
	t.Helper()
	code := 0
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		code = resp.StatusCode
		return true
	}, "the sink never listened on %s", addr)
	return code
}

// sinkMetrics checks that addr's /metrics holds every line in want.
func sinkMetrics(t *testing.T, addr string, want ...string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if !strings.Contains(string(metrics), w) {
			t.Errorf("/metrics lacks %s:\n%s", w, metrics)
		}
	}
}

// `pipebench sink --otlp-http` is the OTLP sink on its own: it takes
// OTLP/HTTP exports, answers the injected faults, counts on its /metrics,
// and stops cleanly.
func TestSinkOTLPServesUntilStopped(t *testing.T) {
	addr := testutil.FreeAddr(t)
	// The whole run is an outage: every export is refused and nothing counts
	// as delivered.
	c := startCommand(t, "sink", "--otlp-http", addr, "--outage", "0s:1h", "--every", "1h")
	if code := export(t, addr, tracesRequest(t, 0, 5)); code != http.StatusServiceUnavailable {
		t.Fatalf("during the outage the sink answered %d, want 503 (stderr: %s)", code, c.errb.String())
	}
	sinkMetrics(t, addr, `pipebench_sink_items_total{outcome="faulted"} 5`, `pipebench_sink_requests_total{code="503"} 1`)
	if code := c.stop(t); code != 0 {
		t.Errorf("exit %d: %s", code, c.errb.String())
	}
	if !strings.Contains(c.out.String(), "http://"+addr+"/v1/{traces,metrics,logs} for OTLP/HTTP") {
		t.Errorf("banner: %s", c.out.String())
	}
}

func TestSinkOTLPDeliversAndRejectsMixedFlags(t *testing.T) {
	addr := testutil.FreeAddr(t)
	c := startCommand(t, "sink", "--otlp-http", addr, "--every", "1h")
	if code := export(t, addr, tracesRequest(t, 0, 7)); code != http.StatusOK {
		t.Fatalf("export answered %d", code)
	}
	sinkMetrics(t, addr, `pipebench_sink_items_total{outcome="delivered"} 7`)
	if code := c.stop(t); code != 0 {
		t.Errorf("exit %d: %s", code, c.errb.String())
	}
	// The final summary line counts the seven spans.
	if out := c.out.String(); !strings.Contains(out, "delivered 7 (") || !strings.Contains(out, "faulted 0  unmatched 0  duplicates 0") {
		t.Errorf("summary: %s", out)
	}

	var errb bytes.Buffer
	for _, args := range [][]string{
		{"sink", "--otlp-grpc", "127.0.0.1:0", "--listen", "127.0.0.1:0"},
		{"sink", "--otlp-http", "127.0.0.1:0", "--path", "/events"},
		{"sink", "--otlp-grpc", "no-port"},
	} {
		errb.Reset()
		if code := runCLI(context.Background(), args, io.Discard, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
		if !strings.Contains(errb.String(), "otlp") {
			t.Errorf("%v: the error does not say what to do: %s", args, errb.String())
		}
	}
}
