package kafka_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	promobs "github.com/pipebench/pipebench/observer/prometheus"
	"github.com/pipebench/pipebench/sut/kafka"
)

// brokerMetrics reads every running broker's own metrics through the
// prometheus observer's kafka preset, plus the given mappings, and sums
// each KPI over the brokers.
func brokerMetrics(t *testing.T, c *kafka.Cluster, skip int32, extra ...promobs.Mapping) map[string]float64 {
	t.Helper()
	var ins []pipebench.Instance
	for _, b := range c.Brokers() {
		if b.ID == skip {
			continue
		}
		if b.MetricsURL() == "" {
			t.Fatalf("broker %d serves no metrics: the JMX exporter's jar is not among the libs (%s)", b.ID, c.Libs())
		}
		ins = append(ins, pipebench.Instance{Name: "kafka-" + strconv.Itoa(int(b.ID)), MetricsURL: b.MetricsURL()})
	}
	o, err := promobs.New(promobs.Config{Preset: "kafka", Metrics: extra, Timeout: pipebench.Duration(5 * time.Second)}, ins)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	pts, err := o.Observe(context.Background(), time.Now())
	if err != nil {
		t.Fatalf("scrape the brokers: %v", err)
	}
	sums := map[string]float64{}
	for _, p := range pts {
		sums[p.Name] += p.Value
	}
	return sums
}

// The brokers' own counts, read from their JMX exporters, agree with what
// the test produced and with the log-end offsets the admin API gives: the
// records appended to a topic, its bytes, the produce requests and their
// time.
func TestBrokerMetricsCountWhatWasProduced(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "jmx", 3, 3, nil)
	in := promobs.Mapping{KPI: "topic_in", Metric: "kafka_server_topic_messages_in_total", Labels: map[string]string{"topic": topic}, Kind: "counter"}
	bytesIn := promobs.Mapping{KPI: "topic_bytes_in", Metric: "kafka_server_topic_bytes_in_total", Labels: map[string]string{"topic": topic}, Kind: "counter"}
	before := brokerMetrics(t, b.Cluster, 0)
	// Uncompressed, so that the bytes the broker counts are the values
	// and their framing.
	cl := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	const n, size = 1000, 100
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: make([]byte, size)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := b.EndOffsets(t, topic)
	// The exporter reads the MBeans at each scrape: the counts are
	// current once the produce is acknowledged.
	var got map[string]float64
	testutil.Eventually(t, 30*time.Second, func() bool {
		got = brokerMetrics(t, b.Cluster, 0, in, bytesIn)
		return got["topic_in"] >= n
	}, "the brokers count the %d records appended to %s", n, topic)
	t.Logf("topic %s: %v records and %v bytes in by the brokers' counts, end offsets %d; all topics: %v records in, %v produce requests, produce p99 %v ms",
		topic, got["topic_in"], got["topic_bytes_in"], offsets, got["broker_messages_in"]-before["broker_messages_in"],
		got["broker_produce_requests"]-before["broker_produce_requests"], got["broker_produce_time_ms_p99"])
	if got["topic_in"] != n || offsets != n {
		t.Errorf("the brokers counted %v records in, the log-end offsets sum to %d, %d were produced", got["topic_in"], offsets, n)
	}
	// Record values plus each batch's framing: more than the values,
	// well under twice them.
	if v := got["topic_bytes_in"]; v < n*size || v > 2*n*size {
		t.Errorf("bytes in %v for %d records of %d bytes", v, n, size)
	}
	if d := got["broker_messages_in"] - before["broker_messages_in"]; d < n {
		t.Errorf("all topics' messages in grew by %v, want at least the %d produced", d, n)
	}
	if d := got["broker_produce_requests"] - before["broker_produce_requests"]; d < 1 || d > n {
		t.Errorf("produce requests grew by %v for %d records", d, n)
	}
	if _, ok := got["broker_produce_time_ms_p99"]; !ok {
		t.Errorf("no produce time percentile among %v", got)
	}
	if got["broker_under_replicated_partitions"] != 0 {
		t.Errorf("%v partitions under-replicated with every broker up", got["broker_under_replicated_partitions"])
	}
}
