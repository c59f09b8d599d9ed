// Package httpdriver sends batches over HTTP: fasthttp for HTTP/1.1 (net/http
// cannot hold tens of thousands of requests per second on one core), its own
// batching client for pipelined HTTP/1.1 (pipeline.go), net/http with
// golang.org/x/net/http2 for HTTP/2 and h2c.
package httpdriver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"

	"github.com/pipebench/pipebench"
)

// Factory returns the factory of the "http" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.Factory[pipebench.Driver]{
		Name:      "http",
		Doc:       "HTTP/1.1 (keep-alive pool) or HTTP/2 (h2c or TLS) POST/PUT",
		NewConfig: func() any { return defaultConfig() },
		New: func(cfg any, env pipebench.Env) (pipebench.Driver, error) {
			c, ok := cfg.(*Config)
			if !ok || c == nil {
				c = defaultConfig()
			}
			return New(*c, env.Target)
		},
	}
}

// Driver sends batches over HTTP. Send is safe for concurrent use.
type Driver struct {
	cfg     Config
	url     string
	method  string
	headers []pipebench.Header
	fast    doer         // HTTP/1.1, one request per connection at a time
	pipe    *pipeClient  // HTTP/1.1 pipelined
	std     *http.Client // HTTP/2
}

var _ pipebench.Driver = (*Driver)(nil)

// doer is what the fasthttp clients have in common.
type doer interface {
	DoTimeout(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error
}

// New builds a driver for cfg; target is used when cfg.URL is empty.
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
		if tlsCfg, err = cfg.tlsConfig(u.Hostname()); err != nil {
			return nil, err
		}
	}
	timeout := cfg.Timeout.D()
	if cfg.HTTP2 {
		tr := &http2.Transport{TLSClientConfig: tlsCfg}
		if u.Scheme == "http" {
			tr.AllowHTTP = true
			tr.DialTLSContext = func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				var dl net.Dialer
				return dl.DialContext(ctx, network, addr)
			}
		}
		d.std = &http.Client{Transport: tr, Timeout: timeout}
		return d, nil
	}
	addr := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	if cfg.Pipeline > 0 {
		fixed := append([]pipebench.Header{{Name: "User-Agent", Value: "pipebench"}}, d.headers...)
		d.pipe = newPipeClient(addr, d.method, u.RequestURI(), u.Host, tlsCfg, timeout, cfg.Connections, cfg.Pipeline, fixed)
		return d, nil
	}
	d.fast = &fasthttp.HostClient{
		Addr:                          addr,
		IsTLS:                         u.Scheme == "https",
		TLSConfig:                     tlsCfg,
		MaxConns:                      cfg.Connections,
		ReadTimeout:                   timeout,
		WriteTimeout:                  timeout,
		MaxIdleConnDuration:           time.Minute,
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: false,
		MaxConnWaitTimeout:            timeout,
	}
	return d, nil
}

// Start implements pipebench.Driver.
func (d *Driver) Start(context.Context) error { return nil }

// Shutdown closes idle connections.
func (d *Driver) Shutdown(context.Context) error {
	if d.pipe != nil {
		d.pipe.close()
	}
	if c, ok := d.fast.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	if d.std != nil {
		d.std.CloseIdleConnections()
	}
	return nil
}

// Send implements pipebench.Driver: it never returns an error, it classifies.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	if d.std != nil {
		return d.sendStd(ctx, b)
	}
	if d.pipe != nil {
		if ctx.Err() != nil {
			return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled"}
		}
		status, err := d.pipe.do(ctx, b.ContentType, b.Headers, b.Body)
		if err != nil {
			return classifyErr(err)
		}
		return classifyStatus(status)
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(d.url)
	req.Header.SetMethod(d.method)
	if b.ContentType != "" {
		req.Header.SetContentType(b.ContentType)
	}
	for _, h := range d.headers {
		req.Header.Set(h.Name, h.Value)
	}
	for _, h := range b.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	req.SetBodyRaw(b.Body)
	resp.SkipBody = true
	timeout := d.cfg.Timeout.D()
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if ctx.Err() != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled"}
	}
	err := d.fast.DoTimeout(req, resp, timeout)
	if err != nil {
		return classifyErr(err)
	}
	return classifyStatus(resp.StatusCode())
}

func (d *Driver) sendStd(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	req, err := http.NewRequestWithContext(ctx, d.method, d.url, bytes.NewReader(b.Body))
	if err != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "bad request"}
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
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return classifyStatus(resp.StatusCode)
}

// classifyStatus maps an HTTP status to an outcome class: 2xx ok; 429 and
// 503 refused (backpressure); 408 and 504 timeout; anything else error.
func classifyStatus(code int) pipebench.Outcome {
	o := pipebench.Outcome{Code: code}
	switch {
	case code >= 200 && code < 300:
		o.Class = pipebench.ClassOK
		return o
	case code == 429 || code == 503:
		o.Class = pipebench.ClassRefused
	case code == 408 || code == 504:
		o.Class = pipebench.ClassTimeout
	default:
		o.Class = pipebench.ClassError
	}
	o.Detail = strconv.Itoa(code)
	return o
}

// classifyErr maps a transport error to an outcome with a short detail.
func classifyErr(err error) pipebench.Outcome {
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout(), errors.Is(err, fasthttp.ErrNoFreeConns):
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "timeout"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "connection refused"}
	case errors.Is(err, syscall.ECONNRESET):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "connection reset"}
	case errors.Is(err, errPipelineFull):
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "pipeline full"}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, errConnClosed):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "eof"}
	case errors.Is(err, context.Canceled):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled"}
	}
	msg := err.Error()
	if strings.Contains(msg, "connection refused") {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "connection refused"}
	}
	if strings.Contains(msg, "timeout") {
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "timeout"}
	}
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: fmt.Sprintf("%.40s", msg)}
}
