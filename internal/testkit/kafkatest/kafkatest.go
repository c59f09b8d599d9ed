// Package kafkatest starts a real Apache Kafka (sut/kafka's cluster: child
// JVMs in KRaft mode on loopback) once per test package, for the Kafka
// plug-ins' tests, and puts a TCP proxy in front of it that a test can hold
// (the broker goes silent) or close (the broker is gone) without stopping
// the broker.
//
// Without Java or the jars the tests skip with a message saying how to
// enable them; with PIPEBENCH_KAFKA_REQUIRED=1 (as .ci/run sets) they fail
// instead, so that CI cannot pass by skipping.
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench/sut/kafka"
)

// RequiredEnv names the variable that turns a skip for want of Java or
// the jars into a failure.
const RequiredEnv = "PIPEBENCH_KAFKA_REQUIRED"

// Broker is the running cluster of a test package.
type Broker struct {
	// Cluster is the brokers themselves.
	Cluster *kafka.Cluster
	// Proxy stands in front of a single broker (nil for several): the
	// broker advertises the proxy's address, so every client connection
	// goes through it.
	Proxy  *Proxy
	topics atomic.Int64
}

// Bootstrap is the address clients connect to: the proxy's when there is
// one, else every broker's.
func (b *Broker) Bootstrap() string {
	if b.Proxy != nil {
		return b.Proxy.Addr()
	}
	return b.Cluster.Bootstrap()
}

var (
	current *Broker
	skipWhy string
)

// Main starts a cluster of n brokers (one with a proxy in front), runs the
// package's tests and stops it. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, 1)) }
func Main(m *testing.M, n int) int {
	b, err := start(n)
	if err != nil {
		if !errors.Is(err, kafka.ErrNoKafka) {
			fmt.Fprintln(os.Stderr, "kafkatest:", err)
			return 1
		}
		skipWhy = err.Error() + "; " + enableHint
	}
	current = b
	code := m.Run()
	if b != nil {
		b.Cluster.Stop(context.Background())
		if b.Proxy != nil {
			b.Proxy.Close()
		}
	}
	return code
}

const enableHint = "to run the Kafka tests, install Java 17+ and fetch the jars: `go run ./cmd/pipebench fetch kafka --dir .cache/kafka-libs` and set " +
	kafka.LibsEnv + "=$PWD/.cache/kafka-libs (.ci/run does both); the tests never fetch them themselves"

// start starts n brokers with small heaps and the quick JIT (the tests
// need the broker up fast, not at full speed).
func start(n int) (*Broker, error) {
	p := kafka.ClusterParams{Brokers: n, Heap: "384m", JVMOpts: []string{"-XX:TieredStopAtLevel=1"}, StartTimeout: 3 * time.Minute, NoFetch: true,
		Props: map[string]string{"auto.create.topics.enable": "false"}}
	b := &Broker{}
	if n == 1 {
		px, err := NewProxy()
		if err != nil {
			return nil, err
		}
		b.Proxy = px
		p.Props["advertised.listeners"] = "PLAINTEXT://" + px.Addr()
	}
	dir, err := os.MkdirTemp("", "pipebench-kafkatest-")
	if err != nil {
		return nil, err
	}
	p.Dir = dir
	c, err := kafka.StartCluster(context.Background(), p)
	if err != nil {
		os.RemoveAll(dir)
		if b.Proxy != nil {
			b.Proxy.Close()
		}
		return nil, err
	}
	b.Cluster = c
	if b.Proxy != nil {
		b.Proxy.SetTarget(c.Brokers()[0].Addr())
	}
	return b, nil
}

// Get returns the package's cluster, or skips the test (fails it with
// PIPEBENCH_KAFKA_REQUIRED=1) when Java or the jars are absent.
func Get(tb testing.TB) *Broker {
	tb.Helper()
	if current == nil {
		if os.Getenv(RequiredEnv) == "1" {
			tb.Fatalf("the Kafka tests are required (%s=1) but cannot run: %s", RequiredEnv, skipWhy)
		}
		tb.Skip(skipWhy)
	}
	if current.Proxy != nil {
		current.Proxy.Set(Pass)
	}
	return current
}

// Client returns a franz-go client of the cluster (through the proxy
// when there is one), closed when the test ends.
func (b *Broker) Client(tb testing.TB, opts ...kgo.Opt) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(b.Bootstrap(), ",")...)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return cl
}

// Topic creates a new topic with a name unique in the package (prefix and
// a number), of partitions partitions and replication factor rf (0: the
// cluster's default), with configs, and returns its name.
func (b *Broker) Topic(tb testing.TB, prefix string, partitions int32, rf int16, configs map[string]string) string {
	tb.Helper()
	name := prefix + "-" + strconv.FormatInt(b.topics.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := kafka.CreateTopics(ctx, b.Bootstrap(), len(b.Cluster.Brokers()),
		[]kafka.Topic{{Name: name, Partitions: partitions, ReplicationFactor: rf, Configs: configs}}); err != nil {
		tb.Fatal(err)
	}
	return name
}

// Admin returns an admin client of the cluster, closed when the test ends.
func (b *Broker) Admin(tb testing.TB) *kadm.Client {
	return kadm.NewClient(b.Client(tb))
}

// EndOffsets returns the sum of the log-end offsets of topic's partitions:
// the records it holds when it was never trimmed.
func (b *Broker) EndOffsets(tb testing.TB, topic string) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	offs, err := b.Admin(tb).ListEndOffsets(ctx, topic)
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			tb.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		n += o.Offset
	})
	return n
}

// Need skips the test (fails it with PIPEBENCH_KAFKA_REQUIRED=1) unless
// Java and the jars are here, for tests that start Kafka themselves (the
// embedded SUT of a scenario).
func Need(tb testing.TB) {
	tb.Helper()
	_, err := kafka.FindJava("")
	if err == nil {
		_, err = kafka.EnsureLibs(context.Background(), kafka.LibsParams{NoFetch: true})
	}
	if err == nil {
		return
	}
	if os.Getenv(RequiredEnv) == "1" {
		tb.Fatalf("the Kafka tests are required (%s=1) but cannot run: %v; %s", RequiredEnv, err, enableHint)
	}
	tb.Skip(err.Error() + "; " + enableHint)
}
