// Package otlpdriver sends OTLP traces, metrics and logs over gRPC or
// HTTP/protobuf. The signal is taken from the batch: an *otlpgen.Encoded
// (an encoded export request, sent as it is: over gRPC through a codec that
// passes the bytes through) or ptrace.Traces, pmetric.Metrics or plog.Logs
// (sent with the collector's own pdata clients).
package otlpdriver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // registers the gzip compressor
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipebench/pipebench"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
)

// The gRPC methods of the OTLP export services.
const (
	methodTraces  = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	methodMetrics = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
	methodLogs    = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
)

// raw is an encoded protobuf message, for rawCodec.
type raw struct{ b []byte }

// rawCodec sends a *raw's bytes as they are and keeps the answer's bytes;
// anything else goes to the registered proto codec. Its name is "proto", so
// the request is an ordinary application/grpc+proto call.
type rawCodec struct{}

var protoCodec = encoding.GetCodecV2("proto")

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*raw); ok {
		return mem.BufferSlice{mem.SliceBuffer(r.b)}, nil
	}
	return protoCodec.Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*raw); ok {
		r.b = data.Materialize()
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

var forceRaw = grpc.ForceCodecV2(rawCodec{})

// Config configures the OTLP driver.
type Config struct {
	// Endpoint is host:port for gRPC, a base URL for HTTP; empty means the
	// runner's target.
	Endpoint      string                      `yaml:"endpoint" json:"endpoint,omitempty"`
	Protocol      string                      `yaml:"protocol" json:"protocol"`       // grpc | http
	Compression   string                      `yaml:"compression" json:"compression"` // none | gzip
	Timeout       pipebench.Duration          `yaml:"timeout" json:"timeout"`
	Headers       map[string]string           `yaml:"headers" json:"headers,omitempty"`
	SecretHeaders map[string]pipebench.Secret `yaml:"secret_headers" json:"secret_headers,omitempty"`
	// Connections is the number of gRPC connections used round-robin, or
	// the HTTP keep-alive pool size.
	Connections int `yaml:"connections" json:"connections"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Protocol != "grpc" && c.Protocol != "http" {
		errs = append(errs, fmt.Errorf("protocol: %q is not grpc or http", c.Protocol))
	}
	if c.Compression != "none" && c.Compression != "gzip" {
		errs = append(errs, fmt.Errorf("compression: %q is not none or gzip", c.Compression))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	if c.Connections < 1 {
		errs = append(errs, fmt.Errorf("connections: must be at least 1"))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "otlp" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	def := func() *Config {
		return &Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(5 * time.Second), Connections: 2}
	}
	return pipebench.Factory[pipebench.Driver]{
		Name:      "otlp",
		Doc:       "OTLP traces, metrics and logs over gRPC or HTTP/protobuf",
		NewConfig: func() any { return def() },
		New: func(cfg any, env pipebench.Env) (pipebench.Driver, error) {
			c, ok := cfg.(*Config)
			if !ok || c == nil {
				c = def()
			}
			return New(*c, env.Target)
		},
	}
}

// Driver sends OTLP. Send is safe for concurrent use.
type Driver struct {
	cfg     Config
	conns   []*grpc.ClientConn
	traces  []ptraceotlp.GRPCClient
	metrics []pmetricotlp.GRPCClient
	logs    []plogotlp.GRPCClient
	next    atomic.Uint64
	http    *http.Client
	base    string
	md      metadata.MD
	headers http.Header
}

var _ pipebench.Driver = (*Driver)(nil)

// New builds a driver; target is used when cfg.Endpoint is empty. For gRPC
// an http:// target is reduced to its host:port.
func New(cfg Config, target string) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = target
	}
	if cfg.Endpoint == "" {
		return nil, pipebench.UsageError("the otlp driver has no endpoint", "set target.endpoint, or add a sut or a sink", nil)
	}
	d := &Driver{cfg: cfg, md: metadata.MD{}, headers: http.Header{}}
	for k, v := range cfg.Headers {
		d.md.Append(strings.ToLower(k), v)
		d.headers.Set(k, v)
	}
	for k, v := range cfg.SecretHeaders {
		d.md.Append(strings.ToLower(k), v.Reveal())
		d.headers.Set(k, v.Reveal())
	}
	if cfg.Protocol == "http" {
		base := cfg.Endpoint
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		if _, err := url.Parse(base); err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("endpoint %q is not a URL", cfg.Endpoint), "", err)
		}
		d.base = strings.TrimSuffix(base, "/")
		d.http = &http.Client{Timeout: cfg.Timeout.D(), Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Connections, MaxConnsPerHost: cfg.Connections}}
		return d, nil
	}
	hostport := cfg.Endpoint
	if u, err := url.Parse(hostport); err == nil && u.Host != "" {
		hostport = u.Host
	}
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("endpoint %q is not host:port", cfg.Endpoint), "a gRPC endpoint looks like 127.0.0.1:4317", nil)
	}
	for i := 0; i < cfg.Connections; i++ {
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if cfg.Compression == "gzip" {
			opts = append(opts, grpc.WithDefaultCallOptions(grpc.UseCompressor("gzip")))
		}
		cc, err := grpc.NewClient(hostport, opts...)
		if err != nil {
			return nil, fmt.Errorf("otlp driver: %w", err)
		}
		d.conns = append(d.conns, cc)
		d.traces = append(d.traces, ptraceotlp.NewGRPCClient(cc))
		d.metrics = append(d.metrics, pmetricotlp.NewGRPCClient(cc))
		d.logs = append(d.logs, plogotlp.NewGRPCClient(cc))
	}
	return d, nil
}

// Start implements pipebench.Driver.
func (d *Driver) Start(context.Context) error { return nil }

// Shutdown closes the connections.
func (d *Driver) Shutdown(context.Context) error {
	for _, c := range d.conns {
		c.Close()
	}
	if d.http != nil {
		d.http.CloseIdleConnections()
	}
	return nil
}

// Send implements pipebench.Driver.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout.D())
	defer cancel()
	if d.http != nil {
		return d.sendHTTP(ctx, b)
	}
	if len(d.md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, d.md)
	}
	i := d.next.Add(1) % uint64(len(d.conns))
	var err error
	rejected := int64(0)
	switch data := b.Data.(type) {
	case *otlpgen.Encoded:
		rejected, err = d.sendRaw(ctx, d.conns[i], data)
		if err != nil {
			// The transport may still hold the bytes (a deadline, a
			// reset): they must not be reused.
			data.Abandon()
		}
	case ptrace.Traces:
		var resp ptraceotlp.ExportResponse
		resp, err = d.traces[i].Export(ctx, ptraceotlp.NewExportRequestFromTraces(data))
		if err == nil {
			rejected = resp.PartialSuccess().RejectedSpans()
		}
	case pmetric.Metrics:
		var resp pmetricotlp.ExportResponse
		resp, err = d.metrics[i].Export(ctx, pmetricotlp.NewExportRequestFromMetrics(data))
		if err == nil {
			rejected = resp.PartialSuccess().RejectedDataPoints()
		}
	case plog.Logs:
		var resp plogotlp.ExportResponse
		resp, err = d.logs[i].Export(ctx, plogotlp.NewExportRequestFromLogs(data))
		if err == nil {
			rejected = resp.PartialSuccess().RejectedLogRecords()
		}
	default:
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: fmt.Sprintf("not OTLP data: %T", b.Data)}
	}
	if err != nil {
		return classifyGRPC(err)
	}
	if rejected > 0 {
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "partial"}
	}
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

// sendRaw sends an encoded request and returns the rejected items of the
// answer's partial success.
func (d *Driver) sendRaw(ctx context.Context, cc *grpc.ClientConn, e *otlpgen.Encoded) (int64, error) {
	var resp raw
	switch e.Signal {
	case otlpgen.SignalTraces:
		if err := cc.Invoke(ctx, methodTraces, &raw{e.Body}, &resp, forceRaw); err != nil {
			return 0, err
		}
		r := ptraceotlp.NewExportResponse()
		if err := r.UnmarshalProto(resp.b); err != nil {
			return 0, err
		}
		return r.PartialSuccess().RejectedSpans(), nil
	case otlpgen.SignalMetrics:
		if err := cc.Invoke(ctx, methodMetrics, &raw{e.Body}, &resp, forceRaw); err != nil {
			return 0, err
		}
		r := pmetricotlp.NewExportResponse()
		if err := r.UnmarshalProto(resp.b); err != nil {
			return 0, err
		}
		return r.PartialSuccess().RejectedDataPoints(), nil
	case otlpgen.SignalLogs:
		if err := cc.Invoke(ctx, methodLogs, &raw{e.Body}, &resp, forceRaw); err != nil {
			return 0, err
		}
		r := plogotlp.NewExportResponse()
		if err := r.UnmarshalProto(resp.b); err != nil {
			return 0, err
		}
		return r.PartialSuccess().RejectedLogRecords(), nil
	}
	return 0, status.Error(codes.InvalidArgument, "unknown OTLP signal")
}

// classifyGRPC maps a gRPC status to an outcome class.
func classifyGRPC(err error) pipebench.Outcome {
	st, _ := status.FromError(err)
	o := pipebench.Outcome{Code: int(st.Code()), Detail: st.Code().String()}
	switch st.Code() {
	case codes.Unavailable, codes.ResourceExhausted:
		o.Class = pipebench.ClassRefused
	case codes.DeadlineExceeded:
		o.Class = pipebench.ClassTimeout
	default:
		o.Class = pipebench.ClassError
	}
	if strings.Contains(err.Error(), "connection refused") {
		o.Class, o.Detail = pipebench.ClassError, "connection refused"
	}
	return o
}

func (d *Driver) sendHTTP(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	var body []byte
	var err error
	var path string
	var enc *otlpgen.Encoded
	switch data := b.Data.(type) {
	case *otlpgen.Encoded:
		enc, body = data, data.Body
		switch data.Signal {
		case otlpgen.SignalTraces:
			path = "/v1/traces"
		case otlpgen.SignalMetrics:
			path = "/v1/metrics"
		case otlpgen.SignalLogs:
			path = "/v1/logs"
		default:
			return pipebench.Outcome{Class: pipebench.ClassError, Detail: "unknown OTLP signal"}
		}
	case ptrace.Traces:
		path = "/v1/traces"
		body, err = ptraceotlp.NewExportRequestFromTraces(data).MarshalProto()
	case pmetric.Metrics:
		path = "/v1/metrics"
		body, err = pmetricotlp.NewExportRequestFromMetrics(data).MarshalProto()
	case plog.Logs:
		path = "/v1/logs"
		body, err = plogotlp.NewExportRequestFromLogs(data).MarshalProto()
	default:
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: fmt.Sprintf("not OTLP data: %T", b.Data)}
	}
	if err != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "marshal"}
	}
	var rd io.Reader = bytes.NewReader(body)
	var tracked *trackedBody
	if d.cfg.Compression == "gzip" {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write(body)
		zw.Close()
		rd = &zb
	} else if enc != nil {
		// The transport may read the body after Do returned (an early
		// answer, an error); the bytes are reused only once it closed it.
		tracked = &trackedBody{Reader: bytes.NewReader(body)}
		rd = tracked
		defer func() {
			if !tracked.closed.Load() {
				enc.Abandon()
			}
		}()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+path, rd)
	if err != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "bad request"}
	}
	if tracked != nil {
		req.ContentLength = int64(len(body))
	}
	req.Header = d.headers.Clone()
	req.Header.Set("Content-Type", "application/x-protobuf")
	if d.cfg.Compression == "gzip" {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := d.http.Do(req)
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "timeout"}
		}
		if strings.Contains(err.Error(), "connection refused") {
			return pipebench.Outcome{Class: pipebench.ClassError, Detail: "connection refused"}
		}
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "transport"}
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return pipebench.Outcome{Class: pipebench.ClassOK, Code: c}
	case c == 429 || c == 503 || c == 502:
		return pipebench.Outcome{Class: pipebench.ClassRefused, Code: c, Detail: fmt.Sprint(c)}
	case c == 408 || c == 504:
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Code: c, Detail: fmt.Sprint(c)}
	default:
		return pipebench.Outcome{Class: pipebench.ClassError, Code: c, Detail: fmt.Sprint(c)}
	}
}

// trackedBody is a request body that knows whether the transport closed it,
// which it does once it is done reading.
type trackedBody struct {
	*bytes.Reader
	closed atomic.Bool
}

func (t *trackedBody) Close() error {
	t.closed.Store(true)
	return nil
}
