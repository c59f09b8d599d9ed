// Package eventproxy is an event publisher proxy as the system under
// test: events come in over HTTP (plain JSON events, CloudEvents in binary
// or structured mode, structured batches) and go out as JetStream
// publishes. A request is answered 2xx only after the JetStream publish
// ack; a stream that refuses (full, discard new) is 507, nats being
// unreachable is 503, an ack that does not come in time is 504, so
// pipebench's outcome classes tell them apart. What the proxy handled is
// what it published and had acknowledged; received and refused (by reason)
// are counted beside it.
//
// By default the proxy and one nats-server run inside pipebench's process,
// storing in the run's directory. With nats.nodes, the nats-server nodes
// (one, or a cluster on loopback, each with its own storage limit) and the
// proxy run as processes of their own, as a cluster deploys them, so each
// has its own memory and CPU; a chaos schedule can restart, kill or freeze
// a node or the proxy.
//
// The proxy's listener serves the events (POST on any path; Endpoint names
// /publish) and its own Prometheus metrics (GET / and GET /metrics: events
// received, published, refused by reason, publish latency, publishes in
// flight); inside pipebench it also forwards the embedded server's
// monitoring (GET /varz, /jsz, /connz), so that one instance URL serves
// both the prometheus and the nats observer. When the scenario's sink is a
// nats sink waiting to be told where to consume, the SUT posts the
// servers' client URL and the stream.
package eventproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/natsattach"
	"github.com/pipebench/pipebench/internal/proc/childproc"
	"github.com/pipebench/pipebench/sut/plumbing/natscluster"
)

// ServerVersion is the nats-server release embedded.
const ServerVersion = server.VERSION

// Factory returns the factory of the "eventproxy" SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("eventproxy",
		"an event publisher proxy (HTTP events and CloudEvents in, JetStream publish out, answers after the ack; 507 when the stream is full, 503 when nats is unavailable) in front of nats-server "+ServerVersion+" with JetStream: embedded, or nodes (a cluster) and the proxy as processes of their own",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) { return New(*c, env), nil })
}

// Proxy is the running proxy and its nats-server(s). Start once, Shutdown
// once.
type Proxy struct {
	cfg    Config
	notify string // the waiting nats sink's attach endpoint, if any
	dir    string
	log    *slog.Logger

	// in pipebench's process (nats.nodes 0)
	ns   *server.Server
	h    *handler
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	// as processes of their own (nats.nodes 1 or more)
	cluster *natscluster.Cluster
	proc    *natscluster.Proc
	port    int
	chaos   *natscluster.Schedule
}

var _ pipebench.SUT = (*Proxy)(nil)

// New returns a proxy that is not started. env.Dir holds the stream's
// storage (a temporary directory when empty); an env.Target that is a
// waiting nats sink's endpoint (http://.../pipebench/nats-attach) is told
// the client URL once the stream exists; any other target is ignored.
func New(cfg Config, env pipebench.Env) *Proxy {
	p := &Proxy{cfg: cfg, dir: env.ScratchDir(), log: env.Log(), done: make(chan struct{})}
	if strings.HasPrefix(env.Target, "http://") && strings.HasSuffix(env.Target, natsattach.Path) {
		p.notify = env.Target
	}
	return p
}

// Start starts the nats-server(s), creates the stream, starts the proxy,
// tells a waiting sink and starts the chaos schedule.
func (p *Proxy) Start(ctx context.Context) error {
	var err error
	if p.cfg.Separate() {
		err = p.startSeparate(ctx)
	} else {
		err = p.startEmbedded(ctx)
	}
	if err == nil && p.notify != "" {
		err = natsattach.Post(ctx, p.notify, natsattach.Request{URL: p.NATSURL(), Stream: p.cfg.Stream.Name})
	}
	if err != nil {
		p.Shutdown(context.Background())
		return err
	}
	if len(p.cfg.Chaos) > 0 {
		p.chaos = natscluster.RunChaos(p.cfg.Chaos, p.cluster.Resolver(p.cfg.Stream.Name, map[string]natscluster.Victim{"proxy": p.proc}),
			p.cfg.StartTimeout.D(), p.log.Info)
	}
	return nil
}

// startEmbedded runs one nats-server and the proxy in this process.
func (p *Proxy) startEmbedded(ctx context.Context) error {
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
		return fmt.Errorf("the embedded nats-server did not accept connections within %s", p.cfg.StartTimeout.D())
	}
	if err := natscluster.CreateStream(ctx, ns.ClientURL(), p.cfg.StreamSpec(), time.Now().Add(p.cfg.StartTimeout.D())); err != nil {
		return err
	}
	if p.h, err = newHandler(p.cfg, ns.ClientURL()); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for events: %w", err)
	}
	p.ln = ln
	p.srv = &http.Server{Handler: p.h.mux(&url.URL{Scheme: "http", Host: ns.MonitorAddr().String()}), ReadHeaderTimeout: 10 * time.Second}
	go func() { p.srv.Serve(ln); close(p.done) }()
	return nil
}

// startSeparate runs the nodes and the proxy as processes of their own.
func (p *Proxy) startSeparate(ctx context.Context) error {
	deadline := time.Now().Add(p.cfg.StartTimeout.D())
	params := natscluster.Params{Nodes: p.cfg.NATS.Nodes, MaxStore: p.cfg.NATS.MaxStorePerNode, Dir: p.dir,
		GoMemLimit: p.cfg.NATS.GoMemLimit, StartTimeout: p.cfg.StartTimeout.D()}
	if len(params.MaxStore) == 0 {
		params.MaxStore = []int64{p.cfg.NATS.MaxStore}
	}
	for _, name := range natscluster.NodeNames(p.cfg.NATS.Nodes) {
		params.Tags = append(params.Tags, []string{natscluster.NodeTag(name)})
	}
	c, err := natscluster.Start(ctx, params)
	if err != nil {
		return err
	}
	p.cluster = c
	if err := natscluster.CreateStream(ctx, c.ClientURL(), p.cfg.StreamSpec(), deadline); err != nil {
		return err
	}
	if p.port, err = childproc.FreePort(); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the pipebench binary to run the proxy: %w", err)
	}
	dir, err := os.MkdirTemp(p.dir, "eventproxy-")
	if err != nil {
		return err
	}
	spec := filepath.Join(dir, "proxy.json")
	if err := childproc.WriteSpec(spec, childSpec{Config: p.cfg, NATSURL: c.ClientURL(), Port: p.port}); err != nil {
		return err
	}
	starts := 0
	start := func() (*childproc.Proc, error) {
		starts++
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), ChildEnv+"="+spec)
		return childproc.Start("the event publisher proxy", cmd, filepath.Join(dir, "proxy."+strconv.Itoa(starts)+".log"))
	}
	p.proc, err = natscluster.NewProc(ctx, "proxy", time.Until(deadline), start, p.ready)
	return err
}

// ready reports whether the proxy's process answers and is connected.
func (p *Proxy) ready() bool {
	return childproc.Answers(p.base()+"/ready", http.StatusNoContent, time.Second)
}

// StreamSpec returns the stream the proxy creates: PREFIX.> captured.
func (c *Config) StreamSpec() js.StreamConfig {
	s := c.Stream
	return natscluster.Stream{Name: s.Name, Subjects: []string{c.Prefix + ".>"}, MaxBytes: s.MaxBytes, MaxMsgs: s.MaxMsgs, Discard: s.Discard,
		Storage: s.Storage, Retention: s.Retention, Replicas: s.Replicas, Placement: s.Placement}.Spec()
}

// base is the proxy's base URL.
func (p *Proxy) base() string {
	switch {
	case p.ln != nil:
		return "http://" + p.ln.Addr().String()
	case p.port != 0:
		return "http://127.0.0.1:" + strconv.Itoa(p.port)
	}
	return ""
}

// Endpoint is the URL events are posted to (http://127.0.0.1:PORT/publish;
// any path is accepted). Empty before Start.
func (p *Proxy) Endpoint() string {
	if b := p.base(); b != "" {
		return b + "/publish"
	}
	return ""
}

// NATSURL is the nats-server's client URL (every node's, separated by
// commas). Empty before Start.
func (p *Proxy) NATSURL() string {
	switch {
	case p.cluster != nil:
		return p.cluster.ClientURL()
	case p.ns != nil:
		return p.ns.ClientURL()
	}
	return ""
}

// Cluster returns the nodes when they run as processes of their own (nil
// otherwise), for tests that kill, restart or freeze one.
func (p *Proxy) Cluster() *natscluster.Cluster { return p.cluster }

// Instances lists the proxy, eventproxy-0, with its base URL (GET there is
// its Prometheus metrics). In pipebench's process it has no PID of its own
// and also forwards the embedded server's /varz, /jsz and /connz, so both
// the prometheus and the nats observer watch it; as a process of its own
// it has its PID, and every node follows as an instance of its own
// (nats-0, ...: PID, monitoring).
func (p *Proxy) Instances() []pipebench.Instance {
	if p.base() == "" {
		return nil
	}
	out := []pipebench.Instance{{Name: "eventproxy-0", MetricsURL: p.base()}}
	if p.proc != nil {
		out[0].PID, out[0].CurrentPID = p.proc.PID(), p.proc.PID
	}
	if p.cluster != nil {
		out = append(out, p.cluster.Instances()...)
	}
	return out
}

// StopNATS shuts the embedded nats-server down while the proxy keeps
// serving, so that publishes fail as "nats unavailable". For tests of
// outages, in pipebench's process only.
func (p *Proxy) StopNATS() {
	if p.ns != nil {
		p.ns.Shutdown()
		p.ns.WaitForShutdown()
	}
}

// Shutdown stops the chaos schedule, stops accepting events (bounded by
// ctx), closes the publisher and stops the nats-server(s). A second call
// does nothing harmful.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.chaos.Stop()
	var errs []error
	if p.srv != nil {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := p.srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("stop the event listener: %w", err))
			p.srv.Close()
		}
		cancel()
	}
	if p.h != nil {
		p.h.close()
	}
	if p.proc != nil {
		errs = append(errs, p.proc.Stop(ctx))
	}
	if p.ns != nil {
		p.ns.Shutdown()
		p.ns.WaitForShutdown()
	}
	if p.cluster != nil {
		errs = append(errs, p.cluster.Stop(ctx))
	}
	return errors.Join(errs...)
}

var _ pipebench.ExitReporter = (*Proxy)(nil)

// Exited describes the processes of the system (the nats-server nodes and
// the proxy, when they run apart) that ended during the run without the
// chaos schedule asking them to; none when they run inside pipebench.
func (p *Proxy) Exited() []string {
	var out []string
	if p.cluster != nil {
		out = append(out, p.cluster.Exited()...)
	}
	if p.proc != nil {
		out = append(out, p.proc.Exited()...)
	}
	return out
}
