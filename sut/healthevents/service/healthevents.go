// Package service is the health-event service run as a system under
// test, shaped like a GPU fleet's fault-quarantine pipeline: it serves the
// example HealthEventService (examples/healthevents.proto, with server
// reflection) over gRPC on a Unix domain socket or TCP; a connector stage
// ([C]) queues each event and writes it to a MongoDB-protocol document
// store ([D]) through the official MongoDB Go driver, several at once; a
// quarantine stage ([E]) takes the stored events one at a time (or
// quarantine_workers at once), cordons the event's Node through a real
// Kubernetes API server (a GET and a PATCH) and marks the document
// quarantined. Each handled event is an effect: it shows on HTTP as JSON
// (/effects, /nodes) and in the service's Prometheus metrics (/metrics:
// every stage's queue gauge and duration histogram).
//
// The store is FerretDB started for the run as a child process (SQLite
// files, or a PostgreSQL database), or a running MongoDB (mongodb_url). The
// API server is one started for the run from the kube binaries (kube.bin),
// or a cluster's (kube.kubeconfig); with neither, nodes are cordoned in
// memory only. The service also serves the store's own status
// (/metrics/database: serverStatus under the MongoDB exporter's metric
// names) and the API server's own metrics (/metrics/apiserver, read with
// the service's credentials), so that one Prometheus scrapes all three.
//
// The service runs as a child process of pipebench-sut (MaybeRunChild),
// which the healthevents system under test starts: its CPU and memory are
// its own, apart from the generator's; the store and the API server are
// processes of their own too.
package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
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
	"k8s.io/client-go/kubernetes"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/sut/plumbing/docstore"
)

type event struct {
	seq      uint64
	node     string
	agent    string
	check    string
	fatal    bool
	sent     time.Time
	received time.Time
	stored   time.Time // when the connector's write ended
	id       any       // the stored document's id
}

// Server is the service. Start once, Shutdown once.
type Server struct {
	cfg     Config
	dir     string // the store's and API server's data; a temporary one when ownDir
	ownDir  bool
	grpc    *grpc.Server
	httpSrv *http.Server
	gln     net.Listener
	hln     net.Listener
	connQ   chan event // the connector's queue: received, not yet stored
	quarQ   chan event // stored, not yet quarantined (the change stream)
	stop    chan struct{}
	ctx     context.Context // done when stop is closed: the stages' requests end with it
	workers sync.WaitGroup
	report  protoreflect.MethodDescriptor
	stream  protoreflect.MethodDescriptor
	store   *store
	kube    *kube

	pending  atomic.Int64 // received, not yet applied
	toStore  atomic.Int64 // received, less those the store never took
	lastRecv atomic.Int64 // unix nanoseconds of the last event received
	queued   atomic.Int64 // in the connector's queue
	backlog  atomic.Int64 // stored, not yet handled by quarantine

	mu      sync.Mutex
	effects []Effect
	nodes   map[string]Effect
	next    time.Time // the quarantine's next slot at effect_rate

	reg, dbReg                 *prometheus.Registry
	received, refused, applied prometheus.Counter
	failed                     *prometheus.CounterVec
	latency, queueWait         prometheus.Histogram
	storeTime, handling        prometheus.Histogram
}

var _ pipebench.SUT = (*Server)(nil)
var _ pipebench.MultiEndpoint = (*Server)(nil)

// stageBuckets reach from 0.5 ms to about a minute.
var stageBuckets = prometheus.ExponentialBuckets(0.0005, 2, 18)

// New returns a service for cfg; it is not started. Zero workers, store
// names and node count take DefaultConfig's; a zero store type is ferretdb.
func New(cfg Config) (*Server, error) {
	def := DefaultConfig()
	if cfg.StoreWorkers == 0 {
		cfg.StoreWorkers = def.StoreWorkers
	}
	if cfg.QuarantineWorkers == 0 {
		cfg.QuarantineWorkers = def.QuarantineWorkers
	}
	if cfg.Store.Database == "" && cfg.Store.Collection == "" {
		cfg.Store.Database, cfg.Store.Collection = def.Store.Database, def.Store.Collection
	}
	if cfg.Kube.Nodes == 0 {
		cfg.Kube.Nodes = def.Kube.Nodes
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, connQ: make(chan event, cfg.QueueSize), quarQ: make(chan event, cfg.QueueSize),
		stop: make(chan struct{}), nodes: map[string]Effect{}, reg: prometheus.NewRegistry(), dbReg: prometheus.NewRegistry()}
	schema, err := CompileSchema()
	if err != nil {
		return nil, err
	}
	s.report, s.stream = schema.Report, schema.Stream
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		s.reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		s.reg.MustRegister(h)
		return h
	}
	gauge := func(name, help string, f func() float64) {
		s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	s.received = counter("healthevents_events_received_total", "Events accepted into the connector's queue.")
	s.refused = counter("healthevents_events_refused_total", "Events refused because a queue was full.")
	s.applied = counter("healthevents_effects_applied_total", "Events handled by the quarantine stage (effects).")
	s.failed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "healthevents_events_failed_total",
		Help: "Events a stage gave up on (store: the write failed 3 times; quarantine: the cordon or the update failed)."}, []string{"stage"})
	s.reg.MustRegister(s.failed)
	s.latency = hist("healthevents_effect_latency_seconds", "Time from an event's arrival to its effect.", prometheus.ExponentialBuckets(0.001, 2, 18))
	s.queueWait = hist("healthevents_connector_queue_wait_seconds", "[C] Time an event waited in the connector's queue for a store worker.", stageBuckets)
	s.storeTime = hist("healthevents_connector_store_duration_seconds", "[D] Time the connector's write of one event to the store took.", stageBuckets)
	s.handling = hist("healthevents_quarantine_event_handling_duration_seconds", "[D]->[E] Time the quarantine stage took to handle one event (cordon through the API server, update in the store), its wait for a slot excluded.", stageBuckets)
	gauge("healthevents_backlog", "Events received, not yet applied.", func() float64 { return float64(s.pending.Load()) })
	gauge("healthevents_connector_queue_depth", "Events in the connector's queue.", func() float64 { return float64(s.queued.Load()) })
	gauge("healthevents_quarantine_backlog", "Events stored, not yet handled by the quarantine stage.", func() float64 { return float64(s.backlog.Load()) })
	gauge("healthevents_nodes_quarantined", "Nodes with at least one applied event.", func() float64 { s.mu.Lock(); defer s.mu.Unlock(); return float64(len(s.nodes)) })
	gauge("healthevents_quarantine_workers", "Events the quarantine stage handles at once.", func() float64 { return float64(cfg.QuarantineWorkers) })
	gauge("healthevents_connector_workers", "Events the connector writes at once.", func() float64 { return float64(cfg.StoreWorkers) })
	gauge("healthevents_kube_connected", "1 when events are cordoned through an API server, 0 when in memory only.", func() float64 { return b2f(s.kube != nil) })
	gauge("healthevents_store_connected", "1 when events are written to a document store.", func() float64 { return b2f(s.store != nil) })
	s.grpc = grpc.NewServer()
	s.grpc.RegisterService(&grpc.ServiceDesc{
		ServiceName: Service,
		Methods:     []grpc.MethodDesc{{MethodName: "Report", Handler: s.handleReport}},
		Streams:     []grpc.StreamDesc{{StreamName: "ReportStream", ClientStreams: true, Handler: s.handleStream}},
	}, nil)
	rpb.RegisterServerReflectionServer(s.grpc, reflection.NewServerV1(reflection.ServerOptions{Services: s.grpc, DescriptorResolver: schema.Files}))
	return s, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Start starts the store and the API server it needs, then listens on the
// gRPC and HTTP addresses and starts the stages.
func (s *Server) Start(ctx context.Context) error {
	var cancel context.CancelFunc
	s.ctx, cancel = context.WithCancel(context.Background())
	go func() { <-s.stop; cancel() }()
	var err error
	if s.dir == "" {
		// The store's and the API server's data never go where another
		// run's are.
		if s.dir, err = os.MkdirTemp("", "pipebench-healthevents-"); err != nil {
			return err
		}
		s.ownDir = true
	}
	dir := s.dir
	if s.cfg.Store.Type != StoreNone {
		if s.store, err = openStore(ctx, s.cfg.Store, dir); err != nil {
			return err
		}
		dc := &dbCollector{st: s.store, sent: func() (float64, time.Time) {
			return float64(s.toStore.Load()), time.Unix(0, s.lastRecv.Load())
		}}
		s.dbReg.MustRegister(dc)
		s.workers.Add(1)
		go func() { defer s.workers.Done(); dc.poll(s.stop) }()
	}
	if s.cfg.Kube.Enabled() {
		if s.kube, err = openKube(ctx, s.cfg.Kube, dir); err != nil {
			s.closeBackends()
			return err
		}
	}
	if err := s.listen(); err != nil {
		s.closeBackends()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.Handle("GET /metrics/database", promhttp.HandlerFor(s.dbReg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /metrics/apiserver", s.serveAPIServerMetrics)
	mux.HandleFunc("GET /effects", s.serveEffects)
	mux.HandleFunc("GET /nodes", s.serveNodes)
	s.serveControl(mux)
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.grpc.Serve(s.gln) }()
	go func() { _ = s.httpSrv.Serve(s.hln) }()
	for range s.cfg.StoreWorkers {
		s.workers.Add(1)
		go s.connector()
	}
	for range s.cfg.QuarantineWorkers {
		s.workers.Add(1)
		go s.quarantine()
	}
	return nil
}

func (s *Server) listen() error {
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
	return nil
}

// Endpoint is the gRPC endpoint: unix:///path.sock or host:port.
func (s *Server) Endpoint() string {
	if strings.HasPrefix(s.cfg.Listen, "unix://") {
		return s.cfg.Listen
	}
	return s.gln.Addr().String()
}

// HTTPURL is the base URL of /effects, /nodes and the metrics.
func (s *Server) HTTPURL() string { return "http://" + s.hln.Addr().String() }

// Endpoints implements pipebench.MultiEndpoint: "grpc", "http" and, with a
// store the service started, "mongodb" (its connection string, for the
// mongodb driver's direct benchmark).
func (s *Server) Endpoints() map[string]string {
	m := map[string]string{"grpc": s.Endpoint(), "http": s.HTTPURL()}
	if s.store != nil && s.store.server != nil {
		m["mongodb"] = s.store.server.URI()
	}
	return m
}

// Instances implements pipebench.SUT: the service (this process), the
// store and the API server, each with the metrics the service serves for
// it.
func (s *Server) Instances() []pipebench.Instance {
	in := []pipebench.Instance{{Name: "healthevents-0", PID: os.Getpid(), MetricsURL: s.HTTPURL() + "/metrics"}}
	if s.store != nil {
		pid := 0
		if s.store.server != nil {
			pid = s.store.server.PID()
		}
		in = append(in, pipebench.Instance{Name: "database", PID: pid, MetricsURL: s.HTTPURL() + "/metrics/database"})
	}
	if s.kube != nil {
		in = append(in, pipebench.Instance{Name: "kube-apiserver", PID: s.kube.apiServerPID(), MetricsURL: s.HTTPURL() + "/metrics/apiserver"})
	}
	return in
}

// Store returns the running FerretDB child, nil when the service did not
// start one (for tests that restart it).
func (s *Server) Store() *docstore.Server {
	if s.store == nil {
		return nil
	}
	return s.store.server
}

// KubeClient returns the client the service cordons with, nil without an
// API server.
func (s *Server) KubeClient() kubernetes.Interface {
	if s.kube == nil {
		return nil
	}
	return s.kube.client
}

// Shutdown stops serving and the stages (the backlog is dropped), then the
// store and the API server it started.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.gln == nil {
		if s.ctx != nil {
			close(s.stop) // a start that failed
		}
		s.closeBackends()
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
	s.workers.Wait()
	if p, ok := strings.CutPrefix(s.cfg.Listen, "unix://"); ok {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(p)
		}
	}
	s.closeBackends()
	return err
}

func (s *Server) closeBackends() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if s.kube != nil {
		s.kube.close(ctx)
	}
	if s.store != nil {
		s.store.close(ctx)
	}
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
}

// Applied returns a copy of the effects applied so far, in order.
func (s *Server) Applied() []Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Effect(nil), s.effects...)
}

// take waits for the next event on q; false once the service stops.
func (s *Server) take(q <-chan event) (event, bool) {
	select {
	case <-s.stop:
		return event{}, false
	case ev := <-q:
		return ev, true
	}
}

// connector takes events off the connector's queue and writes each to the
// store (3 tries), then hands it to the quarantine stage.
func (s *Server) connector() {
	defer s.workers.Done()
	ctx := s.ctx
	for {
		ev, ok := s.take(s.connQ)
		if !ok {
			return
		}
		s.queued.Add(-1)
		t0 := time.Now()
		s.queueWait.Observe(t0.Sub(ev.received).Seconds())
		if s.store != nil {
			var err error
			for try := 0; try < 3; try++ {
				if ev.id, err = s.store.insert(ctx, ev); err == nil || ctx.Err() != nil {
					break
				}
			}
			if err != nil {
				s.failed.WithLabelValues("store").Inc()
				s.pending.Add(-1)
				s.toStore.Add(-1)
				continue
			}
			s.storeTime.Observe(time.Since(t0).Seconds())
		}
		ev.stored = time.Now()
		s.backlog.Add(1)
		select {
		case s.quarQ <- ev:
		case <-s.stop:
			return
		}
	}
}

// slot waits for the quarantine's next slot at effect_rate (none when it
// is 0); false when the service stops.
func (s *Server) slot(timer *time.Timer) bool {
	if s.cfg.EffectRate <= 0 {
		return true
	}
	interval := time.Duration(float64(time.Second) / s.cfg.EffectRate)
	s.mu.Lock()
	now := time.Now()
	if s.next.Before(now) {
		s.next = now
	}
	at := s.next
	s.next = s.next.Add(interval)
	s.mu.Unlock()
	if d := time.Until(at); d > 0 {
		timer.Reset(d)
		select {
		case <-s.stop:
			return false
		case <-timer.C:
		}
	}
	return true
}

// quarantine takes stored events one at a time, each at its slot of
// effect_rate: cordons the node through the API server, marks the document
// quarantined, and records the effect.
func (s *Server) quarantine() {
	defer s.workers.Done()
	ctx := s.ctx
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ev, ok := s.take(s.quarQ)
		if !ok {
			return
		}
		if !s.slot(timer) {
			return
		}
		t0 := time.Now()
		var err error
		if s.kube != nil {
			err = s.kube.cordon(ctx, ev)
		}
		if err == nil && s.store != nil {
			err = s.store.markQuarantined(ctx, ev.id)
		}
		at := time.Now()
		s.backlog.Add(-1)
		s.pending.Add(-1)
		if err != nil {
			if ctx.Err() == nil {
				s.failed.WithLabelValues("quarantine").Inc()
			}
			continue
		}
		s.handling.Observe(at.Sub(t0).Seconds())
		e := Effect{Seq: ev.seq, Node: ev.node, Sent: ev.sent, Received: ev.received, Applied: at}
		s.mu.Lock()
		s.effects = append(s.effects, e)
		if _, seen := s.nodes[ev.node]; !seen {
			s.nodes[ev.node] = e
		}
		s.mu.Unlock()
		s.applied.Inc()
		s.latency.Observe(at.Sub(ev.received).Seconds())
	}
}

// enqueue queues one event message; false when the queue is full.
func (s *Server) enqueue(ctx context.Context, m protoreflect.Message) bool {
	f := m.Descriptor().Fields()
	str := func(name protoreflect.Name) string {
		if fd := f.ByName(name); fd != nil {
			return m.Get(fd).String()
		}
		return ""
	}
	ev := event{received: time.Now(), node: str("node_name"), agent: str("agent"), check: str("check_name"),
		seq: m.Get(f.ByName("sequence")).Uint()}
	if fd := f.ByName("severity"); fd != nil {
		if ed := fd.Enum(); ed != nil {
			if v := ed.Values().ByNumber(m.Get(fd).Enum()); v != nil {
				ev.fatal = strings.Contains(string(v.Name()), "FATAL")
			}
		}
	}
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
	// queue_size bounds everything received and not yet applied.
	if s.pending.Add(1) > int64(s.cfg.QueueSize) {
		s.pending.Add(-1)
		s.refused.Inc()
		return false
	}
	s.queued.Add(1)
	s.toStore.Add(1)
	s.lastRecv.Store(ev.received.UnixNano())
	s.connQ <- ev // never blocks: it holds queue_size
	s.received.Inc()
	return true
}

// serveAPIServerMetrics passes the API server's own /metrics through.
func (s *Server) serveAPIServerMetrics(w http.ResponseWriter, r *http.Request) {
	if s.kube == nil {
		http.Error(w, "no API server: set kube.bin or kube.kubeconfig", http.StatusNotFound)
		return
	}
	b, err := s.kube.metrics(r.Context())
	if err != nil {
		http.Error(w, "the API server's /metrics: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write(apiServerFamilies(b))
}

// apiServerPrefixes are the metric families of the API server passed
// through: its requests (count, duration, in flight) and its process. The
// whole /metrics is megabytes; scraped every second through the service
// on a busy machine it missed Prometheus' scrape timeout.
var apiServerPrefixes = []string{"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_current_inflight_requests", "process_"}

// apiServerFamilies keeps the lines of the text format that belong to
// apiServerPrefixes' families (samples, and their # HELP and # TYPE).
func apiServerFamilies(b []byte) []byte {
	out := make([]byte, 0, len(b)/8)
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		name := line
		if rest, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
			name = rest
		} else if rest, ok := bytes.CutPrefix(line, []byte("# TYPE ")); ok {
			name = rest
		}
		for _, p := range apiServerPrefixes {
			if bytes.HasPrefix(name, []byte(p)) {
				out = append(out, line...)
				break
			}
		}
	}
	return out
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

// queryInt reads the query parameter key as a whole number no lower than
// least: def when the parameter is absent, an error naming key when it is
// not such a number.
func queryInt(r *http.Request, key string, least, def int) (int, error) {
	v := r.URL.Query().Get(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		return 0, fmt.Errorf("%s: want a whole number >= %d", key, least)
	}
	return n, nil
}

func (s *Server) serveEffects(w http.ResponseWriter, r *http.Request) {
	from, err := queryInt(r, "from", 0, 0)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	limit, err := queryInt(r, "limit", 1, 10000)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
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

// Reset forgets the effects applied so far (/effects starts again from
// none), for a suite that keeps the service running across its cases; the
// store's documents, the API server's Nodes, the queues and the counters
// carry over, as a system's would.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.effects = nil
	s.nodes = map[string]Effect{}
}
