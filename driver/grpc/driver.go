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
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/grpc/wire"
	"github.com/pipebench/pipebench/internal/conn/connopen"
	"github.com/pipebench/pipebench/internal/conn/fdlimit"
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

// Driver calls one method through its own gRPC client (package wire):
// a call costs no goroutine and no timer, the calls handed over at one
// wake-up of the pacer leave in one write a connection (it is a
// pipebench.AsyncSender and a pipebench.Flusher), and what the server
// holds back (its MAX_CONCURRENT_STREAMS, its flow-control windows, a
// connection it does not take) comes back unsent, the system's share.
// Send is safe for concurrent use.
type Driver struct {
	cfg    Config
	target string
	tls    *tls.Config // nil: plaintext
	creds  credentials.TransportCredentials
	cl     *wire.Client
	opener *connopen.Opener // opens in the background the connections Start could not
	log    *slog.Logger     // nil: Start says nothing
	meta   []wire.Field
	method protoreflect.MethodDescriptor
	path   string // "/pkg.Service/Method"
	names  *names // the input type's field and enum value names
	opts   protojson.UnmarshalOptions
	enc    proto.MarshalOptions
	calls  sync.Pool // *call
}

var (
	_ pipebench.Driver             = (*Driver)(nil)
	_ pipebench.AsyncSender        = (*Driver)(nil)
	_ pipebench.Flusher            = (*Driver)(nil)
	_ pipebench.ConnectionReporter = (*Driver)(nil)
)

// vary are the fields whose values change with every call: the item's
// sequence number, the items it carries and when it was sent.
var vary = []string{"pipebench-seq", "pipebench-count", "pipebench-sent"}

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
	svc, name, _ := protoschema.SplitMethod(cfg.Method)
	// Proto3 has no required fields: the initialization checks are skipped.
	d := &Driver{cfg: cfg, target: dt, path: "/" + svc + "/" + name,
		opts: protojson.UnmarshalOptions{AllowPartial: true}, enc: proto.MarshalOptions{AllowPartial: true}}
	for _, k := range slices.Sorted(maps.Keys(cfg.Metadata)) {
		d.meta = append(d.meta, wire.Field{Name: strings.ToLower(k), Value: cfg.Metadata[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.SecretMetadata)) {
		d.meta = append(d.meta, wire.Field{Name: strings.ToLower(k), Value: cfg.SecretMetadata[k].Reveal(), Secret: true})
	}
	for _, f := range d.meta {
		if strings.HasPrefix(f.Name, ":") || f.Name == "" {
			return nil, pipebench.UsageError(fmt.Sprintf("the grpc driver's metadata %q is not a field name", f.Name), "name metadata without a leading colon", nil)
		}
	}
	if md != nil {
		if err := d.setMethod(md); err != nil {
			return nil, err
		}
	}
	d.creds = insecure.NewCredentials()
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
		d.creds = credentials.NewTLS(d.tls)
	}
	// grpc-go, which asks reflection, must take the target too.
	cc, err := grpc.NewClient(d.target, grpc.WithTransportCredentials(d.creds))
	if err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("the grpc driver cannot use endpoint %q", cfg.Endpoint), "", err)
	}
	cc.Close()
	return d, nil
}

func (d *Driver) setMethod(md protoreflect.MethodDescriptor) error {
	if md.IsStreamingServer() {
		return pipebench.UsageError(fmt.Sprintf("method %s streams its answers", md.FullName()), "the grpc driver calls unary and client-streaming methods", nil)
	}
	d.method, d.path, d.names = md, protoschema.FullMethod(md), newNames(md.Input())
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

// Start opens the connections by connopen's rule (what the server takes
// now, the rest in the background) and fails with a clear error when none
// became ready because nothing listens at the endpoint, its TLS does not
// match, or it does not speak gRPC. Without proto_files it then asks the
// server's reflection service for the method's types.
func (d *Driver) Start(ctx context.Context) error {
	authority := d.target
	if strings.HasPrefix(authority, "unix:") {
		authority = "localhost"
	}
	cl, err := wire.New(wire.Options{Addr: d.target, TLS: d.tls, Authority: authority, Path: d.path, Timeout: d.cfg.Timeout.D(),
		Metadata: d.meta, Vary: vary, Conns: d.cfg.Connections, UserAgent: "pipebench"})
	if err != nil {
		return err
	}
	d.cl = cl
	fdlimit.Ensure(d.cfg.Connections + 64)
	d.opener, err = connopen.Start(ctx, connopen.Params{N: d.cfg.Connections, Timeout: d.cfg.Timeout.D(), Open: cl.Open})
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
	// Reflection is asked once, through a grpc-go connection of its own.
	cc, err := grpc.NewClient(d.target, grpc.WithTransportCredentials(d.creds))
	if err != nil {
		return pipebench.UsageError(fmt.Sprintf("the grpc driver cannot use endpoint %q", d.cfg.Endpoint), "", err)
	}
	defer cc.Close()
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

// Shutdown stops opening connections and closes them: calls in flight end.
func (d *Driver) Shutdown(context.Context) error {
	d.opener.Close()
	if d.cl != nil {
		d.cl.Close()
	}
	return nil
}

// OpenConnections implements pipebench.ConnectionReporter: connections
// ready for calls (their HTTP/2 handshake done).
func (d *Driver) OpenConnections() int {
	if d.cl == nil {
		return 0
	}
	return d.cl.Ready()
}

// call is one gRPC call of a batch, pooled: a unary batch of n items is n
// calls, a client-streaming batch one.
type call struct {
	wire.Call
	d     *Driver
	buf   []byte // Data's storage
	vals  [3]string
	done  func(time.Time, pipebench.Outcome)
	batch *batchCalls // the batch's other calls (nil: this call is the batch)
}

// batchCalls is a unary batch of several items: its outcome is its first
// failure's, or OK once every call succeeded.
type batchCalls struct {
	left    atomic.Int32
	mu      sync.Mutex
	out     pipebench.Outcome
	failed  bool
	started time.Time
	done    func(time.Time, pipebench.Outcome)
}

func (d *Driver) get() *call {
	k, _ := d.calls.Get().(*call)
	if k == nil {
		k = &call{d: d}
		k.Done = k.end
		k.Values = k.vals[:]
	}
	return k
}

func (d *Driver) put(k *call) {
	if cap(k.buf) > 1<<20 {
		k.buf = nil
	}
	k.Data, k.Ctx, k.done, k.batch = nil, nil, nil, nil
	k.vals = [3]string{}
	d.calls.Put(k)
}

// Send implements pipebench.Driver: SendAsync, waiting for the outcome.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	return pipebench.Await(func(done func(time.Time, pipebench.Outcome)) {
		d.SendAsync(ctx, b, done)
		d.Flush()
	})
}

// Flush implements pipebench.Flusher: the calls handed over since the last
// Flush leave, one write a connection.
func (d *Driver) Flush() {
	if d.cl != nil {
		d.cl.Flush()
	}
}

// SendAsync implements pipebench.AsyncSender: one call per message for a
// unary method (a batch of several items is several calls, on their way
// together), one call carrying every message for a client-streaming one.
// done is called once, with when the call was taken and its outcome.
func (d *Driver) SendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	if d.method == nil || d.cl == nil {
		done(time.Now(), pipebench.Outcome{Class: pipebench.ClassError, Detail: "not started", Message: "the grpc driver was not started"})
		return
	}
	if err := ctx.Err(); err != nil {
		done(time.Now(), pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: err.Error()})
		return
	}
	var seq, sent, count string
	for _, h := range b.Headers {
		switch h.Name {
		case payload.HeaderSeq:
			seq = h.Value
		case payload.HeaderSent:
			sent = h.Value
		case payload.HeaderCount:
			count = h.Value
		}
	}
	if seq == "" {
		seq = strconv.FormatUint(b.Seq, 10)
	}
	body := b.Body
	if d.method.IsStreamingClient() {
		k := d.get()
		buf := k.buf[:0]
		for len(body) > 0 {
			var line []byte
			line, body = nextLine(body)
			var err error
			if buf, err = d.encode(buf, line); err != nil {
				k.buf = buf
				d.put(k)
				done(time.Now(), badMessage(err))
				return
			}
		}
		if count == "" {
			count = strconv.Itoa(b.Count)
		}
		k.buf, k.Data, k.Ctx, k.done = buf, buf, ctx, done
		k.vals = [3]string{seq, count, sent}
		d.cl.Do(&k.Call)
		return
	}
	if n := bytes.Count(body, []byte{'\n'}); n == 0 || (n == 1 && body[len(body)-1] == '\n') {
		// One item, one call: the batch's own header values.
		k := d.get()
		line, _ := nextLine(body)
		buf, err := d.encode(k.buf[:0], line)
		k.buf = buf
		if err != nil {
			d.put(k)
			done(time.Now(), badMessage(err))
			return
		}
		k.Data, k.Ctx, k.done = buf, ctx, done
		k.vals = [3]string{seq, "1", sent}
		d.cl.Do(&k.Call)
		return
	}
	// Several items: every message is encoded before any call leaves, so
	// a message the method cannot take fails the batch whole.
	var ks []*call
	bc := &batchCalls{done: done}
	for i := 0; len(body) > 0; i++ {
		var line []byte
		line, body = nextLine(body)
		k := d.get()
		buf, err := d.encode(k.buf[:0], line)
		k.buf = buf
		if err != nil {
			d.put(k)
			for _, k := range ks {
				d.put(k)
			}
			done(time.Now(), badMessage(err))
			return
		}
		k.Data, k.Ctx, k.batch = buf, ctx, bc
		k.vals = [3]string{strconv.FormatUint(b.Seq+uint64(i), 10), "1", sent}
		ks = append(ks, k)
	}
	bc.left.Store(int32(len(ks)))
	for _, k := range ks {
		d.cl.Do(&k.Call)
	}
}

// end is a call's Done: the outcome to its batch, the call to the pool.
func (k *call) end(*wire.Call) {
	out := outcome(&k.Call, k.d.cfg.Timeout.D())
	started := k.Taken
	if bc := k.batch; bc != nil {
		bc.mu.Lock()
		if bc.started.IsZero() || started.Before(bc.started) {
			bc.started = started
		}
		if out.Class != pipebench.ClassOK && !bc.failed {
			bc.out, bc.failed = out, true
		} else if !bc.failed && out.Answered.After(bc.out.Answered) {
			bc.out = out
		}
		bc.mu.Unlock()
		k.d.put(k)
		if bc.left.Add(-1) == 0 {
			bc.done(bc.started, bc.out)
		}
		return
	}
	done := k.done
	k.d.put(k)
	done(started, out)
}

// outcome is a call's end as a pipebench.Outcome.
func outcome(k *wire.Call, timeout time.Duration) pipebench.Outcome {
	var o pipebench.Outcome
	switch {
	case k.Unsent == wire.DialFailed:
		o = netclass.Classify(k.Err)
		if o.Unsent == pipebench.OwnerNone {
			// Nothing of it left: the server did not take a connection.
			o.Unsent = pipebench.OwnerSystem
		}
		return o
	case k.Unsent == wire.Cancelled:
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: "the call was cancelled before it was sent"}
	case k.Unsent == wire.Closed:
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "driver shut down", Message: "the grpc driver shut down before the call was sent"}
	case k.Unsent != wire.Sent:
		// The server held it back: every connection busy at its limit
		// for the whole timeout.
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: k.Unsent.String(), Unsent: pipebench.OwnerSystem,
			Message: fmt.Sprintf("not sent: %s for the whole timeout (%v): %s", k.Unsent, timeout, heldWhy(k.Unsent))}
	case k.Err == wire.ErrTimeout:
		o = pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "timeout", Message: fmt.Sprintf("no answer within the timeout (%v)", timeout)}
	case k.Err != nil:
		o = netclass.Classify(k.Err)
		o.Unsent = pipebench.OwnerNone
	case k.Status == 0:
		o = pipebench.Outcome{Class: pipebench.ClassOK}
	default:
		o = grpcconns.Status(codes.Code(k.Status), k.Message)
	}
	o.Written, o.Answered = k.Written, k.Answered
	return o
}

// heldWhy says what held a call back.
func heldWhy(w wire.Why) string {
	switch w {
	case wire.NoStream:
		return "every connection had as many calls open as the server's MAX_CONCURRENT_STREAMS allows"
	case wire.NoWindow:
		return "the server's HTTP/2 flow-control windows stayed shut (it did not read what was sent)"
	}
	return "no connection was ready (they were opening, or the server did not finish their HTTP/2 handshake)"
}

// encode appends one message in JSON form to dst in wire form, with
// gRPC's 5-byte prefix: straight, for the common shapes, or through
// protojson and a dynamic message.
func (d *Driver) encode(dst, js []byte) ([]byte, error) {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0)
	if w, ok := transcodeWith(dst, js, d.method.Input(), d.names); ok {
		binary.BigEndian.PutUint32(w[at+1:], uint32(len(w)-at-5))
		return w, nil
	}
	msg := dynamicpb.NewMessage(d.method.Input())
	if err := d.opts.Unmarshal(js, msg); err != nil {
		return dst[:at], err
	}
	w, err := d.enc.MarshalAppend(dst, msg)
	if err != nil {
		return dst[:at], err
	}
	binary.BigEndian.PutUint32(w[at+1:], uint32(len(w)-at-5))
	return w, nil
}

func nextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// badMessage is the outcome of a batch the generator built but the method
// cannot take: it never left pipebench, so it reached nothing (a run of
// nothing but these is invalid).
func badMessage(err error) pipebench.Outcome {
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "message does not fit the method's input type", Message: err.Error(), Unreached: true}
}
