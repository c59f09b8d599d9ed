package main

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

	otlppayload "github.com/pipebench/pipebench/payload/otlp"
)

// tracesRequest is an OTLP/HTTP protobuf body of spans carrying pb.seq
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

// `pipebench sink --otlp-http` is the OTLP sink on its own: it takes
// OTLP/HTTP exports, counts the spans it matched on its /metrics, answers
// the injected faults, and stops cleanly.
func TestSinkOTLPServesUntilStopped(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"sink", "--otlp-http", addr, "--outage", "0s:1h", "--every", "1h"}, &out, &errb)
	}()
	post := func(body []byte) int {
		resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The whole run is an outage: every export is refused and nothing counts
	// as delivered.
	deadline := time.Now().Add(10 * time.Second)
	code := 0
	for code == 0 && time.Now().Before(deadline) {
		if code = post(tracesRequest(t, 0, 5)); code == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if code != http.StatusServiceUnavailable {
		t.Fatalf("during the outage the sink answered %d, want 503 (stderr: %s)", code, errb.String())
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`pipebench_sink_items_total{outcome="faulted"} 5`, `pipebench_sink_requests_total{code="503"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sink did not stop")
	}
	if !strings.Contains(out.String(), "OTLP/HTTP on http://"+addr) {
		t.Errorf("banner: %s", out.String())
	}
}

func TestSinkOTLPDeliversAndRejectsMixedFlags(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- execute(ctx, []string{"sink", "--otlp-http", addr, "--every", "1h"}, &out, &errb) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(tracesRequest(t, 0, 7)))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("export answered %d", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink never listened: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `pipebench_sink_items_total{outcome="delivered"} 7`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, metrics)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	// The final summary line counts the seven spans.
	if !strings.Contains(out.String(), "delivered 7 (") || !strings.Contains(out.String(), "faulted 0  unmatched 0  duplicates 0") {
		t.Errorf("summary: %s", out.String())
	}

	for _, args := range [][]string{
		{"sink", "--otlp-grpc", "127.0.0.1:0", "--listen", "127.0.0.1:0"},
		{"sink", "--otlp-http", "127.0.0.1:0", "--path", "/events"},
		{"sink", "--otlp-grpc", "no-port"},
	} {
		errb.Reset()
		if code := execute(context.Background(), args, io.Discard, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
		if !strings.Contains(errb.String(), "otlp") {
			t.Errorf("%v: the error does not say what to do: %s", args, errb.String())
		}
	}
}
