// Package healthevents is a small health-event service run in-process as a
// system under test: it serves the example HealthEventService
// (examples/healthevents.proto, with server reflection) over gRPC on a Unix
// domain socket or TCP, queues each event, and applies them one at a time
// at a set rate, like a fault-quarantine module cordoning nodes. Each
// applied event is an effect: it shows on HTTP as JSON (/effects, /nodes)
// and in Prometheus metrics (/metrics: backlog gauge, effect-latency
// histogram, counters).
//
// It runs inside the pipebench process, so its CPU is shared with the
// generator's; at the effect rates it is meant for (up to some thousands
// per second) that does not matter.
package healthevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/examples"
	"github.com/pipebench/pipebench/internal/protoschema"
)

// Service is the gRPC service the SUT serves, and its methods.
const (
	Service      = "pipebench.healthevents.v1.HealthEventService"
	MethodReport = Service + "/Report"
	MethodStream = Service + "/ReportStream"
)

// Config configures the service.
type Config struct {
	// Listen is where gRPC is served: unix:///path/to.sock, or host:port.
	// Empty: a Unix socket in the run's scratch directory.
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// HTTPListen is host:port for /effects, /nodes and /metrics.
	HTTPListen string `yaml:"http_listen" json:"http_listen"`
	// EffectRate is how many events per second are applied, one at a
	// time (the quarantine module's pace).
	EffectRate float64 `yaml:"effect_rate" json:"effect_rate"`
	// QueueSize bounds the backlog; a full queue answers
	// RESOURCE_EXHAUSTED.
	QueueSize int `yaml:"queue_size" json:"queue_size"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Listen != "" && !strings.HasPrefix(c.Listen, "unix:///") {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("listen: %q is not unix:///path/to.sock or host:port", c.Listen))
		}
	}
	if _, _, err := net.SplitHostPort(c.HTTPListen); err != nil {
		errs = append(errs, fmt.Errorf("http_listen: %q is not host:port", c.HTTPListen))
	}
	if c.EffectRate <= 0 {
		errs = append(errs, errors.New("effect_rate: must be more than 0 (effects per second)"))
	}
	if c.QueueSize < 1 {
		errs = append(errs, errors.New("queue_size: must be at least 1"))
	}
	return errors.Join(errs...)
}

func defaultConfig() *Config {
	return &Config{HTTPListen: "127.0.0.1:0", EffectRate: 100, QueueSize: 100000}
}

// Factory returns the factory of the "healthevents" SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("healthevents", "in-process health-event gRPC service (Unix socket or TCP) applying events as effects at a set rate",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) {
			if c.Listen == "" {
				dir := env.Dir
				if dir == "" {
					dir = os.TempDir()
				}
				c.Listen = "unix://" + filepath.Join(dir, "healthevents.sock")
			}
			return New(*c)
		})
}

// Effect is one applied event.
type Effect struct {
	Seq      uint64    `json:"seq"`
	Node     string    `json:"node"`
	Sent     time.Time `json:"sent,omitzero"` // the client's send time (pipebench-sent metadata), if given
	Received time.Time `json:"received"`
	Applied  time.Time `json:"applied"`
}

// EffectsPage is the answer of GET /effects?from=K: the effects applied
// K, K+1, ... in order, at most limit of them, and the cursor to ask from
// next.
type EffectsPage struct {
	Effects []Effect `json:"effects"`
	Next    int      `json:"next"`
	Backlog int      `json:"backlog"`
}

type event struct {
	seq      uint64
	node     string
	sent     time.Time
	received time.Time
}

// Server is the service. Start once, Shutdown once.
type Server struct {
	cfg     Config
	grpc    *grpc.Server
	httpSrv *http.Server
	gln     net.Listener
	hln     net.Listener
	queue   chan event
	stop    chan struct{}
	done    chan struct{}
	report  protoreflect.MethodDescriptor
	stream  protoreflect.MethodDescriptor

	pending atomic.Int64 // received, not yet applied

	mu      sync.Mutex
	effects []Effect
	nodes   map[string]Effect

	reg                        *prometheus.Registry
	received, refused, applied prometheus.Counter
	latency                    prometheus.Histogram
}

var _ pipebench.SUT = (*Server)(nil)
var _ pipebench.MultiEndpoint = (*Server)(nil)

// New returns a service for cfg; it is not started.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	files, err := protoschema.Compile(context.Background(), []string{"healthevents.proto"}, nil, examples.FS)
	if err != nil {
		return nil, fmt.Errorf("healthevents: the built-in proto does not compile: %w", err)
	}
	s := &Server{cfg: cfg, queue: make(chan event, cfg.QueueSize), stop: make(chan struct{}), done: make(chan struct{}),
		nodes: map[string]Effect{}, reg: prometheus.NewRegistry()}
	if s.report, err = protoschema.Method(files, MethodReport); err != nil {
		return nil, err
	}
	if s.stream, err = protoschema.Method(files, MethodStream); err != nil {
		return nil, err
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		s.reg.MustRegister(c)
		return c
	}
	s.received = counter("healthevents_events_received_total", "Events accepted into the queue.")
	s.refused = counter("healthevents_events_refused_total", "Events refused because the queue was full.")
	s.applied = counter("healthevents_effects_applied_total", "Events applied (effects).")
	s.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "healthevents_effect_latency_seconds", Help: "Time from an event's arrival to its effect.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	})
	s.reg.MustRegister(s.latency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "healthevents_backlog", Help: "Events received, not yet applied."},
			func() float64 { return float64(s.pending.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "healthevents_nodes_quarantined", Help: "Nodes with at least one applied event."},
			func() float64 { s.mu.Lock(); defer s.mu.Unlock(); return float64(len(s.nodes)) }),
	)
	s.grpc = grpc.NewServer()
	s.grpc.RegisterService(&grpc.ServiceDesc{
		ServiceName: Service,
		Methods:     []grpc.MethodDesc{{MethodName: "Report", Handler: s.handleReport}},
		Streams:     []grpc.StreamDesc{{StreamName: "ReportStream", ClientStreams: true, Handler: s.handleStream}},
	}, nil)
	rpb.RegisterServerReflectionServer(s.grpc, reflection.NewServerV1(reflection.ServerOptions{Services: s.grpc, DescriptorResolver: files}))
	return s, nil
}

// Start listens on the gRPC and HTTP addresses and starts applying.
func (s *Server) Start(ctx context.Context) error {
	var err error
	if p, ok := strings.CutPrefix(s.cfg.Listen, "unix://"); ok {
		if len(p) > 107 {
			return pipebench.UsageError(fmt.Sprintf("healthevents: the socket path %s is %d bytes long", p, len(p)),
				"Unix socket paths hold at most 107 bytes: set listen to a shorter unix:///path", nil)
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(p) // a stale socket of an earlier run; never another file
		}
		s.gln, err = net.Listen("unix", p)
	} else {
		s.gln, err = net.Listen("tcp", s.cfg.Listen)
	}
	if err != nil {
		return fmt.Errorf("healthevents: listen on %s: %w", s.cfg.Listen, err)
	}
	if s.hln, err = net.Listen("tcp", s.cfg.HTTPListen); err != nil {
		s.gln.Close()
		return fmt.Errorf("healthevents: listen on %s: %w", s.cfg.HTTPListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /effects", s.serveEffects)
	mux.HandleFunc("GET /nodes", s.serveNodes)
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.grpc.Serve(s.gln) }()
	go func() { _ = s.httpSrv.Serve(s.hln) }()
	go s.apply()
	return nil
}

// Endpoint is the gRPC endpoint: unix:///path.sock or host:port.
func (s *Server) Endpoint() string {
	if strings.HasPrefix(s.cfg.Listen, "unix://") {
		return s.cfg.Listen
	}
	return s.gln.Addr().String()
}

// HTTPURL is the base URL of /effects, /nodes and /metrics.
func (s *Server) HTTPURL() string { return "http://" + s.hln.Addr().String() }

// Endpoints implements pipebench.MultiEndpoint: "grpc" and "http".
func (s *Server) Endpoints() map[string]string {
	return map[string]string{"grpc": s.Endpoint(), "http": s.HTTPURL()}
}

// Instances implements pipebench.SUT: the service is this process.
func (s *Server) Instances() []pipebench.Instance {
	return []pipebench.Instance{{Name: "healthevents-0", PID: os.Getpid(), MetricsURL: s.HTTPURL() + "/metrics"}}
}

// Shutdown stops serving and applying; the backlog is dropped.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.gln == nil {
		return nil
	}
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
	}
	err := s.httpSrv.Shutdown(ctx)
	close(s.stop)
	<-s.done
	if p, ok := strings.CutPrefix(s.cfg.Listen, "unix://"); ok {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(p)
		}
	}
	return err
}

// Applied returns a copy of the effects applied so far, in order.
func (s *Server) Applied() []Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Effect(nil), s.effects...)
}

// apply takes events off the queue one at a time, each at its slot of the
// configured rate.
func (s *Server) apply() {
	defer close(s.done)
	interval := time.Duration(float64(time.Second) / s.cfg.EffectRate)
	var next time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var ev event
		select {
		case <-s.stop:
			return
		case ev = <-s.queue:
		}
		now := time.Now()
		if next.Before(now) {
			next = now
		}
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-s.stop:
				return
			case <-timer.C:
			}
		}
		at := time.Now()
		next = next.Add(interval)
		e := Effect{Seq: ev.seq, Node: ev.node, Sent: ev.sent, Received: ev.received, Applied: at}
		s.mu.Lock()
		s.effects = append(s.effects, e)
		if _, seen := s.nodes[ev.node]; !seen {
			s.nodes[ev.node] = e
		}
		s.mu.Unlock()
		s.pending.Add(-1)
		s.applied.Inc()
		s.latency.Observe(at.Sub(ev.received).Seconds())
	}
}

// enqueue queues one event message; false when the queue is full.
func (s *Server) enqueue(ctx context.Context, m protoreflect.Message) bool {
	f := m.Descriptor().Fields()
	ev := event{received: time.Now(),
		node: m.Get(f.ByName("node_name")).String(),
		seq:  m.Get(f.ByName("sequence")).Uint()}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("pipebench-sent"); len(v) > 0 {
			if ns, err := strconv.ParseInt(v[0], 10, 64); err == nil {
				ev.sent = time.Unix(0, ns)
			}
		}
		if v := md.Get("pipebench-seq"); ev.seq == 0 && len(v) > 0 {
			ev.seq, _ = strconv.ParseUint(v[0], 10, 64)
		}
	}
	s.pending.Add(1)
	select {
	case s.queue <- ev:
		s.received.Inc()
		return true
	default:
		s.pending.Add(-1)
		s.refused.Inc()
		return false
	}
}

func (s *Server) ack(n int) *dynamicpb.Message {
	out := s.report.Output()
	m := dynamicpb.NewMessage(out)
	m.Set(out.Fields().ByName("accepted"), protoreflect.ValueOfUint32(uint32(n)))
	return m
}

func (s *Server) handleReport(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	in := dynamicpb.NewMessage(s.report.Input())
	if err := dec(in); err != nil {
		return nil, err
	}
	events := in.Get(s.report.Input().Fields().ByName("events")).List()
	for i := 0; i < events.Len(); i++ {
		if !s.enqueue(ctx, events.Get(i).Message()) {
			return nil, status.Errorf(codes.ResourceExhausted, "backlog full (%d events); %d of this request's %d queued", s.cfg.QueueSize, i, events.Len())
		}
	}
	return s.ack(events.Len()), nil
}

func (s *Server) handleStream(_ any, ss grpc.ServerStream) error {
	n := 0
	for {
		ev := dynamicpb.NewMessage(s.stream.Input())
		if err := ss.RecvMsg(ev); err != nil {
			break
		}
		if !s.enqueue(ss.Context(), ev) {
			return status.Errorf(codes.ResourceExhausted, "backlog full (%d events); %d of this stream's events queued", s.cfg.QueueSize, n)
		}
		n++
	}
	return ss.SendMsg(s.ack(n))
}

func (s *Server) serveEffects(w http.ResponseWriter, r *http.Request) {
	from, limit := 0, 10000
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, "from: want a whole number >= 0", http.StatusBadRequest)
			return
		}
		from = n
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			http.Error(w, "limit: want a whole number >= 1", http.StatusBadRequest)
			return
		}
		limit = n
	}
	s.mu.Lock()
	page := EffectsPage{Next: from, Backlog: int(s.pending.Load())}
	if from < len(s.effects) {
		end := min(len(s.effects), from+limit)
		page.Effects = append([]Effect(nil), s.effects[from:end]...)
		page.Next = end
	}
	s.mu.Unlock()
	if page.Effects == nil {
		page.Effects = []Effect{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(page)
}

func (s *Server) serveNodes(w http.ResponseWriter, _ *http.Request) {
	type node struct {
		Quarantined bool      `json:"quarantined"`
		Since       time.Time `json:"since"`
		Seq         uint64    `json:"seq"`
	}
	s.mu.Lock()
	out := make(map[string]node, len(s.nodes))
	for n, e := range s.nodes {
		out[n] = node{Quarantined: true, Since: e.Applied, Seq: e.Seq}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
