// Package grpcdriver calls any gRPC method, unary or client-streaming, over
// TCP or a Unix domain socket. The method's types come from .proto files
// compiled at start (no generated code) or from the server's reflection
// service. Each batch is a PayloadProtoJSON: one request message per item in
// JSON form, which the driver encodes with the method's input type. The
// batch's sequence number and send time travel as the metadata
// pipebench-seq, pipebench-sent and pipebench-count, besides any field the
// message template fills with {{seq}}.
package grpcdriver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/protoschema"
	"github.com/pipebench/pipebench/payload"
)

// Config configures the gRPC driver.
type Config struct {
	// Endpoint is host:port, or unix:///path/to.sock for a Unix domain
	// socket; empty means the runner's target (its "grpc" endpoint when
	// the system under test has several).
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// Method is the method to call: package.Service/Method.
	Method string `yaml:"method" json:"method"`
	// ProtoFiles are .proto files defining the method's service, found in
	// ImportPaths. Empty: the method's types are asked of the server's
	// reflection service at start.
	ProtoFiles  []string `yaml:"proto_files" json:"proto_files,omitempty"`
	ImportPaths []string `yaml:"import_paths" json:"import_paths,omitempty"`
	// Timeout bounds one call.
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Connections is the number of HTTP/2 connections used round-robin.
	Connections int `yaml:"connections" json:"connections"`
	// Metadata is sent with every call.
	Metadata map[string]string `yaml:"metadata" json:"metadata,omitempty"`
	// SecretMetadata is sent with every call and never printed.
	SecretMetadata map[string]pipebench.Secret `yaml:"secret_metadata" json:"secret_metadata,omitempty"`
	// TLS, when enabled (or when the endpoint is https://), dials with
	// TLS; otherwise the connection is plaintext HTTP/2.
	TLS TLSConfig `yaml:"tls" json:"tls"`
}

// TLSConfig holds client TLS settings.
type TLSConfig struct {
	Enabled            bool   `yaml:"enabled" json:"enabled,omitempty"`
	CAFile             string `yaml:"ca_file" json:"ca_file,omitempty"`
	CertFile           string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile            string `yaml:"key_file" json:"key_file,omitempty"`
	ServerName         string `yaml:"server_name" json:"server_name,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// config builds the client TLS configuration.
func (t TLSConfig) config() (*tls.Config, error) {
	c := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Endpoint != "" {
		if _, err := dialTarget(c.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("endpoint: %v", err))
		}
	}
	if c.Method == "" {
		errs = append(errs, errors.New("method: name the method to call, like package.Service/Method"))
	} else if _, _, err := protoschema.SplitMethod(c.Method); err != nil {
		errs = append(errs, fmt.Errorf("method: %v", err))
	}
	if len(c.ImportPaths) > 0 && len(c.ProtoFiles) == 0 {
		errs = append(errs, errors.New("import_paths: give proto_files too (without them the server's reflection is used)"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout: must be more than 0"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert_file and key_file go together"))
	}
	for key, f := range map[string]string{"tls.ca_file": c.TLS.CAFile, "tls.cert_file": c.TLS.CertFile, "tls.key_file": c.TLS.KeyFile} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				errs = append(errs, fmt.Errorf("%s: cannot read %s", key, f))
			}
		}
	}
	if c.Connections < 1 {
		errs = append(errs, errors.New("connections: must be at least 1"))
	}
	return errors.Join(errs...)
}

func defaultConfig() *Config {
	return &Config{Timeout: pipebench.Duration(5 * time.Second), Connections: 1}
}

// Factory returns the factory of the "grpc" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("grpc", "any gRPC method (unary or client stream) from .proto files or server reflection, over TCP or a Unix socket",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			target := env.Targets["grpc"]
			if target == "" {
				target = env.Target
			}
			return New(*c, target)
		}).WithPayloads(nil, []pipebench.Payload{payload.PayloadProtoJSON})
}

// discard is an answer the driver does not decode: it only needs the
// status.
type discard struct{}

// wire is a request already in protobuf wire form.
type wire []byte

// codec sends a wire as it is, encodes anything else with the registered
// proto codec, and skips decoding a *discard answer. Its name is "proto",
// so calls are ordinary application/grpc+proto.
type codec struct{}

var protoCodec = encoding.GetCodecV2("proto")

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	if w, ok := v.(wire); ok {
		return mem.BufferSlice{mem.SliceBuffer(w)}, nil
	}
	return protoCodec.Marshal(v)
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	if _, ok := v.(*discard); ok {
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

func (codec) Name() string { return "proto" }

var forceCodec = grpc.ForceCodecV2(codec{})

// Driver calls one gRPC method. Send is safe for concurrent use.
type Driver struct {
	cfg    Config
	target string
	conns  []*grpc.ClientConn
	next   atomic.Uint64
	md     metadata.MD
	method protoreflect.MethodDescriptor
	path   string // "/pkg.Service/Method"
	opts   protojson.UnmarshalOptions
	enc    proto.MarshalOptions
}

var _ pipebench.Driver = (*Driver)(nil)
var _ pipebench.ConnectionReporter = (*Driver)(nil)

// New builds a driver; target is used when cfg.Endpoint is empty. .proto
// files are compiled here, so their errors come before the run starts.
func New(cfg Config, target string) (*Driver, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = target
	}
	if cfg.Endpoint == "" {
		return nil, pipebench.UsageError("the grpc driver has no endpoint", "set target.endpoint (host:port or unix:///path/to.sock), or add a sut", nil)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dt, _ := dialTarget(cfg.Endpoint)
	// Proto3 has no required fields: the initialization checks are skipped.
	d := &Driver{cfg: cfg, target: dt, md: metadata.MD{}, opts: protojson.UnmarshalOptions{AllowPartial: true}, enc: proto.MarshalOptions{AllowPartial: true}}
	for k, v := range cfg.Metadata {
		d.md.Append(strings.ToLower(k), v)
	}
	for k, v := range cfg.SecretMetadata {
		d.md.Append(strings.ToLower(k), v.Reveal())
	}
	if len(cfg.ProtoFiles) > 0 {
		files, err := protoschema.Compile(context.Background(), cfg.ProtoFiles, cfg.ImportPaths, nil)
		if err != nil {
			return nil, pipebench.UsageError("the grpc driver cannot compile proto_files", "fix the .proto files, or set import_paths to where their imports are", err)
		}
		md, err := protoschema.Method(files, cfg.Method)
		if err != nil {
			return nil, pipebench.UsageError("the grpc driver's method is not in proto_files", "check method: and proto_files:", err)
		}
		if err := d.setMethod(md); err != nil {
			return nil, err
		}
	}
	creds := insecure.NewCredentials()
	if cfg.TLS.Enabled || strings.HasPrefix(cfg.Endpoint, "https://") {
		tc, err := cfg.TLS.config()
		if err != nil {
			return nil, pipebench.UsageError("the grpc driver's tls settings do not load", "", err)
		}
		creds = credentials.NewTLS(tc)
	}
	for i := 0; i < cfg.Connections; i++ {
		cc, err := grpc.NewClient(d.target, grpc.WithTransportCredentials(creds))
		if err != nil {
			d.closeConns()
			return nil, pipebench.UsageError(fmt.Sprintf("the grpc driver cannot use endpoint %q", cfg.Endpoint), "", err)
		}
		d.conns = append(d.conns, cc)
	}
	return d, nil
}

func (d *Driver) setMethod(md protoreflect.MethodDescriptor) error {
	if md.IsStreamingServer() {
		return pipebench.UsageError(fmt.Sprintf("method %s streams its answers", md.FullName()), "the grpc driver calls unary and client-streaming methods", nil)
	}
	d.method, d.path = md, protoschema.FullMethod(md)
	return nil
}

// dialTarget turns an endpoint into a grpc target: unix:///p and unix:p stay
// as they are, host:port and http://host:port become host:port.
func dialTarget(ep string) (string, error) {
	switch {
	case strings.HasPrefix(ep, "unix:"):
		p := strings.TrimPrefix(strings.TrimPrefix(ep, "unix:"), "//")
		if p == "" || (strings.HasPrefix(ep, "unix://") && !strings.HasPrefix(p, "/")) {
			return "", fmt.Errorf("%q is not unix:///absolute/path.sock", ep)
		}
		return "unix:" + p, nil
	case strings.Contains(ep, "://"):
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("%q is not host:port or unix:///path.sock", ep)
		}
		return u.Host, nil
	}
	i := strings.LastIndex(ep, ":")
	if i <= 0 || i == len(ep)-1 {
		return "", fmt.Errorf("%q is not host:port or unix:///path.sock", ep)
	}
	if _, err := strconv.Atoi(ep[i+1:]); err != nil {
		return "", fmt.Errorf("%q has no port number", ep)
	}
	return ep, nil
}

// Start asks the server's reflection service for the method's types when
// no proto_files were given.
func (d *Driver) Start(ctx context.Context) error {
	if d.method != nil {
		return nil
	}
	svc, _, _ := protoschema.SplitMethod(d.cfg.Method)
	ctx, cancel := context.WithTimeout(ctx, max(d.cfg.Timeout.D(), 5*time.Second))
	defer cancel()
	files, err := protoschema.FromReflection(ctx, d.conns[0], svc)
	if err != nil {
		return pipebench.UsageError(fmt.Sprintf("the grpc driver could not learn %s from %s by reflection", svc, d.cfg.Endpoint),
			"start the server with reflection enabled, or give proto_files", err)
	}
	md, err := protoschema.Method(files, d.cfg.Method)
	if err != nil {
		return pipebench.UsageError("the grpc driver's method is not on the server", "check method:", err)
	}
	return d.setMethod(md)
}

// Shutdown closes the connections.
func (d *Driver) Shutdown(context.Context) error {
	d.closeConns()
	return nil
}

func (d *Driver) closeConns() {
	for _, c := range d.conns {
		c.Close()
	}
}

// OpenConnections implements pipebench.ConnectionReporter: connections in
// the READY state.
func (d *Driver) OpenConnections() int {
	n := 0
	for _, c := range d.conns {
		if c.GetState() == connectivity.Ready {
			n++
		}
	}
	return n
}

// Send implements pipebench.Driver: one call per message for a unary
// method, one stream carrying every message for a client-streaming one.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	if d.method == nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "not started"}
	}
	if ctx.Err() != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: ctx.Err().Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout.D())
	defer cancel()
	cc := d.conns[d.next.Add(1)%uint64(len(d.conns))]
	body := b.Body
	seq := b.Seq
	sent := ""
	for _, h := range b.Headers {
		if h.Name == payload.HeaderSent {
			sent = h.Value
		}
	}
	if d.method.IsStreamingClient() {
		md := d.metadata(seq, sent, b.Count)
		stream, err := cc.NewStream(metadata.NewOutgoingContext(ctx, md), &grpc.StreamDesc{ClientStreams: true}, d.path, forceCodec)
		if err != nil {
			return classify(err)
		}
		for len(body) > 0 {
			var line []byte
			line, body = nextLine(body)
			w, err := d.encode(line)
			if err != nil {
				return badMessage(err)
			}
			if err := stream.SendMsg(wire(w)); err != nil {
				break // the real error comes from RecvMsg
			}
		}
		if err := stream.CloseSend(); err != nil {
			return classify(err)
		}
		if err := stream.RecvMsg(&discard{}); err != nil {
			return classify(err)
		}
		return pipebench.Outcome{Class: pipebench.ClassOK}
	}
	for i := 0; len(body) > 0; i++ {
		var line []byte
		line, body = nextLine(body)
		w, err := d.encode(line)
		if err != nil {
			return badMessage(err)
		}
		cctx := metadata.NewOutgoingContext(ctx, d.metadata(seq+uint64(i), sent, 1))
		if err := cc.Invoke(cctx, d.path, wire(w), &discard{}, forceCodec); err != nil {
			return classify(err)
		}
	}
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

// encode turns one message in JSON form into wire form: straight, for the
// common shapes, or through protojson and a dynamic message.
func (d *Driver) encode(js []byte) ([]byte, error) {
	if w, ok := transcode(nil, js, d.method.Input()); ok {
		return w, nil
	}
	msg := dynamicpb.NewMessage(d.method.Input())
	if err := d.opts.Unmarshal(js, msg); err != nil {
		return nil, err
	}
	return d.enc.Marshal(msg)
}

func nextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// metadata is the configured metadata plus the sequence number, send time
// and item count of this call.
func (d *Driver) metadata(seq uint64, sent string, count int) metadata.MD {
	md := make(metadata.MD, len(d.md)+3)
	for k, v := range d.md {
		md[k] = v
	}
	md["pipebench-seq"] = []string{strconv.FormatUint(seq, 10)}
	md["pipebench-count"] = []string{strconv.Itoa(count)}
	if sent != "" {
		md["pipebench-sent"] = []string{sent}
	}
	return md
}

func badMessage(err error) pipebench.Outcome {
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "message does not fit the method's input type", Message: err.Error()}
}

// classify maps a call's error to an outcome: UNAVAILABLE and
// RESOURCE_EXHAUSTED are refusals (backpressure), DEADLINE_EXCEEDED a
// timeout, anything else an error; a connection that could not be made at
// all (refused, no socket) is refused and unreached.
func classify(err error) pipebench.Outcome {
	st, _ := status.FromError(err)
	o := pipebench.Outcome{Code: int(st.Code()), Message: err.Error()}
	switch st.Code() {
	case codes.OK:
		o.Class = pipebench.ClassOK
		return o
	case codes.Unavailable:
		o.Class = pipebench.ClassRefused
		o.Detail = "UNAVAILABLE"
		msg := st.Message()
		switch {
		case strings.Contains(msg, "connection refused"):
			o.Detail, o.Unreached = "connection refused", true
		case strings.Contains(msg, "no such file or directory"):
			o.Detail, o.Unreached = "no socket", true
		case strings.Contains(msg, "handshake"):
			o.Detail, o.Unreached = "tls handshake failed", true
		case strings.Contains(msg, "Error while dialing"), strings.Contains(msg, "connection error"):
			o.Detail, o.Unreached = "cannot connect", true
		}
	case codes.ResourceExhausted:
		o.Class, o.Detail = pipebench.ClassRefused, "RESOURCE_EXHAUSTED"
	case codes.DeadlineExceeded:
		o.Class, o.Detail = pipebench.ClassTimeout, "timeout"
	case codes.Canceled:
		o.Class, o.Detail = pipebench.ClassError, "cancelled"
	default:
		o.Class, o.Detail = pipebench.ClassError, upperSnake(st.Code())
	}
	return o
}

// upperSnake is a code's name as gRPC writes it: INVALID_ARGUMENT.
func upperSnake(c codes.Code) string {
	s := c.String()
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}
