// Package httpdriver sends batches over HTTP: its own HTTP/1.1 client over a
// fixed set of keep-alive connections opened at Start (net/http cannot hold
// tens of thousands of requests per second on one core), a batching client
// for pipelined HTTP/1.1 (pipeline.go), net/http with golang.org/x/net/http2
// for HTTP/2 and h2c.
package httpdriver

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/conncount"
	"github.com/pipebench/pipebench/internal/conn/connopen"
	"github.com/pipebench/pipebench/internal/conn/fdlimit"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// Factory returns the factory of the "http" driver. It sends what it is
// given as bytes: PayloadBytes and PayloadLogLines. With no url it aims at
// the runner's target for "http" (Env.Targets), then Env.Target.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("http", "HTTP/1.1 (keep-alive pool) or HTTP/2 (h2c or TLS) POST/PUT", defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			target := env.TargetFor("http")
			d, err := New(*c, target)
			switch {
			case err != nil:
				return nil, err
			case env.Logger != nil:
				d.log = env.Logger
			}
			if d.sendsAsync() {
				return asyncDriver{d}, nil
			}
			return d, nil
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes, pipebench.PayloadLogLines})
}

// Driver sends batches over HTTP. Send is safe for concurrent use;
// OpenConnections too.
type Driver struct {
	cfg     Config
	url     string
	method  string
	addr    string // host:port
	headers []pipebench.Header
	h1      *h1Pool                         // HTTP/1.1, one request per connection at a time
	pipe    *pipeClient                     // HTTP/1.1 pipelined
	std     *http.Client                    // HTTP/2
	probe   func(ctx context.Context) error // HTTP/2: can a connection be opened?
	h2open  conncount.Counter               // HTTP/2 connections open now
	log     *slog.Logger                    // nil: Start says nothing
}

var (
	_ pipebench.Driver             = (*Driver)(nil)
	_ pipebench.ConnectionReporter = (*Driver)(nil)
	_ pipebench.AsyncSender        = asyncDriver{}
	_ pipebench.Flusher            = asyncDriver{}
	_ pipebench.ConnectionReporter = asyncDriver{}
)

// New builds a driver for cfg; target is used when cfg.URL is empty.
// Connections are opened by Start (HTTP/1.1) or on demand (HTTP/2); a Send
// before Start opens the connection it needs.
func New(cfg Config, target string) (*Driver, error) {
	if cfg.URL == "" {
		cfg.URL = target
	}
	if cfg.URL == "" {
		return nil, pipebench.UsageError("the http driver has no url", "set target.url, or add a sut or a sink to send to", nil)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL)
	d := &Driver{cfg: cfg, url: cfg.URL, method: strings.ToUpper(cfg.Method)}
	for k, v := range cfg.Headers {
		d.headers = append(d.headers, pipebench.Header{Name: k, Value: v})
	}
	for k, v := range cfg.SecretHeaders {
		d.headers = append(d.headers, pipebench.Header{Name: k, Value: v.Reveal()})
	}
	var tlsCfg *tls.Config
	if u.Scheme == "https" {
		var err error
		if tlsCfg, err = cfg.TLS.Load(u.Hostname()); err != nil {
			return nil, err
		}
	}
	d.addr = u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			d.addr = net.JoinHostPort(u.Hostname(), "443")
		} else {
			d.addr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	timeout := cfg.Timeout.D()
	if cfg.HTTP2 {
		tr := &http2.Transport{}
		h2tls := tlsCfg
		if h2tls != nil {
			h2tls = h2tls.Clone()
			h2tls.NextProtos = []string{"h2"}
		}
		if u.Scheme == "http" {
			tr.AllowHTTP = true
		}
		tr.DialTLSContext = func(ctx context.Context, _, addr string, _ *tls.Config) (net.Conn, error) {
			c, err := netclass.Dial(ctx, addr, h2tls, timeout)
			if err != nil {
				return nil, err
			}
			return d.h2open.Wrap(c), nil
		}
		d.std = &http.Client{Transport: tr, Timeout: timeout}
		d.probe = func(ctx context.Context) error {
			c, err := netclass.Dial(ctx, d.addr, h2tls, timeout)
			if err == nil {
				err = checkH2(c, timeout)
				c.Close()
			}
			if err != nil && !netclass.Classify(err).Unreached {
				err = nil // a timeout is measured by the sends
			}
			return err
		}
		return d, nil
	}
	head := []byte(d.method + " " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: pipebench\r\n")
	for _, h := range d.headers {
		head = append(head, h.Name+": "+h.Value+"\r\n"...)
	}
	if cfg.Pipeline > 0 && !canPipeline(tlsCfg) {
		d.pipe = newPipeClient(d.addr, tlsCfg, timeout, cfg.Connections, cfg.Pipeline, head)
		d.pipe.stamp = cfg.KernelTimestamps
		return d, nil
	}
	d.h1 = newH1Pool(d.addr, head, tlsCfg, timeout, cfg.Connections, cfg.Pipeline)
	d.h1.stamp = cfg.KernelTimestamps
	return d, nil
}

// Start makes sure the process may open the connections asked for (raising
// the soft limit on open files if needed) and, for HTTP/1.1, opens the
// connections as connopen does: 64 at a time, what the target takes now,
// the rest in the background (HTTP/2 opens one to check, and closes it).
// It fails with a clear error when the target took no connection (nothing
// listens) or no connection can work (TLS fails, another protocol), or
// when the limit on open files is too low.
func (d *Driver) Start(ctx context.Context) error {
	if err := fdlimit.Ensure(d.cfg.Connections + fdlimit.Margin); err != nil {
		return pipebench.UsageError(fmt.Sprintf("http driver: connections: %d", d.cfg.Connections), "", err)
	}
	var err error
	switch {
	case d.h1 != nil:
		err = d.h1.start(ctx)
	case d.pipe != nil:
		err = d.pipe.start(ctx)
	case d.probe != nil:
		err = d.probe(ctx)
	}
	if err != nil {
		d.Shutdown(context.Background())
		return netclass.StartError("http driver: cannot open connections to "+d.addr, err,
			"is the system under test listening there, with the scheme (http or https) the url names?")
	}
	d.opener().Report(d.log, "http driver", d.addr, d.OpenConnections())
	return nil
}

// opener is what keeps opening the HTTP/1.1 connections Start could not,
// or nil.
func (d *Driver) opener() *connopen.Opener {
	switch {
	case d.h1 != nil:
		return d.h1.opener
	case d.pipe != nil:
		return d.pipe.opener
	}
	return nil
}

// h2Preface is the HTTP/2 client connection preface followed by an empty
// SETTINGS frame.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// checkH2 checks that the server on a new connection speaks HTTP/2: over
// TLS it must have chosen h2 (ALPN); in clear text it must answer the
// preface with a SETTINGS frame. It returns a protocol mismatch error when
// it does not, or the I/O error (a timeout) when it cannot tell.
func checkH2(c net.Conn, timeout time.Duration) error {
	if tc, ok := c.(*tls.Conn); ok {
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			return fmt.Errorf("%w: the server does not offer HTTP/2 over TLS (it chose %q): remove http2: true", netclass.ErrProtocolMismatch, p)
		}
		return nil
	}
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, h2Preface); err != nil {
		return err
	}
	var head [9]byte
	_, err := io.ReadFull(c, head[:])
	if bytes.HasPrefix(head[:], []byte("HTTP/")) {
		return fmt.Errorf("%w: the server answered HTTP/1.1, not h2c: remove http2: true", netclass.ErrProtocolMismatch)
	}
	if err != nil {
		return err
	}
	if head[3] != 0x4 { // the first frame an HTTP/2 server sends is SETTINGS
		return fmt.Errorf("%w: the server did not answer the HTTP/2 preface with SETTINGS (it sent %q): remove http2: true", netclass.ErrProtocolMismatch, head[:])
	}
	return nil
}

// OpenConnections implements pipebench.ConnectionReporter: the
// connections open now.
func (d *Driver) OpenConnections() int {
	switch {
	case d.h1 != nil:
		return d.h1.openNow()
	case d.pipe != nil:
		return d.pipe.open.Open()
	}
	return d.h2open.Open()
}

// Shutdown closes the connections.
func (d *Driver) Shutdown(context.Context) error {
	if d.pipe != nil {
		d.pipe.close()
	}
	if d.h1 != nil {
		d.h1.close()
	}
	if d.std != nil {
		d.std.CloseIdleConnections()
	}
	return nil
}

// Send implements pipebench.Driver: it never returns an error, it classifies.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	if ctx.Err() != nil {
		return cancelled(ctx)
	}
	if d.std != nil {
		return d.sendStd(ctx, b)
	}
	if d.h1 != nil && d.h1.evented {
		return d.h1.send(ctx, b)
	}
	if d.pipe != nil {
		return outcome(d.pipe.do(ctx, b.ContentType, b.Headers, b.Body))
	}
	return outcome(d.h1.do(ctx, b.ContentType, b.Headers, b.Body))
}

// sendsAsync reports whether sendAsync hands sends over without a
// goroutine each: over HTTP/1.1 on plain TCP on Linux, or pipelined.
func (d *Driver) sendsAsync() bool { return d.pipe != nil || (d.h1 != nil && d.h1.evented) }

// asyncDriver is the Driver as the factory returns it when sendsAsync: a
// pipebench.AsyncSender, so that the open-model runner hands it the sends
// due at one wake-up one after the other. Otherwise (HTTP/2, TLS without
// pipelining) the runner starts a goroutine per send, each making its own
// batch, as before.
type asyncDriver struct{ *Driver }

// SendAsync implements pipebench.AsyncSender.
func (a asyncDriver) SendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	a.sendAsync(ctx, b, done)
}

// Flush implements pipebench.Flusher: pipelined on event loops, the
// requests handed over since the last Flush are written, those of one
// connection in one system call.
func (a asyncDriver) Flush() {
	if a.h1 != nil && a.h1.piped {
		a.h1.flushPiped()
	}
}

// sendAsync hands b over and returns: over HTTP/1.1 on plain TCP on Linux
// to a connection's carrier (carry.go), pipelined to a connection's queue
// (pipeline.go); elsewhere it runs Send in a goroutine of its own.
func (d *Driver) sendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	switch {
	case ctx.Err() != nil:
		done(time.Now(), cancelled(ctx))
	case d.h1 != nil && d.h1.evented:
		d.h1.sendAsync(ctx, b, done, true)
	case d.pipe != nil:
		d.pipe.sendAsync(ctx, b, done)
	default:
		go func() {
			started := time.Now()
			done(started, d.Send(ctx, b))
		}()
	}
}

func cancelled(ctx context.Context) pipebench.Outcome {
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: ctx.Err().Error()}
}

func (d *Driver) sendStd(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	req, err := http.NewRequestWithContext(ctx, d.method, d.url, bytes.NewReader(b.Body))
	if err != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "bad request", Message: err.Error()}
	}
	if b.ContentType != "" {
		req.Header.Set("Content-Type", b.ContentType)
	}
	for _, h := range d.headers {
		req.Header.Set(h.Name, h.Value)
	}
	for _, h := range b.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := d.std.Do(req)
	if err != nil {
		return classifyErr(err)
	}
	return statuses.Response(resp)
}

// statuses reads the answers' statuses: 429, 503 and 507 (insufficient
// storage: an event proxy's stream is full) are refused (backpressure).
var statuses = netclass.EventStatuses

// classifyErr maps a transport error to an outcome with a short detail and
// the full text.
func classifyErr(err error) pipebench.Outcome {
	switch err {
	case errPipelineFull:
		// Every window slot stayed taken by the system's unanswered
		// requests: it held this one back.
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "pipeline full", Message: err.Error(), Unsent: pipebench.OwnerSystem}
	case errNoConn:
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "no free connection", Message: err.Error(), Unsent: pipebench.OwnerSystem}
	case errConnClosed:
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "eof", Message: err.Error()}
	}
	return netclass.Classify(err)
}
