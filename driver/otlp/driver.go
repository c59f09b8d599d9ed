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
	"log/slog"
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
	"github.com/pipebench/pipebench/internal/conn/connopen"
	"github.com/pipebench/pipebench/internal/conn/fdlimit"
	"github.com/pipebench/pipebench/internal/conn/grpcconns"
	"github.com/pipebench/pipebench/internal/conn/httppost"
	"github.com/pipebench/pipebench/internal/conn/netclass"
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
	// runner's target for the protocol, then its target, then the OTLP
	// default port on loopback (127.0.0.1:4317 for grpc,
	// http://127.0.0.1:4318 for http). Several endpoints, comma-separated
	// (the replicas of a system under test, as its Service would list
	// them), share the load: gRPC connection i goes to endpoint i mod n,
	// as a Kubernetes Service spreads connections over pods (with fewer
	// connections than endpoints, some endpoints get nothing, as in
	// Kubernetes); HTTP requests go to the endpoints in turn.
	Endpoint      string                      `yaml:"endpoint" json:"endpoint,omitempty"`
	Protocol      string                      `yaml:"protocol" json:"protocol"`       // grpc | http
	Compression   string                      `yaml:"compression" json:"compression"` // none | gzip
	Timeout       pipebench.Duration          `yaml:"timeout" json:"timeout"`
	Headers       map[string]string           `yaml:"headers" json:"headers,omitempty"`
	SecretHeaders map[string]pipebench.Secret `yaml:"secret_headers" json:"secret_headers,omitempty"`
	// Connections is the number of gRPC connections, opened at Start,
	// kept open and used round-robin; or the HTTP keep-alive pool size.
	Connections int `yaml:"connections" json:"connections"`
}

// maxConnections bounds connections: each is a socket held for the run.
const maxConnections = 100000

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
	if c.Connections < 1 || c.Connections > maxConnections {
		errs = append(errs, fmt.Errorf("connections: %d is outside 1..%d", c.Connections, maxConnections))
	}
	return errors.Join(errs...)
}

// DefaultConfig returns gRPC, no compression, a 5 s timeout and 2
// connections.
func DefaultConfig() *Config {
	return &Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(5 * time.Second), Connections: 2}
}

// The OTLP default endpoints on loopback.
const (
	DefaultGRPCEndpoint = "127.0.0.1:4317"
	DefaultHTTPEndpoint = "http://127.0.0.1:4318"
)

// Factory returns the factory of the "otlp" driver. It accepts the three
// OTLP payloads. Without an endpoint it aims at Env.Targets[protocol],
// then Env.Target, then the protocol's default port on loopback.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("otlp", "OTLP traces, metrics and logs over gRPC or HTTP/protobuf", DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			target := env.TargetFor(c.Protocol)
			d, err := New(*c, target)
			if err == nil && env.Logger != nil {
				d.log = env.Logger
			}
			if err == nil && env.Logger != nil && len(d.hostports) > c.Connections {
				env.Logger.Warn("otlp driver: fewer connections than endpoints, so some endpoints get no traffic (as behind a Kubernetes Service); raise connections",
					"connections", c.Connections, "endpoints", len(d.hostports))
			}
			return d, err
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadOTLPTraces, pipebench.PayloadOTLPMetrics, pipebench.PayloadOTLPLogs})
}

// Driver sends OTLP. Send is safe for concurrent use; OpenConnections too.
type Driver struct {
	cfg       Config
	hostport  string   // where the connections go (the first endpoint's)
	hostports []string // every endpoint's host:port
	conns     []*grpc.ClientConn
	traces    []ptraceotlp.GRPCClient
	metrics   []pmetricotlp.GRPCClient
	logs      []plogotlp.GRPCClient
	next      atomic.Uint64
	opener    *connopen.Opener // opens in the background the gRPC connections Start could not
	http      *httppost.Client
	base      string   // the first endpoint's base URL
	bases     []string // every endpoint's base URL
	md        metadata.MD
	headers   http.Header
	log       *slog.Logger // nil: Start says nothing
}

var (
	_ pipebench.Driver             = (*Driver)(nil)
	_ pipebench.ConnectionReporter = (*Driver)(nil)
)

// New builds a driver; target is used when cfg.Endpoint is empty, and the
// protocol's default endpoint when both are. For gRPC an http:// target is
// reduced to its host:port; for HTTP a host:port becomes http://host:port.
// Connections are opened by Start (gRPC) or on demand (HTTP).
func New(cfg Config, target string) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = target
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultGRPCEndpoint
		if cfg.Protocol == "http" {
			cfg.Endpoint = DefaultHTTPEndpoint
		}
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
	endpoints := strings.Split(cfg.Endpoint, ",")
	for i := range endpoints {
		endpoints[i] = strings.TrimSpace(endpoints[i])
	}
	if cfg.Protocol == "http" {
		for _, e := range endpoints {
			base := e
			if !strings.Contains(base, "://") {
				base = "http://" + base
			}
			hp, err := httppost.HostPort(base, e, "an OTLP/HTTP endpoint looks like http://127.0.0.1:4318 (several: comma-separated)")
			if err != nil {
				return nil, err
			}
			d.bases = append(d.bases, strings.TrimSuffix(base, "/"))
			d.hostports = append(d.hostports, hp)
		}
		d.base, d.hostport = d.bases[0], d.hostports[0]
		// 429, 502 and 503 are refused: the retryable statuses of the
		// OTLP specification.
		perHost := (cfg.Connections + len(d.bases) - 1) / len(d.bases)
		d.http = httppost.New(httppost.Params{Conns: perHost, Timeout: cfg.Timeout.D(), Rules: netclass.OTLPStatuses})
		return d, nil
	}
	for _, hostport := range endpoints {
		if u, err := url.Parse(hostport); err == nil && u.Host != "" {
			hostport = u.Host
		}
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("endpoint %q is not host:port", hostport), "a gRPC endpoint looks like 127.0.0.1:4317 (several: comma-separated)", nil)
		}
		d.hostports = append(d.hostports, hostport)
	}
	d.hostport = d.hostports[0]
	for i := 0; i < cfg.Connections; i++ {
		hostport := d.hostports[i%len(d.hostports)]
		// Idleness off: a connection stays open however rarely it is used.
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithIdleTimeout(0)}
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

// Endpoint returns where the driver sends: host:port for gRPC, the base URL
// for HTTP; several, comma-separated, when it spreads over several.
func (d *Driver) Endpoint() string {
	if d.http != nil {
		return strings.Join(d.bases, ",")
	}
	return strings.Join(d.hostports, ",")
}

// Start makes sure the process may open the connections asked for (raising
// the soft limit on open files if needed), checks that something listens
// at each endpoint, and for gRPC opens the connections by grpcconns' rule:
// 64 at a time, waiting (at most twice the timeout, at least 2 s) until
// each is ready, what the target does not take now keeps opening in the
// background. It fails with a clear error when nothing listens at an
// endpoint, when no gRPC connection became ready and the endpoint refuses
// or does not speak gRPC, or when an OTLP/HTTP endpoint speaks first (a
// gRPC port).
func (d *Driver) Start(ctx context.Context) error {
	if err := fdlimit.Ensure(d.cfg.Connections + fdlimit.Margin); err != nil {
		return pipebench.UsageError(fmt.Sprintf("otlp driver: connections: %d", d.cfg.Connections), "", err)
	}
	for _, hostport := range d.hostports {
		c, err := netclass.Dial(ctx, hostport, nil, d.cfg.Timeout.D())
		if err != nil {
			if netclass.Classify(err).Unreached {
				d.Shutdown(context.Background())
				return netclass.StartError("otlp driver: cannot connect to "+hostport, err, "is the system under test listening there? OTLP/gRPC is usually on port 4317, OTLP/HTTP on 4318")
			}
		} else {
			spoke := d.http != nil && speaksFirst(c)
			c.Close()
			if spoke {
				d.Shutdown(context.Background())
				return netclass.StartError("otlp driver: "+hostport+" speaks first, as an HTTP/2 or gRPC server does, so it is not an OTLP/HTTP endpoint", errSpeaksFirst,
					"OTLP/HTTP is usually on port 4318; for OTLP/gRPC (port 4317) set protocol: grpc")
			}
		}
	}
	if len(d.conns) == 0 {
		return nil
	}
	var err error
	d.opener, err = grpcconns.Start(ctx, d.conns, grpcconns.Params{Timeout: d.cfg.Timeout.D(), Addr: d.hostport})
	if err != nil {
		d.Shutdown(context.Background())
		return netclass.StartError("otlp driver: no gRPC connection to "+d.hostport+" became ready", err,
			"is it an OTLP/gRPC endpoint? OTLP/gRPC is usually on port 4317; for OTLP/HTTP (port 4318) set protocol: http")
	}
	d.opener.Report(d.log, "otlp driver", d.Endpoint(), d.OpenConnections())
	return nil
}

// speakFirstWait is how long Start listens for a server that speaks before
// it is asked.
const speakFirstWait = 200 * time.Millisecond

// errSpeaksFirst is an OTLP/HTTP endpoint that sent bytes before any
// request.
var errSpeaksFirst = fmt.Errorf("%w: the server spoke before any request", netclass.ErrProtocolMismatch)

// speaksFirst reports whether the server sent bytes before any request: an
// HTTP/1.1 server never does, an HTTP/2 (gRPC) server sends its SETTINGS.
func speaksFirst(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(speakFirstWait))
	var b [9]byte
	n, _ := c.Read(b[:])
	return n > 0
}

// OpenConnections implements pipebench.ConnectionReporter: the gRPC
// connections ready now, or the HTTP connections open now.
func (d *Driver) OpenConnections() int {
	if d.http != nil {
		return d.http.Open()
	}
	return grpcconns.Ready(d.conns)
}

// Shutdown stops opening connections and closes them.
func (d *Driver) Shutdown(context.Context) error {
	d.opener.Close()
	for _, c := range d.conns {
		c.Close()
	}
	if d.http != nil {
		d.http.CloseIdle()
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
		return notOTLP(b.Data)
	}
	if err != nil {
		return grpcconns.Classify(err)
	}
	if rejected > 0 {
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "partial", Message: fmt.Sprintf("partial success: %d items rejected", rejected)}
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

// notOTLP is the outcome of a batch that holds no OTLP data.
func notOTLP(data any) pipebench.Outcome {
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "not OTLP data",
		Message: fmt.Sprintf("the otlp driver got %T, not OTLP data: use an otlp-traces, otlp-metrics or otlp-logs generator", data)}
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
			return pipebench.Outcome{Class: pipebench.ClassError, Detail: "unknown OTLP signal", Message: fmt.Sprintf("unknown OTLP signal %v", data.Signal)}
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
		return notOTLP(b.Data)
	}
	if err != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "marshal", Message: err.Error()}
	}
	gzipped := d.cfg.Compression == "gzip"
	if gzipped {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write(body)
		zw.Close()
		body = zb.Bytes()
	}
	base := d.base
	if len(d.bases) > 1 {
		base = d.bases[d.next.Add(1)%uint64(len(d.bases))]
	}
	header := d.headers.Clone()
	header.Set("Content-Type", "application/x-protobuf")
	if gzipped {
		header.Set("Content-Encoding", "gzip")
	}
	o, released := d.http.Post(ctx, base+path, header, body)
	if enc != nil && !gzipped && !released {
		// The transport may still read the encoded bytes (an early
		// answer, an error): they must not be reused.
		enc.Abandon()
	}
	return o
}
