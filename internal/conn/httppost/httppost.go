// Package httppost is how the drivers that send a batch as one HTTP POST
// through net/http (otlp over HTTP, prometheus-remote-write) post it: over
// a keep-alive pool of at most so many connections per host, counted for
// the connections_open KPI, each answer read to the end and classified by
// the protocol's status rules, each failure to send by netclass.
package httppost

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/conncount"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// Params configure a Client.
type Params struct {
	// Conns bounds the connections to one host (the pool); more requests
	// at once wait for one.
	Conns int
	// Timeout bounds a connect and a whole request.
	Timeout time.Duration
	// Rules read the answers' statuses.
	Rules netclass.StatusRules
}

// Client posts requests. Its methods are safe for concurrent use.
type Client struct {
	http  *http.Client
	open  conncount.Counter
	rules netclass.StatusRules
}

// New returns a Client; it opens connections as requests need them.
func New(p Params) *Client {
	c := &Client{rules: p.Rules}
	dialer := &net.Dialer{Timeout: p.Timeout}
	tr := &http.Transport{MaxIdleConnsPerHost: p.Conns, MaxConnsPerHost: p.Conns, DialContext: c.open.Dial(dialer.DialContext)}
	c.http = &http.Client{Timeout: p.Timeout, Transport: tr}
	return c
}

// Post sends body to url with header (which the request then owns) and
// classifies what came of it. released reports whether the transport is
// done with body: until it is (an early answer, a failure, a transport
// still writing), the caller must not reuse body's bytes.
func (c *Client) Post(ctx context.Context, url string, header http.Header, body []byte) (o pipebench.Outcome, released bool) {
	tb := &trackedBody{Reader: bytes.NewReader(body)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, tb)
	if err != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "bad request", Message: err.Error()}, true
	}
	req.ContentLength = int64(len(body))
	req.Header = header
	resp, err := c.http.Do(req)
	if err != nil {
		return netclass.Classify(err), tb.closed.Load()
	}
	o = c.rules.Response(resp)
	return o, tb.closed.Load()
}

// Open is the number of connections open now.
func (c *Client) Open() int { return c.open.Open() }

// CloseIdle closes the connections no request is using.
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }

// trackedBody is a request body that knows whether the transport closed
// it, which it does once it is done reading.
type trackedBody struct {
	*bytes.Reader
	closed atomic.Bool
}

// Close marks the body closed.
func (t *trackedBody) Close() error {
	t.closed.Store(true)
	return nil
}

// HostPort is the host:port that rawURL, an http:// or https:// URL, aims
// at: the scheme's default port when it names none. Another URL is a usage
// error naming the endpoint as shown, with hint.
func HostPort(rawURL, shown, hint string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", pipebench.UsageError(fmt.Sprintf("endpoint %q is not an http:// or https:// URL", shown), hint, err)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme]), nil
	}
	return u.Host, nil
}
