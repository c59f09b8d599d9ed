package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	kafkadriver "github.com/pipebench/pipebench/driver/kafka"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	kafkaobs "github.com/pipebench/pipebench/observer/kafka"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/sut/kafka"
)

// The package's cluster has three brokers.
func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, 3)) }

// Three brokers, a topic replicated three times that needs all three in
// sync: produced records are acknowledged; with one broker killed, the
// observer reports the topic's partitions under-replicated (and the
// cluster two brokers) and the driver classifies the brokers' refusals as
// NOT_ENOUGH_REPLICAS backpressure.
func TestThreeBrokers(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "r3", 3, 3, map[string]string{"min.insync.replicas": "3"})
	cfg := *kafkadriver.DefaultConfig()
	cfg.Bootstrap, cfg.Topic, cfg.Retries, cfg.Timeout = b.Bootstrap(), topic, 1, pipebench.Duration(20*time.Second)
	d, err := kafkadriver.New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, d.Start, d.Shutdown)
	g, err := payload.EventFactory().New(&payload.EventConfig{Size: 100, SeqIn: "header", ContentType: "application/json"}, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(1)
	send := func() pipebench.Outcome {
		bt := g.Next(seq, 1, time.Now())
		seq++
		return d.Send(context.Background(), &bt)
	}
	for i := 0; i < 30; i++ {
		if o := send(); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d with three brokers: %+v", i, o)
		}
	}
	o, err := kafkaobs.New(*kafkaobs.DefaultConfig(), b.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	health := func() (under, brokers float64) {
		pts, err := o.Observe(context.Background(), time.Now())
		if err != nil {
			t.Logf("observe: %v", err)
		}
		for _, p := range pts {
			switch {
			case p.Name == "under_replicated_partitions" && p.Labels["topic"] == topic:
				under = p.Value
			case p.Name == "brokers":
				brokers = p.Value
			}
		}
		return
	}
	if u, n := health(); u != 0 || n != 3 {
		t.Fatalf("before the kill: %v under-replicated, %v brokers", u, n)
	}
	if err := b.Cluster.Kill(3); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Cluster.Restart(context.Background(), 3); err != nil {
			t.Errorf("restart broker 3: %v", err)
		}
	}()
	testutil.Eventually(t, 60*time.Second, func() bool { u, n := health(); return u == 3 && n == 2 },
		"the observer reports the 3 partitions under-replicated and 2 brokers")
	// The surviving brokers' own gauge (each leader counts its
	// partitions short of in-sync replicas) agrees with the metadata's
	// count over every topic, Kafka's internal ones included.
	var own, meta float64
	testutil.Eventually(t, 60*time.Second, func() bool {
		own = brokerMetrics(t, b.Cluster, 3)["broker_under_replicated_partitions"]
		meta = underReplicated(t, b)
		return own == meta && own >= 3
	}, "the brokers' own under-replicated count (%v) matches the metadata's (%v), at least this topic's 3", testutil.Lazy(func() string { return fmt.Sprint(own) }), testutil.Lazy(func() string { return fmt.Sprint(meta) }))
	var last pipebench.Outcome
	testutil.Eventually(t, 60*time.Second, func() bool {
		last = send()
		return last.Class == pipebench.ClassRefused
	}, "a send is refused once a replica is gone")
	if last.Detail != "NOT_ENOUGH_REPLICAS" || last.Code != 19 || last.Unreached || !strings.Contains(last.Message, "NOT_ENOUGH_REPLICAS") {
		t.Fatalf("refused with %+v, want NOT_ENOUGH_REPLICAS (19)", last)
	}
}

// The SUT's configuration: every problem named by its key.
func TestConfig(t *testing.T) {
	c := kafka.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c.Brokers, c.Heap = 7, "lots"
	c.Topics = []kafka.Topic{{Name: "a b", Partitions: 0}, {Name: "x", Partitions: 1, ReplicationFactor: 9}}
	c.Props = map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092"}
	err := c.Validate()
	for _, want := range []string{"brokers:", "heap:", "topics[0].name:", "topics[0].partitions:", "topics[1].replication_factor:", "props: listeners"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
}

// A libs key naming a folder without the jars (or no Java) stops the SUT
// with what to do, as a usage error wrapping ErrNoKafka: nothing is
// fetched past a folder the user named.
func TestNoKafkaSaysWhatToInstall(t *testing.T) {
	c := kafka.DefaultConfig()
	c.Libs = t.TempDir()
	t.Setenv(kafka.LibsEnv, "")
	t.Chdir(t.TempDir())
	err := kafka.New(*c, pipebench.Env{Dir: t.TempDir()}).Start(context.Background())
	var pe *pipebench.Error
	if !errors.Is(err, kafka.ErrNoKafka) || !errors.As(err, &pe) || pe.Code != pipebench.ExitUsage || !strings.Contains(pe.Hint, "pipebench fetches them") {
		t.Fatalf("start without jars: %v", err)
	}
	c.Java = "/nonexistent/java"
	err = kafka.New(*c, pipebench.Env{Dir: t.TempDir()}).Start(context.Background())
	if !errors.As(err, &pe) || !strings.Contains(pe.Hint, "install Java") {
		t.Fatalf("start without java: %v", err)
	}
}

// underReplicated counts the partitions of every topic whose in-sync
// replicas are fewer than their replicas, from the cluster's metadata.
func underReplicated(t *testing.T, b *kafkatest.Broker) float64 {
	md, err := b.Admin(t).Metadata(context.Background())
	if err != nil {
		t.Logf("metadata: %v", err)
		return -1
	}
	n := 0
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			if len(p.ISR) < len(p.Replicas) {
				n++
			}
		}
	}
	return float64(n)
}
