package kafkasink

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/kafkaattach"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/payload"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, 1)) }

// producer writes records with pipebench's headers to chosen partitions,
// as one idempotent producer.
type producer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
}

func newProducer(t *testing.T, b *kafkatest.Broker, topic string) *producer {
	return &producer{t: t, topic: topic, cl: b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))}
}

func (p *producer) send(partition int32, seqs ...uint64) {
	p.t.Helper()
	for _, seq := range seqs {
		r := &kgo.Record{Topic: p.topic, Partition: partition, Value: []byte(`{"data":"x"}`), Headers: []kgo.RecordHeader{
			{Key: payload.HeaderSeq, Value: []byte(strconv.FormatUint(seq, 10))},
			{Key: payload.HeaderSent, Value: []byte(strconv.FormatInt(time.Now().UnixNano(), 10))},
		}}
		if err := p.cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			p.t.Fatal(err)
		}
	}
}

func start(t *testing.T, cfg Config, rec pipebench.Arrivals) *Sink {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := New(cfg)
	testutil.Start(t, func(ctx context.Context) error { return s.Start(ctx, rec) }, s.Shutdown)
	return s
}

func seqs(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// Three partitions read by one group member: every item is delivered once
// with its end-to-end latency; the interleaving of partitions is not
// reordering, an item written after a later one of the same partition is;
// an item written twice is a duplicate.
func TestDeliveredDuplicatesReordered(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "sink", 3, 1, nil)
	p := newProducer(t, b, topic)
	for part := int32(0); part < 3; part++ {
		p.send(part, seqs(uint64(part)*100+1, uint64(part)*100+100)...)
	}
	p.send(1, 150)      // a duplicate
	p.send(2, 302, 301) // 301 after 302 on one partition: reordered
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	arr.Accept(1, 302)
	cfg := *DefaultConfig()
	cfg.Bootstrap, cfg.Topic, cfg.Group = b.Bootstrap(), topic, "g-"+topic
	s := start(t, cfg, arr)
	testutil.Eventually(t, 60*time.Second, func() bool { return s.Delivered() == 303 }, "the sink processes 303 records (has %d)", s.Delivered())
	st := arr.Stats(0, 303)
	if st.Delivered != 302 || st.Duplicates != 1 || st.Reordered != 1 || st.Lost != 0 || s.Reordered() != 2 {
		t.Fatalf("delivered %d duplicates %d reordered %d (sink %d, the late duplicate too) lost %d; want 302 1 1 (2) 0", st.Delivered, st.Duplicates, st.Reordered, s.Reordered(), st.Lost)
	}
	if p50 := st.E2E.ValueAtQuantile(50); p50 <= 0 || p50 > int64(60*time.Second/time.Microsecond) {
		t.Errorf("end-to-end p50 %d µs", p50)
	}
	// The group committed what it processed: its lag, by Kafka's own
	// tool, is zero on every partition.
	testutil.Eventually(t, 30*time.Second, func() bool {
		rows := b.DescribeGroup(t, cfg.Group)
		for _, r := range rows {
			if r.Lag != 0 { // -1: the partition's offset is not committed yet
				return false
			}
		}
		return len(rows) == 3
	}, "kafka-consumer-groups shows the group at lag 0")
}

// Without a bootstrap the sink waits for the SUT to post where to
// consume, then consumes the posted topic.
func TestAttach(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "attach", 1, 1, nil)
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	cfg := *DefaultConfig()
	cfg.Group = "g-" + topic
	s := start(t, cfg, arr)
	if !kafkaattach.Is(s.Endpoint()) {
		t.Fatalf("endpoint %q", s.Endpoint())
	}
	if err := kafkaattach.Post(context.Background(), s.Endpoint(), b.Bootstrap(), topic); err != nil {
		t.Fatal(err)
	}
	<-s.Attached()
	newProducer(t, b, topic).send(0, seqs(1, 20)...)
	testutil.Eventually(t, 60*time.Second, func() bool { return arr.Delivered() == 20 }, "20 delivered (has %d)", arr.Delivered())
	if err := kafkaattach.Post(context.Background(), s.Endpoint(), b.Bootstrap(), topic); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second attach: %v", err)
	}
}

// Faults: a rate limit slows the consumer to it, failures are processed
// again (counted faulted, nothing lost), a paused consumer takes nothing
// until resumed.
func TestFaults(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "faults", 1, 1, nil)
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	cfg := *DefaultConfig()
	cfg.Bootstrap, cfg.Topic, cfg.Group, cfg.NakDelay = b.Bootstrap(), topic, "g-"+topic, pipebench.Duration(time.Millisecond)
	s := start(t, cfg, arr)
	<-s.Attached()
	s.SetFaults(pipebench.FaultPolicy{RateLimit: 100, ErrorRatio: 0.3}, time.Now())
	p := newProducer(t, b, topic)
	began := time.Now()
	p.send(0, seqs(1, 60)...)
	testutil.Eventually(t, 60*time.Second, func() bool { return arr.Delivered() == 60 }, "60 delivered (has %d)", arr.Delivered())
	// 60 records and their retries at 100/s: more than half a second.
	if el := time.Since(began); el < 500*time.Millisecond {
		t.Errorf("60 records at a limit of 100/s took %v", el)
	}
	if s.Faulted() == 0 {
		t.Error("an error ratio of 0.3 faulted nothing")
	}
	s.SetFaults(pipebench.FaultPolicy{}, time.Now())
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	p.send(0, seqs(61, 80)...)
	if testutil.Poll(2*time.Second, func() bool { return arr.Delivered() > 60 }) {
		t.Fatalf("a paused consumer took records: %d delivered", arr.Delivered())
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, func() bool { return arr.Delivered() == 80 }, "80 delivered after the resume (has %d)", arr.Delivered())
	// A phase's outage window pauses the consumer from its start to its
	// end.
	s.SetFaults(pipebench.FaultPolicy{Outages: []pipebench.Window{{Start: 0, Duration: pipebench.Duration(2 * time.Second)}}}, time.Now())
	began = time.Now()
	p.send(0, seqs(81, 90)...)
	testutil.Eventually(t, 60*time.Second, func() bool { return arr.Delivered() == 90 }, "90 delivered after the outage (has %d)", arr.Delivered())
	if el := time.Since(began); el < 1500*time.Millisecond {
		t.Errorf("records sent in a 2 s outage were consumed after %v", el)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Bootstrap = "127.0.0.1:9092" }, "topic:"},
		{func(c *Config) { c.Start = "middle" }, "start:"},
		{func(c *Config) { c.Group = "" }, "group:"},
		{func(c *Config) { c.Listen = "nowhere" }, "listen:"},
		{func(c *Config) { c.SASL.Mechanism = "SCRAM-SHA-1" }, "sasl.mechanism:"},
	} {
		c := DefaultConfig()
		tc.set(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
}

// A topic the brokers do not have is an error naming it at once: told by
// the system under test (the attach answers it, so the system's start
// fails with it) or configured with a bootstrap (Start fails), never a
// wait for partitions until a deadline.
func TestMissingTopicIsNamed(t *testing.T) {
	b := kafkatest.Get(t)
	cfg := *DefaultConfig()
	cfg.Group = "g-missing"
	s := start(t, cfg, kpi.NewArrivals(1, nil))
	began := time.Now()
	err := kafkaattach.Post(context.Background(), s.Endpoint(), b.Bootstrap(), "no-such-topic")
	if err == nil || !strings.Contains(err.Error(), `"no-such-topic"`) {
		t.Errorf("attach to a missing topic: %v, want an error naming it", err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the attach took %s", took)
	}
	cfg.Bootstrap, cfg.Topic = b.Bootstrap(), "no-such-topic"
	sk := New(cfg)
	began = time.Now()
	if err := sk.Start(context.Background(), kpi.NewArrivals(1, nil)); err == nil || !strings.Contains(err.Error(), `"no-such-topic"`) {
		t.Errorf("Start on a missing topic: %v, want an error naming it", err)
		sk.Shutdown(context.Background())
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the start took %s", took)
	}
}
