package kafkadriver

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// murmur2 gives the Java client's hashes (the values of Kafka's own
// UtilsTest.testMurmur2), and the partitioner puts keyed records where
// franz-go's Kafka-compatible key partitioner does.
func TestMurmur2(t *testing.T) {
	for s, want := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, "abc": 479470107,
	} {
		if got := int32(murmur2([]byte(s))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", s, got, want)
		}
	}
	ref := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	ours := uniformBytes{}.ForTopic("t").(*uniformBytesTopic)
	for i := 0; i < 2000; i++ {
		r := &kgo.Record{Key: []byte(strings.Repeat("k", i%7) + strconv.Itoa(i))}
		n := 1 + i%31
		if !ours.RequiresConsistency(r) {
			t.Fatal("a keyed record does not require consistency")
		}
		if got, want := ours.PartitionByBackup(r, n, nil), ref.Partition(r, n); got != want {
			t.Fatalf("key %q over %d partitions: %d, franz-go %d", r.Key, n, got, want)
		}
	}
}

// backups is a TopicBackupIter over fixed buffered counts.
type backups struct {
	left []int64
}

func (b *backups) Next() (int, int64) {
	i := len(b.left) - 1
	n := b.left[i]
	b.left = b.left[:i]
	return i, n
}

func (b *backups) Rem() int { return len(b.left) }

// Unkeyed records stay on one partition for 64 KiB of records, then move to
// another chosen by how few records each holds buffered.
func TestUniformBytes(t *testing.T) {
	p := uniformBytes{}.ForTopic("t").(*uniformBytesTopic)
	r := &kgo.Record{Value: make([]byte, 1000), Headers: []kgo.RecordHeader{{Key: "Pipebench-Seq", Value: []byte("12")}}}
	if p.RequiresConsistency(r) {
		t.Fatal("an unkeyed record requires consistency")
	}
	size := recordSize(r)
	first := p.PartitionByBackup(r, 4, &backups{left: []int64{0, 0, 0, 0}})
	sent := size
	for sent+size < stickyBytes {
		if got := p.PartitionByBackup(r, 4, &backups{left: []int64{0, 0, 0, 0}}); got != first {
			t.Fatalf("after %d bytes the record went to %d, not %d", sent, got, first)
		}
		sent += size
	}
	// The partition with 10^12 records buffered is (almost) never next.
	moved := map[int]int{}
	for i := 0; i < 200; i++ {
		p.bytes = stickyBytes
		moved[p.PartitionByBackup(r, 3, &backups{left: []int64{0, 1e12, 0}})]++
	}
	if moved[1] != 0 || moved[0] == 0 || moved[2] == 0 {
		t.Fatalf("new partitions chosen: %v", moved)
	}
}

// The retry backoff is franz-go's: 250 ms doubling to 5 s, within 20%.
func TestRetryBackoff(t *testing.T) {
	for fails, base := range map[int]time.Duration{0: 250 * time.Millisecond, 1: 250 * time.Millisecond, 3: time.Second, 5: 4 * time.Second, 6: 5 * time.Second, 20: 5 * time.Second} {
		for i := 0; i < 50; i++ {
			d := retryBackoff(fails)
			lo, hi := base*8/10, min(base*12/10, 5*time.Second)
			if fails == 0 || fails > 10 {
				lo, hi = base, base
			}
			if d < lo || d > hi {
				t.Fatalf("backoff after %d failures: %v, want %v..%v", fails, d, lo, hi)
			}
		}
	}
}
