package otelcol

import (
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// spanCatcher is a real OTLP/gRPC trace receiver on loopback that keeps
// every span it is sent, for a test to read what the collector exported.
type spanCatcher struct {
	ptraceotlp.UnimplementedGRPCServer
	mu    sync.Mutex
	spans []ptrace.Span
}

func (c *spanCatcher) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := req.Traces().ResourceSpans()
	for i := 0; i < rs.Len(); i++ {
		ss := rs.At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				s := ptrace.NewSpan()
				ss.At(j).Spans().At(k).CopyTo(s)
				// The resource's attributes ride along on the span, for
				// the test to read them in one place.
				rs.At(i).Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
					s.Attributes().PutStr("resource."+k, v.AsString())
					return true
				})
				c.spans = append(c.spans, s)
			}
		}
	}
	return ptraceotlp.NewExportResponse(), nil
}

func (c *spanCatcher) got() []ptrace.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans)
}

// A collector configuration as Kyma's users write one, with the contrib
// processors the embedded collector carries: attributes (an attribute
// inserted), filter (a span dropped), transform (a span's name and an
// attribute rewritten by OTTL), span (a name made from attributes),
// tail_sampling (every trace kept by an always_sample policy). What a real
// OTLP receiver behind the collector gets shows each one's effect.
func TestContribProcessorsRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	catcher := &spanCatcher{}
	srv := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(srv, catcher)
	go srv.Serve(lis)
	defer srv.Stop()

	col := `receivers:
  otlp:
    protocols:
      grpc: {endpoint: "${env:PIPEBENCH_OTLP_GRPC}"}
processors:
  attributes/env:
    actions: [{key: deployment.environment, value: loadtest, action: insert}]
  filter/drop:
    error_mode: ignore
    traces:
      span: ['name == "healthcheck"']
  transform/route:
    error_mode: ignore
    trace_statements:
      - context: span
        statements:
          - set(attributes["http.route"], "/users/{id}") where attributes["http.route"] == "/users/42"
          - set(name, "GET /users/{id}") where name == "GET /users/42"
  span/name:
    name: {from_attributes: [rpc.service, rpc.method], separator: "/"}
  tail_sampling:
    decision_wait: 200ms
    policies: [{name: all, type: always_sample}]
  batch: {timeout: 50ms}
exporters:
  otlp:
    endpoint: "${PIPEBENCH_SINK}"
    tls: {insecure: true}
service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus: {host: 127.0.0.1, port: "${env:PIPEBENCH_METRICS_PORT}"}
  pipelines:
    traces: {receivers: [otlp], processors: [filter/drop, attributes/env, transform/route, span/name, tail_sampling, batch], exporters: [otlp]}
`
	path := filepath.Join(t.TempDir(), "collector.yaml")
	if err := os.WriteFile(path, []byte(col), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := defaultConfig()
	cfg.ConfigFile = path
	if err := cfg.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	sut := startCollector(t, cfg, pipebench.Env{Target: lis.Addr().String(), Dir: t.TempDir()})

	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	add := func(name string, attrs ...string) {
		s := ss.Spans().AppendEmpty()
		s.SetName(name)
		s.SetTraceID([16]byte{1, byte(ss.Spans().Len())})
		s.SetSpanID([8]byte{2, byte(ss.Spans().Len())})
		for i := 0; i+1 < len(attrs); i += 2 {
			s.Attributes().PutStr(attrs[i], attrs[i+1])
		}
	}
	add("GET /users/42", "http.route", "/users/42")
	add("healthcheck")
	add("call", "rpc.service", "Greeter", "rpc.method", "Hello")
	cc, err := grpc.NewClient(sut.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := ptraceotlp.NewGRPCClient(cc).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return len(catcher.got()) >= 2 }, "the collector exported no 2 spans")
	spans := catcher.got()
	names := map[string]ptrace.Span{}
	for _, s := range spans {
		names[s.Name()] = s
		if v, ok := s.Attributes().Get("deployment.environment"); !ok || v.Str() != "loadtest" {
			t.Errorf("span %q: attributes processor did not insert deployment.environment: %v", s.Name(), s.Attributes().AsRaw())
		}
	}
	if len(spans) != 2 {
		t.Errorf("exported %d spans, want 2 (healthcheck dropped by filter): %v", len(spans), slices.Collect(maps.Keys(names)))
	}
	if _, ok := names["healthcheck"]; ok {
		t.Error("filter did not drop the healthcheck span")
	}
	route, ok := names["GET /users/{id}"]
	if !ok {
		t.Errorf("transform did not rename the span: %v", slices.Collect(maps.Keys(names)))
	} else if v, _ := route.Attributes().Get("http.route"); v.Str() != "/users/{id}" {
		t.Errorf("transform did not rewrite http.route: %q", v.Str())
	}
	if _, ok := names["Greeter/Hello"]; !ok {
		t.Errorf("span processor did not name the span from its attributes: %v", slices.Collect(maps.Keys(names)))
	}
}

// A configuration naming a component the embedded collector lacks fails
// validate, naming it and what the collector has, before anything starts.
func TestConfigFileComponentsChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "collector.yaml")
	os.WriteFile(path, []byte(`receivers: {otlp: {}, kafka: {}}
processors: {groupbyattrs: {}, attributes/x: {actions: []}, filter: {}}
exporters: {otlp: {}}
`), 0o600)
	cfg := defaultConfig()
	cfg.ConfigFile = path
	err := cfg.Validate()
	if err == nil {
		t.Fatal("validated")
	}
	msg := err.Error()
	for _, want := range []string{`config_file: receivers.kafka: the embedded collector ` + CollectorVersion + ` has no receiver "kafka"`,
		`processors.groupbyattrs`, "attributes, batch, filter, memory_limiter, resource, span, tail_sampling, transform", "command:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("want %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "attributes/x") || strings.Contains(msg, "processors.filter") {
		t.Errorf("a component the collector has is named:\n%s", msg)
	}
	cfg.Command = "true" // the user's own collector: not checked against ours
	if err := cfg.Validate(); err != nil {
		t.Errorf("with command: %v", err)
	}
}
