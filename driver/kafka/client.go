package kafkadriver

import (
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
)

// What each producer's client holds is most of the driver's memory with
// many producers (a franz-go client is about 60 KiB with its connections
// and the topic's metadata). Two of franz-go's defaults each keep their
// own math/rand source per client (about 5 KiB each): the retry backoff
// and the default partitioner's per-topic state. The producers here share
// math/rand/v2's generator instead, with the same behaviour.

// retryBackoff is franz-go's default backoff between retries of a request
// (250 ms doubling per failure up to 5 s, each scaled by a random 0.8-1.2),
// with the process's shared random source.
func retryBackoff(fails int) time.Duration {
	const lo, hi = 250 * time.Millisecond, 5 * time.Second
	if fails <= 0 {
		return lo
	}
	if fails > 10 {
		return hi
	}
	d := time.Duration(float64(lo<<(fails-1)) * (0.8 + 0.4*rand.Float64()))
	return min(d, hi)
}

// uniformBytes is the partitioner of keys none and field: an unkeyed
// record goes to the partition of its predecessors until they add up to
// stickyBytes, then to a new partition chosen with weights inverse to
// each partition's records buffered (Kafka's uniform sticky partitioning,
// KIP-794, and franz-go's default); a keyed record to murmur2 of its key
// modulo the partitions, as the Java client does.
type uniformBytes struct{}

// stickyBytes is how many bytes of records go to one partition before an
// unkeyed record moves to another (franz-go's default).
const stickyBytes = 64 << 10

var (
	_ kgo.Partitioner            = uniformBytes{}
	_ kgo.TopicBackupPartitioner = (*uniformBytesTopic)(nil)
)

// ForTopic implements kgo.Partitioner.
func (uniformBytes) ForTopic(string) kgo.TopicPartitioner { return &uniformBytesTopic{on: -1} }

// uniformBytesTopic is one client's partitioning of one topic (franz-go
// calls it under the client's lock for that topic).
type uniformBytesTopic struct {
	on      int // the partition unkeyed records go to, -1 for none yet
	bytes   int // their bytes so far
	weights []float64
	parts   []int
}

// RequiresConsistency implements kgo.TopicPartitioner: a keyed record
// always goes to its key's partition.
func (*uniformBytesTopic) RequiresConsistency(r *kgo.Record) bool { return r.Key != nil }

// Partition implements kgo.TopicPartitioner; franz-go calls
// PartitionByBackup instead for unkeyed records.
func (p *uniformBytesTopic) Partition(r *kgo.Record, n int) int {
	if r.Key != nil {
		return keyPartition(r.Key, n)
	}
	if p.on < 0 || p.on >= n {
		p.on = rand.IntN(n)
	}
	return p.on
}

// PartitionByBackup implements kgo.TopicBackupPartitioner.
func (p *uniformBytesTopic) PartitionByBackup(r *kgo.Record, n int, backup kgo.TopicBackupIter) int {
	if r.Key != nil {
		return keyPartition(r.Key, n)
	}
	l := recordSize(r)
	p.bytes += l
	if p.bytes >= stickyBytes {
		p.bytes, p.on = l, -1
	}
	if p.on >= 0 && p.on < n {
		return p.on
	}
	p.weights, p.parts = p.weights[:0], p.parts[:0]
	total := 0.0
	for ; n > 0; n-- {
		part, buffered := backup.Next()
		w := 1 / float64(buffered+1)
		p.weights, p.parts = append(p.weights, w), append(p.parts, part)
		total += w
	}
	pick := rand.Float64() * total
	p.on = p.parts[len(p.parts)-1] // what rounding leaves
	for i, w := range p.weights {
		if pick -= w; pick <= 0 {
			p.on = p.parts[i]
			break
		}
	}
	return p.on
}

// recordSize is about the bytes r takes in a record batch.
func recordSize(r *kgo.Record) int {
	l := 3 + kbin.VarintLen(int32(len(r.Key))) + len(r.Key) + kbin.VarintLen(int32(len(r.Value))) + len(r.Value) +
		kbin.VarintLen(int32(len(r.Headers)))
	for _, h := range r.Headers {
		l += kbin.VarintLen(int32(len(h.Key))) + len(h.Key) + kbin.VarintLen(int32(len(h.Value))) + len(h.Value)
	}
	return l
}

// keyPartition is the Java client's partition of a key: the positive part
// of its murmur2 hash modulo the partitions.
func keyPartition(key []byte, n int) int { return int(murmur2(key)&0x7fffffff) % n }

// murmur2 is MurmurHash2 (32-bit) with the seed Kafka's Java client uses.
func murmur2(b []byte) uint32 {
	const m, seed = 0x5bd1e995, 0x9747b28c
	h := uint32(seed) ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> 24
		k *= m
		h = h*m ^ k
		b = b[4:]
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
