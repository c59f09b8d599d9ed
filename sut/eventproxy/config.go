package eventproxy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/sut/plumbing/natscluster"
)

// StreamConfig is the JetStream stream the proxy publishes into.
type StreamConfig struct {
	// Name of the stream.
	Name string `yaml:"name" json:"name"`
	// MaxBytes limits the stream's size in bytes (0 = unlimited).
	MaxBytes int64 `yaml:"max_bytes" json:"max_bytes,omitempty"`
	// MaxMsgs limits the number of messages (0 = unlimited).
	MaxMsgs int64 `yaml:"max_msgs" json:"max_msgs,omitempty"`
	// Discard is what happens at a limit: "old" drops the oldest
	// messages, "new" refuses new publishes (the proxy answers 507).
	Discard string `yaml:"discard" json:"discard"`
	// Storage is "file" (default, in the run's directory) or "memory".
	Storage string `yaml:"storage" json:"storage"`
	// Retention is "limits" (default: messages stay until a limit
	// discards them), "interest" (a message is removed once every
	// consumer acknowledged it; published with no consumer, it is
	// dropped at once) or "workqueue" (once one consumer did).
	Retention string `yaml:"retention" json:"retention"`
	// Replicas is the number of copies on a cluster (at most nats.nodes).
	Replicas int `yaml:"replicas" json:"replicas"`
	// Placement is the node a stream of one replica is put on (nats-0,
	// ...): that node's storage fills first. Empty lets the cluster choose.
	Placement string `yaml:"placement" json:"placement,omitempty"`
}

// NATSConfig is the nats-server nodes behind the proxy when they run as
// processes of their own.
type NATSConfig struct {
	// Nodes is the number of nats-server processes behind the proxy
	// (more than 1: a cluster on loopback). 0, the default, embeds one
	// server in the proxy's own process, and the proxy runs inside
	// pipebench; 1 or more run the proxy as a process of its own too, as
	// a cluster deploys it (memory and CPU per instance, apart from the
	// generator's).
	Nodes int `yaml:"nodes" json:"nodes"`
	// MaxStore is each node's JetStream storage limit in bytes (0: the
	// server's default).
	MaxStore int64 `yaml:"max_store" json:"max_store,omitempty"`
	// MaxStorePerNode gives each node a limit of its own, in order.
	MaxStorePerNode []int64 `yaml:"max_store_per_node" json:"max_store_per_node,omitempty"`
	// GoMemLimit for every node ("" = unset).
	GoMemLimit string `yaml:"gomemlimit" json:"gomemlimit,omitempty"`
}

// Config configures the event publisher proxy and its embedded nats-server.
type Config struct {
	// Prefix starts every subject: an event of type T is published on
	// PREFIX.T (characters other than letters, digits, '-' and '_' in T
	// become '_'); the stream captures PREFIX.>.
	Prefix string       `yaml:"prefix" json:"prefix"`
	Stream StreamConfig `yaml:"stream" json:"stream"`
	// MaxBodyBytes is the largest request body accepted (larger: 413).
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes"`
	// PublishTimeout bounds the wait for one JetStream publish ack
	// (exceeded: 504).
	PublishTimeout pipebench.Duration `yaml:"publish_timeout" json:"publish_timeout"`
	// MaxStore is the server's JetStream file storage limit in bytes
	// (0 = the server's default, a share of the disk).
	MaxStore int64 `yaml:"max_store" json:"max_store,omitempty"`
	// StartTimeout bounds the wait for the server and the stream.
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
	// NATS runs the nats-server nodes as processes of their own.
	NATS NATSConfig `yaml:"nats" json:"nats"`
	// Chaos is a schedule of faults (restart, kill, freeze, lame-duck) of
	// the nodes (nats-0, ..., consumer-leader, stream-leader) or the
	// proxy itself (proxy), from the moment the system was ready; the
	// times scale with --duration. It needs nats.nodes.
	Chaos []natscluster.Chaos `yaml:"chaos" json:"chaos,omitempty"`
}

// Separate reports whether the nodes and the proxy run as processes of
// their own.
func (c *Config) Separate() bool { return c.NATS.Nodes > 0 }

// ScaleTime implements pipebench.TimeScaler: the chaos schedule follows
// the phases when a run is scaled.
func (c *Config) ScaleTime(f float64) any {
	out := *c
	out.Chaos = natscluster.ScaleChaos(c.Chaos, f)
	return &out
}

var _ pipebench.TimeScaler = (*Config)(nil)

// DefaultConfig returns the defaults: subjects events.<type>, a file stream
// EVENTS without limits discarding old messages, 1 MiB bodies, a 5 s publish
// timeout.
func DefaultConfig() *Config {
	return &Config{Prefix: "events", Stream: StreamConfig{Name: "EVENTS", Discard: "old", Storage: "file", Retention: "limits", Replicas: 1},
		MaxBodyBytes: 1 << 20, PublishTimeout: pipebench.Duration(5 * time.Second),
		StartTimeout: pipebench.Duration(30 * time.Second)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Prefix == "" || strings.ContainsAny(c.Prefix, " *>\t") || strings.HasPrefix(c.Prefix, ".") || strings.HasSuffix(c.Prefix, ".") {
		errs = append(errs, fmt.Errorf("prefix: %q must be a non-empty subject without spaces or wildcards, not starting or ending with a dot", c.Prefix))
	}
	s := c.Stream
	if s.Name == "" || strings.ContainsAny(s.Name, ". *>\t") {
		errs = append(errs, fmt.Errorf("stream.name: %q must be a non-empty name without spaces, dots or wildcards", s.Name))
	}
	if s.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("stream.max_bytes: must be 0 (unlimited) or a number of bytes"))
	}
	if s.MaxMsgs < 0 {
		errs = append(errs, fmt.Errorf("stream.max_msgs: must be 0 (unlimited) or a number of messages"))
	}
	if s.Discard != "old" && s.Discard != "new" {
		errs = append(errs, fmt.Errorf("stream.discard: %q is not old or new", s.Discard))
	}
	if s.Storage != "file" && s.Storage != "memory" {
		errs = append(errs, fmt.Errorf("stream.storage: %q is not file or memory", s.Storage))
	}
	if !slices.Contains([]string{"limits", "interest", "workqueue"}, s.Retention) {
		errs = append(errs, fmt.Errorf("stream.retention: %q is not limits, interest or workqueue", s.Retention))
	}
	// The replicas against the nodes is a rule on two keys: said of the
	// stream, so that the schema's bound on replicas is its own.
	if nodes := max(c.NATS.Nodes, 1); s.Replicas < 1 || s.Replicas > 5 {
		errs = append(errs, fmt.Errorf("stream.replicas: %d is outside 1..5", s.Replicas))
	} else if s.Replicas > nodes {
		errs = append(errs, fmt.Errorf("stream: replicas %d is more than the %d node(s) (nats.nodes): raise nats.nodes", s.Replicas, nodes))
	}
	if s.Placement != "" && (!c.Separate() || !slices.Contains(natscluster.NodeNames(c.NATS.Nodes), s.Placement)) {
		errs = append(errs, fmt.Errorf("stream.placement: %q is not a node: give nats.nodes and one of nats-0, nats-1, ...", s.Placement))
	} else if s.Placement != "" && s.Replicas > 1 {
		errs = append(errs, fmt.Errorf("stream.placement: puts one replica on one node; it needs replicas: 1"))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max_body_bytes: must be at least 1"))
	}
	if c.PublishTimeout <= 0 {
		errs = append(errs, fmt.Errorf("publish_timeout: must be more than 0, e.g. 5s"))
	}
	if c.MaxStore < 0 {
		errs = append(errs, fmt.Errorf("max_store: must be 0 (the server's default) or a number of bytes"))
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, fmt.Errorf("start_timeout: must be more than 0, e.g. 30s"))
	}
	if c.NATS.Nodes < 0 || c.NATS.Nodes > 9 {
		errs = append(errs, fmt.Errorf("nats.nodes: %d is outside 0..9", c.NATS.Nodes))
	}
	if c.NATS.MaxStore < 0 {
		errs = append(errs, fmt.Errorf("nats.max_store: must be 0 (the server's default) or a number of bytes"))
	}
	if n := len(c.NATS.MaxStorePerNode); n > 0 && n != c.NATS.Nodes {
		errs = append(errs, fmt.Errorf("nats.max_store_per_node: gives %d limits for %d nodes: give one per node", n, c.NATS.Nodes))
	}
	if c.Separate() && c.MaxStore > 0 {
		errs = append(errs, fmt.Errorf("max_store: is the embedded server's; with nats.nodes give nats.max_store"))
	}
	if len(c.Chaos) > 0 && !c.Separate() {
		errs = append(errs, fmt.Errorf("chaos: needs the nodes and the proxy as processes of their own: give nats.nodes"))
	} else {
		errs = append(errs, natscluster.ValidateChaos(c.Chaos, append(natscluster.NodeNames(c.NATS.Nodes), "proxy"))...)
	}
	return errors.Join(errs...)
}
