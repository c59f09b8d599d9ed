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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/connopen"
	"github.com/pipebench/pipebench/internal/conn/grpcconns"
	"github.com/pipebench/pipebench/internal/conn/netclass"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
	"github.com/pipebench/pipebench/internal/format/protoschema"
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
	// ImportPaths. They are compiled, and the method looked up in them,
	// when the configuration is validated (before anything runs). Empty:
	// the method's types are asked of the server's reflection service at
	// start.
	ProtoFiles  []string `yaml:"proto_files" json:"proto_files,omitempty"`
	ImportPaths []string `yaml:"import_paths" json:"import_paths,omitempty"`
	// Timeout bounds one call.
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Connections is the number of HTTP/2 connections, opened at Start
	// and used round-robin.
	Connections int `yaml:"connections" json:"connections"`
	// Metadata is sent with every call.
	Metadata map[string]string `yaml:"metadata" json:"metadata,omitempty"`
	// SecretMetadata is sent with every call and never printed.
	SecretMetadata map[string]pipebench.Secret `yaml:"secret_metadata" json:"secret_metadata,omitempty"`
	// TLS, when enabled (or when the endpoint is https://), dials with
	// TLS; otherwise the connection is plaintext HTTP/2.
	TLS TLSConfig `yaml:"tls" json:"tls"`
}

// TLSConfig holds client TLS settings: whether to use TLS, and the
// settings every driver's tls section has.
type TLSConfig struct {
	Enabled        bool `yaml:"enabled" json:"enabled,omitempty"`
	tlsconf.Client `yaml:",inline"`
}

// Validate reports every problem, each prefixed with its key. With
// proto_files it compiles them and looks the method up in them, so that a
// broken .proto, a missing one and a method they do not define are found
// before anything runs.
func (c *Config) Validate() error {
	_, err := c.check()
	return err
}

// check validates c and, with proto_files, returns the method from them
// (nil without).
func (c *Config) check() (protoreflect.MethodDescriptor, error) {
	var errs []error
	if c.Endpoint != "" {
		if _, err := dialTarget(c.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("endpoint: %v", err))
		}
	}
	methodOK := false
	if c.Method == "" {
		errs = append(errs, errors.New("method: name the method to call, like package.Service/Method"))
	} else if _, _, err := protoschema.SplitMethod(c.Method); err != nil {
		errs = append(errs, fmt.Errorf("method: %v", err))
	} else {
		methodOK = true
	}
	if len(c.ImportPaths) > 0 && len(c.ProtoFiles) == 0 {
		errs = append(errs, errors.New("import_paths: give proto_files too (without them the server's reflection is used)"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout: must be more than 0"))
	}
	if err := c.TLS.Validate("tls"); err != nil {
		errs = append(errs, err)
	}
	if c.Connections < 1 {
		errs = append(errs, errors.New("connections: must be at least 1"))
	}
	var md protoreflect.MethodDescriptor
	if len(c.ProtoFiles) > 0 {
		files, err := protoschema.Compile(context.Background(), c.ProtoFiles, c.ImportPaths, nil)
		switch {
		case err != nil:
			// One line per problem, each pointed at proto_files.
			for _, line := range strings.Split(err.Error(), "\n") {
				hint := "fix the .proto file, or set import_paths to where its imports are"
				if strings.Contains(line, "no such file") {
					hint = "a path is found in import_paths, or from the current directory when there are none"
				}
				errs = append(errs, fmt.Errorf("proto_files: %s (%s)", line, hint))
			}
		case methodOK:
			if md, err = protoschema.Method(files, c.Method); err != nil {
				errs = append(errs, fmt.Errorf("method: %v in proto_files", err))
			} else if md.IsStreamingServer() {
				errs = append(errs, fmt.Errorf("method: %s streams its answers; the grpc driver calls unary and client-streaming methods", md.FullName()))
			}
		}
	}
	return md, errors.Join(errs...)
}

var _ pipebench.FilePaths = (*Config)(nil)

// RelativeTo reads relative proto_files and import_paths from dir (the
// scenario's folder).
func (c *Config) RelativeTo(dir string) {
	for i, f := range c.ProtoFiles {
		if len(c.ImportPaths) == 0 { // found from the current directory otherwise
			c.ProtoFiles[i] = pipebench.InDir(dir, f)
		}
	}
	for i, p := range c.ImportPaths {
		c.ImportPaths[i] = pipebench.InDir(dir, p)
	}
}

func defaultConfig() *Config {
	return &Config{Timeout: pipebench.Duration(5 * time.Second), Connections: 1}
}

// Factory returns the factory of the "grpc" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("grpc", "any gRPC method (unary or client stream) from .proto files or server reflection, over TCP or a Unix socket",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			target := env.TargetFor("grpc")
			d, err := New(*c, target)
			if err == nil && env.Logger != nil {
				d.log = env.Logger
			}
			return d, err
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
	tls    *tls.Config // nil: plaintext
	conns  []*grpc.ClientConn
	opener *connopen.Opener // opens in the background the connections Start could not
	log    *slog.Logger     // nil: Start says nothing
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
// files are compiled here (as in Validate), so their errors come before
// the run starts. Connections are opened by Start.
func New(cfg Config, target string) (*Driver, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = target
	}
	if cfg.Endpoint == "" {
		return nil, pipebench.UsageError("the grpc driver has no endpoint", "set target.endpoint (host:port or unix:///path/to.sock), or add a sut", nil)
	}
	md, err := cfg.check()
	if err != nil {
		return nil, pipebench.UsageError("the grpc driver's configuration is invalid", "", err)
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
	if md != nil {
		if err := d.setMethod(md); err != nil {
			return nil, err
		}
	}
	creds := insecure.NewCredentials()
	if cfg.TLS.Enabled || strings.HasPrefix(cfg.Endpoint, "https://") {
		// The name to verify: the configured one, else the endpoint's
		// host, as gRPC itself takes it from the target ("localhost" for
		// a Unix socket).
		host := "localhost"
		if h, _, err := net.SplitHostPort(dt); err == nil && !strings.HasPrefix(dt, "unix:") {
			host = h
		}
		if d.tls, err = cfg.TLS.Load(host); err != nil {
			return nil, pipebench.UsageError("the grpc driver's tls settings do not load", "", err)
		}
		creds = credentials.NewTLS(d.tls)
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

// Start opens the connections by grpcconns' rule (what the server takes
// now, the rest in the background) and fails with a clear error when none
// became ready because nothing listens at the endpoint, its TLS does not
// match, or it does not speak gRPC. Without proto_files it then asks the
// server's reflection service for the method's types.
func (d *Driver) Start(ctx context.Context) error {
	var err error
	d.opener, err = grpcconns.Start(ctx, d.conns, grpcconns.Params{Timeout: d.cfg.Timeout.D(), Addr: d.target, TLS: d.tls})
	if err != nil {
		d.Shutdown(context.Background())
		return netclass.StartError("grpc driver: no connection to "+d.cfg.Endpoint+" became ready", err,
			"is the server listening there, with TLS if and only if tls.enabled says so?")
	}
	d.opener.Report(d.log, "grpc driver", d.cfg.Endpoint, d.OpenConnections())
	if d.method != nil {
		return nil
	}
	svc, _, _ := protoschema.SplitMethod(d.cfg.Method)
	ctx, cancel := context.WithTimeout(ctx, max(d.cfg.Timeout.D(), 5*time.Second))
	defer cancel()
	cc := d.conns[0]
	for _, c := range d.conns {
		if c.GetState() == connectivity.Ready {
			cc = c
			break
		}
	}
	files, err := protoschema.FromReflection(ctx, cc, svc)
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

// Shutdown stops opening connections and closes them.
func (d *Driver) Shutdown(context.Context) error {
	d.opener.Close()
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
func (d *Driver) OpenConnections() int { return grpcconns.Ready(d.conns) }

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
			return grpcconns.Classify(err)
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
			return grpcconns.Classify(err)
		}
		if err := stream.RecvMsg(&discard{}); err != nil {
			return grpcconns.Classify(err)
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
			return grpcconns.Classify(err)
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

// badMessage is the outcome of a batch the generator built but the method
// cannot take: it never left pipebench, so it reached nothing (a run of
// nothing but these is invalid).
func badMessage(err error) pipebench.Outcome {
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "message does not fit the method's input type", Message: err.Error(), Unreached: true}
}
