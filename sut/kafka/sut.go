// Package kafka runs a real Apache Kafka as the embedded system under
// test: one broker or a cluster of up to five on loopback, in KRaft mode
// (each broker also a controller voter), each a child JVM bounded by its
// heap, on the machine's Java and the Apache jars pinned in jars.txt,
// which it fetches from Maven Central into the user's cache the first
// time (fetch.go), each checked against its SHA-256. The data lives in the run's scratch
// directory; the brokers are stopped with the run and die with pipebench.
//
// After the brokers are up the SUT creates the scenario's topics
// (partitions, replication, min.insync.replicas, further configs) and,
// when the scenario's kafka sink waits to be told where to consume, posts
// the bootstrap list and the first topic to it. Without Java or the jars
// the error says what to install; a user's own cluster needs no SUT (the
// driver's, sink's and observer's bootstrap key).
//
// The package also exports the cluster itself (StartCluster), which the
// Kafka plug-ins' tests and bench/kafka.sh run on.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/kafkaattach"
	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
)

// Config configures the embedded Kafka.
type Config struct {
	// Brokers is the number of broker processes (1..5).
	Brokers int `yaml:"brokers" json:"brokers"`
	// Topics are created once the brokers are up.
	Topics []Topic `yaml:"topics" json:"topics"`
	// Heap is each broker JVM's maximum heap (-Xmx), such as 512m.
	Heap string `yaml:"heap" json:"heap"`
	// Libs is the folder of Kafka jars; empty takes $PIPEBENCH_KAFKA_LIBS,
	// then .cache/kafka-libs, then the user's cache folder
	// (~/.cache/pipebench/kafka-VERSION), where pipebench fetches the
	// pinned jars from Maven Central ($PIPEBENCH_MAVEN_REPO: a mirror) the
	// first time, each checked against its SHA-256.
	Libs string `yaml:"libs" json:"libs,omitempty"`
	// Java is the java command; empty takes $JAVA_HOME/bin/java, then
	// java on PATH.
	Java string `yaml:"java" json:"java,omitempty"`
	// Props are broker properties on top of the defaults
	// (num.network.threads, log.flush.interval.messages, ...).
	Props map[string]string `yaml:"props" json:"props,omitempty"`
	// StartTimeout bounds the start of the brokers and the topics (the
	// jars' first fetch not counted); a broker that exits, or uses no CPU
	// and logs nothing for a minute, fails the start sooner.
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
}

// DefaultConfig returns the defaults: one broker with a 512 MiB heap and
// a topic "events" of 4 partitions.
func DefaultConfig() *Config {
	return &Config{Brokers: 1, Heap: "512m", Topics: []Topic{{Name: "events", Partitions: 4}},
		StartTimeout: pipebench.Duration(5 * time.Minute)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Brokers < 1 || c.Brokers > 5 {
		errs = append(errs, fmt.Errorf("brokers: %d is outside 1..5", c.Brokers))
	}
	if !validHeap(c.Heap) {
		errs = append(errs, fmt.Errorf("heap: %q is not a JVM heap size such as 512m or 1g", c.Heap))
	}
	seen := map[string]bool{}
	for i, t := range c.Topics {
		key := "topics[" + strconv.Itoa(i) + "]"
		if !kafkaclient.ValidTopic(t.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %q is not a topic name (letters, digits, '.', '_', '-', at most 249)", key, t.Name))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is named twice", key, t.Name))
		}
		seen[t.Name] = true
		if t.Partitions < 1 || t.Partitions > 10000 {
			errs = append(errs, fmt.Errorf("%s.partitions: %d is outside 1..10000", key, t.Partitions))
		}
		if t.ReplicationFactor < 0 || int(t.ReplicationFactor) > c.Brokers {
			errs = append(errs, fmt.Errorf("%s.replication_factor: %d is more than the %d broker(s); raise brokers", key, t.ReplicationFactor, c.Brokers))
		}
		if t.MinInsyncReplicas < 0 {
			errs = append(errs, fmt.Errorf("%s.min_insync_replicas: must be 0 (the broker's default) or more", key))
		}
	}
	for k := range c.Props {
		if slices.Contains(ownProps, k) {
			errs = append(errs, fmt.Errorf("props: %s is set by the SUT (loopback listeners, node ids, data folders)", k))
		}
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, fmt.Errorf("start_timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}

func validHeap(h string) bool {
	if len(h) < 2 {
		return false
	}
	n, err := strconv.Atoi(h[:len(h)-1])
	return err == nil && n > 0 && strings.ContainsRune("mMgG", rune(h[len(h)-1]))
}

// Factory returns the factory of the "kafka" SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("kafka",
		"a real Apache Kafka "+Version+" (KRaft, one broker or a loopback cluster) as child JVMs on the machine's Java, the scenario's topics created",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) { return New(*c, env), nil })
}

// Server is the running brokers. Start once, Shutdown once.
type Server struct {
	cfg     Config
	log     *slog.Logger
	dir     string
	notify  string // a waiting kafka sink's attach endpoint
	cluster *Cluster
}

var _ pipebench.SUT = (*Server)(nil)

// New returns a server that is not started. env.Dir holds the data; an
// env.Target that is a waiting kafka sink's endpoint is told the
// bootstrap list and the first topic once the topics exist. Any other
// target is ignored: the system under test is the topic, and consumers
// connect to it.
func New(cfg Config, env pipebench.Env) *Server {
	s := &Server{cfg: cfg, dir: env.Dir, log: env.Log()}
	if kafkaattach.Is(env.Target) {
		s.notify = env.Target
	}
	return s
}

// Start starts the brokers, creates the topics and tells the sink.
func (s *Server) Start(ctx context.Context) error {
	c, err := StartCluster(ctx, ClusterParams{Brokers: s.cfg.Brokers, Dir: s.dir, Libs: s.cfg.Libs, Java: s.cfg.Java,
		Heap: s.cfg.Heap, Props: s.cfg.Props, StartTimeout: s.cfg.StartTimeout.D(), Logger: s.log})
	if err != nil {
		return err
	}
	s.cluster = c
	tctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout.D())
	defer cancel()
	if err := CreateTopics(tctx, c.Bootstrap(), s.cfg.Brokers, s.cfg.Topics); err != nil {
		s.Shutdown(context.Background())
		return err
	}
	if s.notify != "" {
		topic := ""
		if len(s.cfg.Topics) > 0 {
			topic = s.cfg.Topics[0].Name
		}
		if err := kafkaattach.Post(ctx, s.notify, c.Bootstrap(), topic); err != nil {
			s.Shutdown(context.Background())
			return err
		}
	}
	return nil
}

// Endpoint is the bootstrap list: every broker's 127.0.0.1:PORT,
// comma-separated.
func (s *Server) Endpoint() string {
	if s.cluster == nil {
		return ""
	}
	return s.cluster.Bootstrap()
}

// Instances lists every broker (kafka-1, ...) with its PID, for the
// process observer, and its metrics endpoint (the JMX exporter's), for
// the prometheus observer's kafka preset.
func (s *Server) Instances() []pipebench.Instance {
	if s.cluster == nil {
		return nil
	}
	var out []pipebench.Instance
	for _, b := range s.cluster.Brokers() {
		out = append(out, pipebench.Instance{Name: "kafka-" + strconv.Itoa(int(b.ID)), PID: b.PID(), MetricsURL: b.MetricsURL()})
	}
	return out
}

// Cluster is the running cluster (nil before Start).
func (s *Server) Cluster() *Cluster { return s.cluster }

// Shutdown stops every broker (SIGTERM, then SIGKILL past ctx or 15 s) and
// removes their data.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Stop(ctx)
}

var _ pipebench.ResourceHolder = (*Config)(nil)

// Holds implements pipebench.ResourceHolder: the topics the brokers are
// given. (The brokers' own auto-creation does not count: franz-go's
// producers and consumers do not ask for it.)
func (c *Config) Holds(kind string) []string {
	if kind != kafkaclient.TopicKind {
		return nil
	}
	names := make([]string, len(c.Topics))
	for i, t := range c.Topics {
		names[i] = t.Name
	}
	return names
}
