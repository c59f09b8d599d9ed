// Package eventproxy is an embedded event publisher proxy as the system
// under test: events come in over HTTP (plain JSON events, CloudEvents in
// binary or structured mode, structured batches) and go out as JetStream
// publishes to an embedded nats-server with JetStream (in the same
// process, storing in the run's directory). A request is answered 2xx only
// after the JetStream publish ack; a stream that refuses (full, discard new)
// is 507, nats being unreachable is 503, an ack that does not come in time
// is 504, so pipebench's outcome classes tell them apart.
//
// One HTTP listener serves the events (POST on any path; Endpoint names
// /publish), the proxy's own Prometheus metrics (GET / and GET /metrics:
// events accepted, published, refused by reason, publish latency, publishes
// in flight) and the nats-server's monitoring (GET /varz, /jsz, /connz,
// forwarded), so that one instance URL serves both the prometheus and the
// nats observer. When the scenario's sink is a nats sink waiting to be told
// where to consume, the SUT posts the server's client URL and the stream.
package eventproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/natsattach"
)

// ServerVersion is the nats-server release embedded.
const ServerVersion = server.VERSION

// Factory returns the factory of the "eventproxy" SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("eventproxy",
		"an event publisher proxy (HTTP events and CloudEvents in, JetStream publish out, answers after the ack; 507 when the stream is full, 503 when nats is unavailable) in front of an embedded nats-server "+ServerVersion+" with JetStream",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) { return New(*c, env), nil })
}

// Proxy is the running proxy and its nats-server. Start once, Shutdown once.
type Proxy struct {
	cfg    Config
	notify string // the waiting nats sink's attach endpoint, if any
	dir    string
	m      *metrics

	ns   *server.Server
	nc   *nats.Conn
	js   js.JetStream
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

var _ pipebench.SUT = (*Proxy)(nil)

// New returns a proxy that is not started. env.Dir holds the stream's
// storage (a temporary directory when empty); an env.Target that is a
// waiting nats sink's endpoint (http://.../pipebench/nats-attach) is told
// the client URL once the stream exists; any other target is ignored.
func New(cfg Config, env pipebench.Env) *Proxy {
	dir := env.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	p := &Proxy{cfg: cfg, dir: dir, m: newMetrics(), done: make(chan struct{})}
	if strings.HasPrefix(env.Target, "http://") && strings.HasSuffix(env.Target, natsattach.Path) {
		p.notify = env.Target
	}
	return p
}

// Start starts the nats-server, creates the stream, connects the publisher,
// listens for events on loopback and tells a waiting sink.
func (p *Proxy) Start(ctx context.Context) error {
	store, err := os.MkdirTemp(p.dir, "eventproxy-")
	if err != nil {
		return fmt.Errorf("create the storage directory: %w", err)
	}
	opts := &server.Options{ServerName: "nats-0", Host: "127.0.0.1", Port: server.RANDOM_PORT,
		HTTPHost: "127.0.0.1", HTTPPort: server.RANDOM_PORT, JetStream: true, StoreDir: store,
		JetStreamMaxStore: p.cfg.MaxStore, NoSigs: true, NoLog: true, MaxConn: 1 << 16}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embedded nats-server: %w", err)
	}
	p.ns = ns
	go ns.Start()
	if !ns.ReadyForConnections(p.cfg.StartTimeout.D()) {
		p.Shutdown(context.Background())
		return fmt.Errorf("the embedded nats-server did not accept connections within %s", p.cfg.StartTimeout.D())
	}
	if err := p.connect(ctx); err != nil {
		p.Shutdown(context.Background())
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.Shutdown(context.Background())
		return fmt.Errorf("listen for events: %w", err)
	}
	p.ln = ln
	p.srv = &http.Server{Handler: p.mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { p.srv.Serve(ln); close(p.done) }()
	if p.notify != "" {
		if err := p.tellSink(ctx); err != nil {
			p.Shutdown(context.Background())
			return err
		}
	}
	return nil
}

// StreamSpec returns the stream the proxy creates.
func (c *Config) StreamSpec() js.StreamConfig {
	sc := js.StreamConfig{Name: c.Stream.Name, Subjects: []string{c.Prefix + ".>"}, MaxBytes: -1, MaxMsgs: -1,
		Replicas: 1, Storage: js.FileStorage, Discard: js.DiscardOld}
	if c.Stream.MaxBytes > 0 {
		sc.MaxBytes = c.Stream.MaxBytes
	}
	if c.Stream.MaxMsgs > 0 {
		sc.MaxMsgs = c.Stream.MaxMsgs
	}
	if c.Stream.Storage == "memory" {
		sc.Storage = js.MemoryStorage
	}
	if c.Stream.Discard == "new" {
		sc.Discard = js.DiscardNew
	}
	if c.Stream.Retention == "interest" {
		sc.Retention = js.InterestPolicy
	}
	return sc
}

// connect connects the publisher (reconnecting for ever, so that a server
// back after an outage is used again) and creates the stream.
func (p *Proxy) connect(ctx context.Context) error {
	nc, err := nats.Connect(p.NATSURL(), nats.Name("pipebench-eventproxy"), nats.Timeout(5*time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return fmt.Errorf("connect to the embedded nats-server: %w", err)
	}
	p.nc = nc
	j, err := js.New(nc)
	if err != nil {
		return err
	}
	p.js = j
	cctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout.D())
	defer cancel()
	if _, err := j.CreateOrUpdateStream(cctx, p.cfg.StreamSpec()); err != nil {
		return fmt.Errorf("create stream %s: %w", p.cfg.Stream.Name, err)
	}
	return nil
}

func (p *Proxy) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /", p.handleEvent)
	mux.Handle("GET /{$}", p.m.handler())
	mux.Handle("GET /metrics", p.m.handler())
	mon := &url.URL{Scheme: "http", Host: p.ns.MonitorAddr().String()}
	rp := httputil.NewSingleHostReverseProxy(mon)
	for _, path := range []string{"/varz", "/jsz", "/connz", "/healthz"} {
		mux.Handle("GET "+path, rp)
	}
	return mux
}

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
func (p *Proxy) subject(typ string) string {
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
	return p.cfg.Prefix + "." + t
}

func (p *Proxy) handleEvent(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			p.refuse(w, 1, "too_large", http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than max_body_bytes (%d)", p.cfg.MaxBodyBytes))
			return
		}
		p.refuse(w, 1, "bad_request", http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	typ, count, err := parse(r, body)
	if err != nil {
		p.refuse(w, 1, "bad_request", http.StatusBadRequest, err.Error())
		return
	}
	p.m.accepted.Add(float64(count))
	if !p.nc.IsConnected() {
		p.refuse(w, count, "nats_unavailable", http.StatusServiceUnavailable, "nats is not connected")
		return
	}
	msg := nats.NewMsg(p.subject(typ))
	msg.Data = body
	for k, vs := range r.Header {
		if copied(k) && len(vs) > 0 {
			msg.Header.Set(k, vs[0])
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.PublishTimeout.D())
	defer cancel()
	p.m.inFlight.Inc()
	t0 := time.Now()
	_, err = p.js.PublishMsg(ctx, msg)
	p.m.latency.Observe(time.Since(t0).Seconds())
	p.m.inFlight.Dec()
	if err != nil {
		reason, code := classify(err)
		p.refuse(w, count, reason, code, "publish: "+err.Error())
		return
	}
	p.m.published.Add(float64(count))
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

func (p *Proxy) refuse(w http.ResponseWriter, count int, reason string, code int, msg string) {
	p.m.refused.WithLabelValues(reason).Add(float64(count))
	http.Error(w, msg, code)
}

func (p *Proxy) tellSink(ctx context.Context) error {
	return natsattach.Post(ctx, p.notify, natsattach.Request{URL: p.NATSURL(), Stream: p.cfg.Stream.Name})
}

// Endpoint is the URL events are posted to (http://127.0.0.1:PORT/publish;
// any path is accepted). Empty before Start.
func (p *Proxy) Endpoint() string {
	if p.ln == nil {
		return ""
	}
	return "http://" + p.ln.Addr().String() + "/publish"
}

// NATSURL is the embedded nats-server's client URL. Empty before Start.
func (p *Proxy) NATSURL() string {
	if p.ns == nil {
		return ""
	}
	return p.ns.ClientURL()
}

// Instances lists the proxy (it runs in this process, so no PID of its
// own) with its base URL: GET there is its Prometheus metrics, and
// /varz, /jsz and /connz are the nats-server's monitoring, so both the
// prometheus and the nats observer watch the same instance.
func (p *Proxy) Instances() []pipebench.Instance {
	if p.ln == nil {
		return nil
	}
	return []pipebench.Instance{{Name: "eventproxy-0", MetricsURL: "http://" + p.ln.Addr().String()}}
}

// StopNATS shuts the embedded nats-server down while the proxy keeps
// serving, so that publishes fail as "nats unavailable". For tests of
// outages.
func (p *Proxy) StopNATS() {
	if p.ns != nil {
		p.ns.Shutdown()
		p.ns.WaitForShutdown()
	}
}

// Shutdown stops accepting events (bounded by ctx), closes the publisher
// and shuts the nats-server down. A second call does nothing harmful.
func (p *Proxy) Shutdown(ctx context.Context) error {
	var errs []error
	if p.srv != nil {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := p.srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("stop the event listener: %w", err))
			p.srv.Close()
		}
		cancel()
	}
	if p.nc != nil {
		p.nc.Close()
	}
	if p.ns != nil {
		p.ns.Shutdown()
		p.ns.WaitForShutdown()
	}
	return errors.Join(errs...)
}
