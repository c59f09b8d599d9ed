// Package jetstream runs a real nats-server with JetStream (built from the
// server's own module) as the embedded system under test: the pipebench
// binary re-executes itself once per node, so the server's memory and CPU
// are measured apart from the generator's. One node, or a cluster of N
// nodes on loopback with a replicated stream; every node stores on disk in
// the run's scratch directory, each with its own storage limit.
//
// After the nodes are up the SUT creates the stream from the scenario (name,
// subjects, limits, discard policy, replicas). When the scenario's sink
// waits to be told where to consume (the nats sink without a url), the SUT
// posts its client URL and stream name to the sink's endpoint.
package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/childproc"
	"github.com/pipebench/pipebench/internal/natsattach"
)

// StreamConfig is the stream the SUT creates.
type StreamConfig struct {
	// Name of the stream.
	Name string `yaml:"name" json:"name"`
	// Subjects the stream captures (wildcards allowed).
	Subjects []string `yaml:"subjects" json:"subjects"`
	// MaxBytes limits the stream's size in bytes (0 = unlimited).
	MaxBytes int64 `yaml:"max_bytes" json:"max_bytes,omitempty"`
	// MaxMsgs limits the number of messages (0 = unlimited).
	MaxMsgs int64 `yaml:"max_msgs" json:"max_msgs,omitempty"`
	// Discard is what happens at a limit: "old" drops the oldest
	// messages, "new" refuses new publishes (the publisher sees
	// "maximum bytes exceeded").
	Discard string `yaml:"discard" json:"discard"`
	// Replicas is the number of copies (at most the number of nodes).
	Replicas int `yaml:"replicas" json:"replicas"`
	// Storage is "file" (default) or "memory".
	Storage string `yaml:"storage" json:"storage"`
}

// Config configures the embedded JetStream.
type Config struct {
	// Nodes is the number of nats-server processes; more than 1 forms a
	// cluster on loopback.
	Nodes int `yaml:"nodes" json:"nodes"`
	// MaxStore is each node's JetStream file storage limit in bytes
	// (0 = the server's default, a share of the disk).
	MaxStore int64 `yaml:"max_store" json:"max_store,omitempty"`
	// MaxPayload is the largest message the server accepts, in bytes
	// (0 = the server's default of 1 MiB).
	MaxPayload int32        `yaml:"max_payload" json:"max_payload,omitempty"`
	Stream     StreamConfig `yaml:"stream" json:"stream"`
	// GoMemLimit for every node, e.g. "400MiB" ("" = unset).
	GoMemLimit string `yaml:"gomemlimit" json:"gomemlimit,omitempty"`
	// StartTimeout bounds the wait for the nodes and the stream.
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
}

// DefaultConfig returns the defaults: one node, a file stream EVENTS on
// events.> with no limits, discard old, one replica.
func DefaultConfig() *Config {
	return &Config{Nodes: 1, Stream: StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Discard: "old", Replicas: 1, Storage: "file"},
		StartTimeout: pipebench.Duration(60 * time.Second)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Nodes < 1 || c.Nodes > 9 {
		errs = append(errs, fmt.Errorf("nodes: %d is outside 1..9", c.Nodes))
	}
	if c.MaxStore < 0 {
		errs = append(errs, fmt.Errorf("max_store: must be 0 (the server's default) or a number of bytes"))
	}
	if c.MaxPayload < 0 {
		errs = append(errs, fmt.Errorf("max_payload: must be 0 (the server's default) or a number of bytes"))
	}
	s := c.Stream
	if s.Name == "" || strings.ContainsAny(s.Name, ". *>\t") {
		errs = append(errs, fmt.Errorf("stream.name: %q must be a non-empty name without spaces, dots or wildcards", s.Name))
	}
	if len(s.Subjects) == 0 {
		errs = append(errs, fmt.Errorf("stream.subjects: give at least one subject, such as events.>"))
	}
	for _, sub := range s.Subjects {
		if sub == "" || strings.ContainsAny(sub, " \t") {
			errs = append(errs, fmt.Errorf("stream.subjects: %q is not a subject", sub))
		}
	}
	if s.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("stream.max_bytes: must be 0 (unlimited) or more"))
	}
	if s.MaxMsgs < 0 {
		errs = append(errs, fmt.Errorf("stream.max_msgs: must be 0 (unlimited) or more"))
	}
	if s.Discard != "old" && s.Discard != "new" {
		errs = append(errs, fmt.Errorf("stream.discard: %q is not old or new", s.Discard))
	}
	if s.Replicas < 1 || s.Replicas > 5 {
		errs = append(errs, fmt.Errorf("stream.replicas: %d is outside 1..5", s.Replicas))
	} else if s.Replicas > c.Nodes {
		errs = append(errs, fmt.Errorf("stream.replicas: %d is more than the %d node(s); raise nodes", s.Replicas, c.Nodes))
	}
	if s.Storage != "file" && s.Storage != "memory" {
		errs = append(errs, fmt.Errorf("stream.storage: %q is not file or memory", s.Storage))
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, fmt.Errorf("start_timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "jetstream" SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("jetstream",
		"a real nats-server "+ServerVersion+" with JetStream as child processes (one node or a loopback cluster), file storage in the run's directory, the stream from the scenario",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) { return New(*c, env), nil })
}

// Server is the running node(s). Start once, Shutdown once.
type Server struct {
	cfg    Config
	notify string // the sink's endpoint to post the client URL to, if http
	dir    string
	nodes  []*node
}

type node struct {
	spec nodeSpec
	proc *childproc.Proc
}

var _ pipebench.SUT = (*Server)(nil)

// New returns a server that is not started. env.Dir holds the storage
// (a temporary directory when empty); an env.Target that is a waiting nats
// sink's endpoint (http://.../pipebench/nats-attach) is told the client URL
// once the stream exists. Any other target is ignored: the system under
// test is the stream, and consumers connect to it.
func New(cfg Config, env pipebench.Env) *Server {
	dir := env.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	s := &Server{cfg: cfg, dir: dir}
	if strings.HasPrefix(env.Target, "http://") && strings.HasSuffix(env.Target, natsattach.Path) {
		s.notify = env.Target
	}
	return s
}

func freePort() (int, error) { return childproc.FreePort() }

// Start starts every node, waits until each serves clients and its
// monitoring endpoint, creates the stream, and tells the sink.
func (s *Server) Start(ctx context.Context) error {
	base, err := os.MkdirTemp(s.dir, "jetstream-")
	if err != nil {
		return fmt.Errorf("create the storage directory: %w", err)
	}
	n := s.cfg.Nodes
	specs := make([]nodeSpec, n)
	for i := range specs {
		sp := &specs[i]
		sp.Name = "nats-" + strconv.Itoa(i)
		sp.StoreDir = filepath.Join(base, sp.Name)
		sp.MaxStore, sp.MaxPayload = s.cfg.MaxStore, s.cfg.MaxPayload
		ports := []*int{&sp.Port, &sp.HTTPPort}
		if n > 1 {
			ports = append(ports, &sp.ClusterPort)
			sp.ClusterName = "pipebench"
		}
		for _, p := range ports {
			if *p, err = freePort(); err != nil {
				return err
			}
		}
	}
	if n > 1 {
		for i := range specs {
			for j := range specs {
				if i != j {
					specs[i].Routes = append(specs[i].Routes, "nats-route://127.0.0.1:"+strconv.Itoa(specs[j].ClusterPort))
				}
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the pipebench binary to run nats-server: %w", err)
	}
	for _, sp := range specs {
		nd, err := s.startNode(exe, base, sp)
		if err != nil {
			s.Shutdown(context.Background())
			return err
		}
		s.nodes = append(s.nodes, nd)
	}
	deadline := time.Now().Add(s.cfg.StartTimeout.D())
	for _, nd := range s.nodes {
		if err := nd.proc.WaitReady(ctx, time.Until(deadline), nd.ready); err != nil {
			s.Shutdown(context.Background())
			return err
		}
	}
	if err := s.createStream(ctx, deadline); err != nil {
		s.Shutdown(context.Background())
		return err
	}
	if s.notify != "" {
		if err := s.tellSink(ctx); err != nil {
			s.Shutdown(context.Background())
			return err
		}
	}
	return nil
}

func (s *Server) startNode(exe, base string, sp nodeSpec) (*node, error) {
	raw, _ := json.Marshal(sp)
	path := filepath.Join(base, sp.Name+".json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ChildEnv+"="+path)
	if s.cfg.GoMemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+s.cfg.GoMemLimit)
	}
	proc, err := childproc.Start("nats-server node "+sp.Name, cmd, filepath.Join(base, sp.Name+".log"))
	if err != nil {
		return nil, err
	}
	return &node{spec: sp, proc: proc}, nil
}

func (nd *node) ready() bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(nd.spec.Port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	resp, err := http.Get(nd.monitorURL() + "/varz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (nd *node) clientURL() string  { return "nats://127.0.0.1:" + strconv.Itoa(nd.spec.Port) }
func (nd *node) monitorURL() string { return "http://127.0.0.1:" + strconv.Itoa(nd.spec.HTTPPort) }

// tail returns the last lines of the child's log.

// StreamSpec returns the jetstream stream configuration the SUT creates.
func (c *Config) StreamSpec() js.StreamConfig {
	sc := js.StreamConfig{Name: c.Stream.Name, Subjects: c.Stream.Subjects, MaxBytes: -1, MaxMsgs: -1,
		Replicas: c.Stream.Replicas, Storage: js.FileStorage, Discard: js.DiscardOld}
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
	return sc
}

// createStream connects as a client and creates the stream, retrying while
// a cluster elects its meta leader.
func (s *Server) createStream(ctx context.Context, deadline time.Time) error {
	nc, err := nats.Connect(s.Endpoint(), nats.Name("pipebench-setup"), nats.Timeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("connect to the embedded nats-server: %w", err)
	}
	defer nc.Close()
	j, err := js.New(nc)
	if err != nil {
		return err
	}
	var last error
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, last = j.CreateOrUpdateStream(cctx, s.cfg.StreamSpec())
		cancel()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("create stream %s: %w", s.cfg.Stream.Name, last)
}

// tellSink tells a waiting nats sink where to consume.
func (s *Server) tellSink(ctx context.Context) error {
	return natsattach.Post(ctx, s.notify, natsattach.Request{URL: s.Endpoint(), Stream: s.cfg.Stream.Name})
}

// Endpoint is the client URL; with a cluster, every node's URL separated by
// commas (nats.go takes that as a server list).
func (s *Server) Endpoint() string {
	urls := make([]string, len(s.nodes))
	for i, nd := range s.nodes {
		urls[i] = nd.clientURL()
	}
	return strings.Join(urls, ",")
}

// Instances lists every node with its PID and monitoring base URL
// (http://127.0.0.1:PORT, serving /varz, /jsz, /connz).
func (s *Server) Instances() []pipebench.Instance {
	out := make([]pipebench.Instance, len(s.nodes))
	for i, nd := range s.nodes {
		out[i] = pipebench.Instance{Name: nd.spec.Name, PID: nd.proc.PID(), MetricsURL: nd.monitorURL()}
	}
	return out
}

// Shutdown sends SIGTERM to every node, waits (bounded by ctx, at most 15 s),
// then kills what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	procs := make([]*childproc.Proc, len(s.nodes))
	for i, nd := range s.nodes {
		procs[i] = nd.proc
	}
	return childproc.Stop(ctx, procs...)
}
