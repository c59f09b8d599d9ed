package kafkaobs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, 1)) }

func observe(t *testing.T, o *Observer) map[string]float64 {
	t.Helper()
	pts, err := o.Observe(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, p := range pts {
		out[key(p)] = p.Value
	}
	return out
}

func key(p pipebench.Point) string {
	var kv []string
	for _, k := range []string{"group", "topic", "partition"} {
		if v, ok := p.Labels[k]; ok {
			kv = append(kv, k+"="+v)
		}
	}
	return p.Name + "{" + strings.Join(kv, ",") + "}"
}

// A group's lag per partition and in total is what Kafka's own
// kafka-consumer-groups --describe prints for it; log-end offsets are
// what was produced; a topic's size is its log files' size on disk.
func TestLagMatchesConsumerGroupsTool(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "lag", 3, 1, nil)
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produced := []int{50, 80, 120}
	for p, n := range produced {
		var rs []*kgo.Record
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("record " + strconv.Itoa(i))})
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The group has consumed 10, 80 and 45 records of the partitions.
	group := "g-" + topic
	offs := kadm.Offsets{}
	for p, at := range []int64{10, 80, 45} {
		offs.AddOffset(topic, int32(p), at, -1)
	}
	adm := b.Admin(t)
	if resp, err := adm.CommitOffsets(context.Background(), group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	o, err := New(*DefaultConfig(), b.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	got := observe(t, o)
	rows := b.DescribeGroup(t, group)
	if len(rows) != 3 {
		t.Fatalf("kafka-consumer-groups printed %d rows: %+v", len(rows), rows)
	}
	var total int64
	for _, r := range rows {
		k := "consumer_lag{group=" + group + ",topic=" + topic + ",partition=" + strconv.Itoa(int(r.Partition)) + "}"
		if got[k] != float64(r.Lag) {
			t.Errorf("%s = %v, kafka-consumer-groups says %d", k, got[k], r.Lag)
		}
		total += r.Lag
	}
	if total != 40+0+75 {
		t.Errorf("the tool's total lag %d, want 115", total)
	}
	if k := "consumer_pending{group=" + group + ",topic=" + topic + "}"; got[k] != float64(total) {
		t.Errorf("%s = %v, kafka-consumer-groups totals %d", k, got[k], total)
	}
	if k := "consumer_committed_offset{group=" + group + ",topic=" + topic + "}"; got[k] != 135 {
		t.Errorf("%s = %v, want 135", k, got[k])
	}
	if k := "log_end_offset{topic=" + topic + "}"; got[k] != 250 {
		t.Errorf("%s = %v, want 250", k, got[k])
	}
	if got["under_replicated_partitions{}"] != 0 || got["offline_partitions{}"] != 0 || got["brokers{}"] != 1 {
		t.Errorf("cluster health: %v", got)
	}
	// The topic's size, against its segment files on the broker's disk.
	var disk int64
	for p := range produced {
		files, _ := filepath.Glob(filepath.Join(b.Cluster.Brokers()[0].Dir, topic+"-"+strconv.Itoa(p), "*.log"))
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			disk += st.Size()
		}
	}
	if k := "stream_bytes{topic=" + topic + "}"; disk == 0 || got[k] != float64(disk) {
		t.Errorf("%s = %v, the segment files hold %d bytes", k, got[k], disk)
	}
}

// Observing groups and topics by name, without per-partition lag.
func TestGroupsAndTopicsFilter(t *testing.T) {
	b := kafkatest.Get(t)
	a, c := b.Topic(t, "fa", 1, 1, nil), b.Topic(t, "fb", 1, 1, nil)
	cfg := *DefaultConfig()
	cfg.Topics, cfg.Partitions = []string{a}, false
	o, err := New(cfg, b.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	got := observe(t, o)
	if _, ok := got["log_end_offset{topic="+a+"}"]; !ok {
		t.Errorf("topic %s not observed: %v", a, got)
	}
	for k := range got {
		if strings.Contains(k, "topic="+c) || strings.HasPrefix(k, "consumer_lag") {
			t.Errorf("%s observed", k)
		}
	}
}

func TestConfig(t *testing.T) {
	if _, err := New(*DefaultConfig(), ""); err == nil || !strings.Contains(err.Error(), "no brokers") {
		t.Errorf("no brokers: %v", err)
	}
	c := DefaultConfig()
	c.Topics, c.Timeout = []string{"a b"}, 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "topics:") || !strings.Contains(err.Error(), "timeout:") {
		t.Errorf("validate: %v", err)
	}
}
