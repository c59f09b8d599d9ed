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
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/natsattach"
	"github.com/pipebench/pipebench/sut/plumbing/natscluster"
)

// StreamConfig is the stream the SUT creates.
type StreamConfig struct {
	// Name of the stream.
	Name string `yaml:"name" json:"name"`
	// Subjects the stream captures (wildcards allowed).
	Subjects []string `yaml:"subjects" json:"subjects"`
	// MaxBytes limits the stream's size in bytes (0 = unlimited).
	MaxBytes int64 `yaml:"max_bytes" json:"max_bytes,omitempty"`
	// MaxMsgs limits the number of messages (0 = unlimited). With
	// retention interest or workqueue a message leaves the stream once
	// consumed, so it bounds the messages outstanding; with limits it
	// bounds the messages stored, consumed or not.
	MaxMsgs int64 `yaml:"max_msgs" json:"max_msgs,omitempty"`
	// Discard is what happens at a limit: "old" drops the oldest
	// messages, "new" refuses new publishes (the publisher sees
	// "maximum bytes exceeded").
	Discard string `yaml:"discard" json:"discard"`
	// Replicas is the number of copies (at most the number of nodes).
	Replicas int `yaml:"replicas" json:"replicas"`
	// Storage is "file" (default) or "memory".
	Storage string `yaml:"storage" json:"storage"`
	// Retention is "limits" (default: messages stay until a limit
	// discards them), "interest" (a message is removed once every
	// consumer acknowledged it) or "workqueue" (once one consumer did).
	Retention string `yaml:"retention" json:"retention"`
	// Placement is the node a stream of one replica is put on (nats-0,
	// nats-1, ...): that node's storage fills while the others have room.
	// Empty lets the cluster choose.
	Placement string `yaml:"placement" json:"placement,omitempty"`
}

// Config configures the embedded JetStream.
type Config struct {
	// Nodes is the number of nats-server processes; more than 1 forms a
	// cluster on loopback.
	Nodes int `yaml:"nodes" json:"nodes"`
	// MaxStore is each node's JetStream file storage limit in bytes
	// (0 = the server's default, a share of the disk).
	MaxStore int64 `yaml:"max_store" json:"max_store,omitempty"`
	// MaxStorePerNode gives each node a limit of its own (one value per
	// node, in order), instead of MaxStore for all.
	MaxStorePerNode []int64 `yaml:"max_store_per_node" json:"max_store_per_node,omitempty"`
	// MaxPayload is the largest message the server accepts, in bytes
	// (0 = the server's default of 1 MiB).
	MaxPayload int32        `yaml:"max_payload" json:"max_payload,omitempty"`
	Stream     StreamConfig `yaml:"stream" json:"stream"`
	// GoMemLimit for every node, e.g. "400MiB" ("" = unset).
	GoMemLimit string `yaml:"gomemlimit" json:"gomemlimit,omitempty"`
	// StartTimeout bounds the wait for the nodes and the stream.
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
	// Chaos is a schedule of faults of the nodes: restart (kill -9 and
	// start again after a while, a pod restart), kill, freeze (a hung
	// process) or lame-duck, each at a time from the moment the nodes
	// were ready. The times scale with --duration.
	Chaos []natscluster.Chaos `yaml:"chaos" json:"chaos,omitempty"`
	// ScaleLimits makes the stream's max_msgs and max_bytes scale with
	// --duration as the phases do, so that a cap sized to be reached and
	// drained in a share of the run keeps that share.
	ScaleLimits bool `yaml:"scale_limits" json:"scale_limits,omitempty"`
}

// DefaultConfig returns the defaults: one node, a file stream EVENTS on
// events.> with no limits, discard old, one replica, limits retention.
func DefaultConfig() *Config {
	return &Config{Nodes: 1, Stream: StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Discard: "old", Replicas: 1, Storage: "file", Retention: "limits"},
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
	if n := len(c.MaxStorePerNode); n > 0 && n != c.Nodes {
		errs = append(errs, fmt.Errorf("max_store_per_node: gives %d limits for %d nodes: give one per node", n, c.Nodes))
	}
	for _, m := range c.MaxStorePerNode {
		if m < 0 {
			errs = append(errs, fmt.Errorf("max_store_per_node: %d is not a number of bytes", m))
		}
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
		// a rule on two keys: said of the stream, so that the schema's
		// bound on replicas is its own
		errs = append(errs, fmt.Errorf("stream: replicas %d is more than the %d node(s): raise nodes", s.Replicas, c.Nodes))
	}
	if s.Storage != "file" && s.Storage != "memory" {
		errs = append(errs, fmt.Errorf("stream.storage: %q is not file or memory", s.Storage))
	}
	if !slices.Contains(Retentions, s.Retention) {
		errs = append(errs, fmt.Errorf("stream.retention: %q is not %s", s.Retention, strings.Join(Retentions, ", ")))
	}
	if s.Placement != "" && !slices.Contains(natscluster.NodeNames(c.Nodes), s.Placement) {
		errs = append(errs, fmt.Errorf("stream.placement: %q is not a node: use one of %s", s.Placement, strings.Join(natscluster.NodeNames(c.Nodes), ", ")))
	} else if s.Placement != "" && s.Replicas > 1 {
		errs = append(errs, fmt.Errorf("stream.placement: puts one replica on one node; it needs replicas: 1"))
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, fmt.Errorf("start_timeout: must be more than 0"))
	}
	errs = append(errs, natscluster.ValidateChaos(c.Chaos, natscluster.NodeNames(c.Nodes))...)
	return errors.Join(errs...)
}

// Retentions are the stream retention policies.
var Retentions = []string{"limits", "interest", "workqueue"}

// ScaleTime implements pipebench.TimeScaler: the chaos schedule, and with
// ScaleLimits the stream's max_msgs and max_bytes, multiplied by f.
func (c *Config) ScaleTime(f float64) any {
	out := *c
	out.Chaos = natscluster.ScaleChaos(c.Chaos, f)
	if c.ScaleLimits {
		out.Stream.MaxMsgs = scaleLimit(c.Stream.MaxMsgs, f)
		out.Stream.MaxBytes = scaleLimit(c.Stream.MaxBytes, f)
	}
	return &out
}

// scaleLimit multiplies a limit (0: none) by f, keeping at least 1.
func scaleLimit(v int64, f float64) int64 {
	if v <= 0 {
		return v
	}
	return max(1, int64(math.Round(float64(v)*f)))
}

var _ pipebench.TimeScaler = (*Config)(nil)

// Factory returns the factory of the "jetstream" SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("jetstream",
		"a real nats-server "+ServerVersion+" with JetStream as child processes (one node or a loopback cluster), file storage in the run's directory, the stream from the scenario",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) { return New(*c, env), nil })
}

// Server is the running node(s). Start once, Shutdown once.
type Server struct {
	cfg     Config
	notify  string // the sink's endpoint to post the client URL to, if http
	dir     string
	log     *slog.Logger
	cluster *natscluster.Cluster
	chaos   *natscluster.Schedule
}

var _ pipebench.SUT = (*Server)(nil)

// New returns a server that is not started. env.Dir holds the storage
// (a temporary directory when empty); an env.Target that is a waiting nats
// sink's endpoint (http://.../pipebench/nats-attach) is told the client URL
// once the stream exists. Any other target is ignored: the system under
// test is the stream, and consumers connect to it.
func New(cfg Config, env pipebench.Env) *Server {
	s := &Server{cfg: cfg, dir: env.ScratchDir(), log: env.Log()}
	if strings.HasPrefix(env.Target, "http://") && strings.HasSuffix(env.Target, natsattach.Path) {
		s.notify = env.Target
	}
	return s
}

// Start starts every node, waits until each serves clients and its
// monitoring, creates the stream, tells the sink and starts the chaos
// schedule.
func (s *Server) Start(ctx context.Context) error {
	p := natscluster.Params{Nodes: s.cfg.Nodes, MaxPayload: s.cfg.MaxPayload, Dir: s.dir, GoMemLimit: s.cfg.GoMemLimit,
		StartTimeout: s.cfg.StartTimeout.D(), MaxStore: s.cfg.MaxStorePerNode}
	if len(p.MaxStore) == 0 {
		p.MaxStore = []int64{s.cfg.MaxStore}
	}
	for _, name := range natscluster.NodeNames(s.cfg.Nodes) {
		p.Tags = append(p.Tags, []string{NodeTag(name)})
	}
	deadline := time.Now().Add(s.cfg.StartTimeout.D())
	c, err := natscluster.Start(ctx, p)
	if err != nil {
		return err
	}
	s.cluster = c
	if err := natscluster.CreateStream(ctx, c.ClientURL(), s.cfg.StreamSpec(), deadline); err != nil {
		s.Shutdown(context.Background())
		return err
	}
	if s.notify != "" {
		if err := natsattach.Post(ctx, s.notify, natsattach.Request{URL: s.Endpoint(), Stream: s.cfg.Stream.Name}); err != nil {
			s.Shutdown(context.Background())
			return err
		}
	}
	if len(s.cfg.Chaos) > 0 {
		s.chaos = natscluster.RunChaos(s.cfg.Chaos, c.Resolver(s.cfg.Stream.Name, nil), s.cfg.StartTimeout.D(), s.log.Info)
	}
	return nil
}

// NodeTag is the server tag every node carries, which a stream's
// placement asks for: node:nats-0, ...
func NodeTag(node string) string { return natscluster.NodeTag(node) }

// StreamSpec returns the jetstream stream configuration the SUT creates.
func (c *Config) StreamSpec() js.StreamConfig {
	s := c.Stream
	return natscluster.Stream{Name: s.Name, Subjects: s.Subjects, MaxBytes: s.MaxBytes, MaxMsgs: s.MaxMsgs, Discard: s.Discard,
		Storage: s.Storage, Retention: s.Retention, Replicas: s.Replicas, Placement: s.Placement}.Spec()
}

// Endpoint is the client URL; with a cluster, every node's URL separated by
// commas (nats.go takes that as a server list).
func (s *Server) Endpoint() string {
	if s.cluster == nil {
		return ""
	}
	return s.cluster.ClientURL()
}

// Cluster returns the running nodes (nil before Start), for tests that
// kill, restart or freeze one.
func (s *Server) Cluster() *natscluster.Cluster { return s.cluster }

// Instances lists every node with its PID and monitoring base URL (serving
// /varz, /jsz, /connz, /routez, /healthz through the cluster's front).
func (s *Server) Instances() []pipebench.Instance {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Instances()
}

// Shutdown stops the chaos schedule (thawing a frozen node), sends SIGTERM
// to every node, waits (bounded by ctx, at most 15 s), then kills what is
// left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.chaos.Stop()
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Stop(ctx)
}
