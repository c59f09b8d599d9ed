package eventproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// handler turns HTTP events into JetStream publishes and counts them. It
// serves the proxy in pipebench's process and in a process of its own.
type handler struct {
	cfg Config
	m   *metrics
	nc  *nats.Conn
	js  js.JetStream
}

// newHandler connects the publisher to url (several servers separated by
// commas; more are learnt from the servers), reconnecting for ever so that
// a server back after an outage is used again, and noticing a server that
// stopped answering within a few seconds (a ping a second, two may go
// unanswered) so that it moves to another node of a cluster.
func newHandler(cfg Config, url string) (*handler, error) {
	nc, err := nats.Connect(url, nats.Name("pipebench-eventproxy"), nats.Timeout(5*time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return nil, fmt.Errorf("connect to nats-server at %s: %w", url, err)
	}
	j, err := js.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &handler{cfg: cfg, m: newMetrics(), nc: nc, js: j}, nil
}

// mux serves POST events on any path, the metrics on GET / and GET
// /metrics, GET /ready (200 while connected to nats), and, when monitor
// is set, nats-server's monitoring forwarded from it.
func (h *handler) mux(monitor *url.URL) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /", h.handleEvent)
	mux.Handle("GET /{$}", h.m.handler())
	mux.Handle("GET /metrics", h.m.handler())
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if !h.nc.IsConnected() {
			http.Error(w, "not connected to nats", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if monitor != nil {
		rp := httputil.NewSingleHostReverseProxy(monitor)
		for _, path := range []string{"/varz", "/jsz", "/connz", "/healthz"} {
			mux.Handle("GET "+path, rp)
		}
	}
	return mux
}

func (h *handler) close() { h.nc.Close() }

// header names copied from the request onto the JetStream message.
func copied(name string) bool {
	n := strings.ToLower(name)
	return n == "content-type" || strings.HasPrefix(n, "ce-") || strings.HasPrefix(n, "pipebench-")
}

// ceHead holds the attributes of a structured CloudEvent the proxy checks.
type ceHead struct {
	SpecVersion string `json:"specversion"`
	ID          string `json:"id"`
	Type        string `json:"type"`
	Source      string `json:"source"`
}

// parse checks one request and returns the event type and the number of
// events it carries, or the reason it is refused.
func parse(r *http.Request, body []byte) (typ string, count int, err error) {
	count = 1
	if c := r.Header.Get("Pipebench-Count"); c != "" {
		if n, e := strconv.Atoi(c); e == nil && n > 0 {
			count = n
		}
	}
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	if v := r.Header.Get("Ce-Specversion"); v != "" { // binary mode
		if r.Header.Get("Ce-Id") == "" || r.Header.Get("Ce-Type") == "" || r.Header.Get("Ce-Source") == "" {
			return "", 0, errors.New("a binary-mode CloudEvent needs the ce-id, ce-type and ce-source headers")
		}
		return r.Header.Get("Ce-Type"), count, nil
	}
	switch {
	case strings.HasPrefix(ct, "application/cloudevents-batch+json"):
		var evs []ceHead
		if err := json.Unmarshal(body, &evs); err != nil {
			return "", 0, fmt.Errorf("the body is not a JSON array of CloudEvents: %v", err)
		}
		if len(evs) == 0 {
			return "", 0, errors.New("the batch is empty")
		}
		for i, e := range evs {
			if e.SpecVersion == "" || e.ID == "" || e.Type == "" || e.Source == "" {
				return "", 0, fmt.Errorf("event %d of the batch lacks specversion, id, type or source", i)
			}
		}
		return evs[0].Type, len(evs), nil
	case strings.HasPrefix(ct, "application/cloudevents+json"):
		var e ceHead
		if err := json.Unmarshal(body, &e); err != nil {
			return "", 0, fmt.Errorf("the body is not a CloudEvent: %v", err)
		}
		if e.SpecVersion == "" || e.ID == "" || e.Type == "" || e.Source == "" {
			return "", 0, errors.New("the CloudEvent lacks specversion, id, type or source")
		}
		return e.Type, count, nil
	}
	if !json.Valid(body) {
		return "", 0, errors.New("the body is not JSON")
	}
	return "event", count, nil
}

// subject returns PREFIX.TYPE with every character of the type that is not
// a letter, digit, '-', '_' or a dot between tokens replaced by '_'.
func (h *handler) subject(typ string) string {
	b := []byte(typ)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	t := strings.Trim(strings.ReplaceAll(string(b), "..", "._."), ".")
	if t == "" {
		t = "event"
	}
	return h.cfg.Prefix + "." + t
}

func (h *handler) handleEvent(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.refuse(w, 1, "too_large", http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than max_body_bytes (%d)", h.cfg.MaxBodyBytes))
			return
		}
		h.refuse(w, 1, "bad_request", http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	typ, count, err := parse(r, body)
	if err != nil {
		h.refuse(w, 1, "bad_request", http.StatusBadRequest, err.Error())
		return
	}
	h.m.received.Add(float64(count))
	if !h.nc.IsConnected() {
		h.refuse(w, count, "nats_unavailable", http.StatusServiceUnavailable, "nats is not connected")
		return
	}
	msg := nats.NewMsg(h.subject(typ))
	msg.Data = body
	for k, vs := range r.Header {
		if copied(k) && len(vs) > 0 {
			msg.Header.Set(k, vs[0])
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.PublishTimeout.D())
	defer cancel()
	h.m.inFlight.Inc()
	t0 := time.Now()
	_, err = h.js.PublishMsg(ctx, msg)
	h.m.latency.Observe(time.Since(t0).Seconds())
	h.m.inFlight.Dec()
	if err != nil {
		reason, code := classify(err)
		h.refuse(w, count, reason, code, "publish: "+err.Error())
		return
	}
	h.m.published.Add(float64(count))
	w.WriteHeader(http.StatusNoContent)
}

// JetStream error codes the proxy answers as a full stream: a stream limit
// with discard new (10077) and the server's storage exhausted (10023).
const (
	errStreamStoreFailed     = 10077
	errInsufficientResources = 10023
)

// classify maps a failed publish to a refusal reason and an HTTP status.
func classify(err error) (string, int) {
	var api *js.APIError
	if errors.As(err, &api) && (api.ErrorCode == errStreamStoreFailed || api.ErrorCode == errInsufficientResources) {
		return "stream_full", http.StatusInsufficientStorage
	}
	msg := err.Error()
	if strings.Contains(msg, "maximum bytes exceeded") || strings.Contains(msg, "maximum messages exceeded") || strings.Contains(msg, "insufficient resources") {
		return "stream_full", http.StatusInsufficientStorage
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, js.ErrNoStreamResponse), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionDraining), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting):
		return "nats_unavailable", http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return "timeout", http.StatusGatewayTimeout
	}
	return "publish_error", http.StatusBadGateway
}

func (h *handler) refuse(w http.ResponseWriter, count int, reason string, code int, msg string) {
	h.m.refused.WithLabelValues(reason).Add(float64(count))
	http.Error(w, msg, code)
}
