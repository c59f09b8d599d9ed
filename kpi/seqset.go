package kpi

import "math/bits"

const (
	chunkBits  = 1 << 16 // sequence numbers per chunk
	chunkWords = chunkBits / 64
)

// chunk is a bitmap of chunkBits sequence numbers.
type chunk struct {
	words [chunkWords]uint64
	n     int // bits set
}

// fullChunk stands in for every chunk whose bits are all set, so that a
// long run without loss costs no memory per sequence number.
var fullChunk = func() *chunk {
	c := &chunk{n: chunkBits}
	for i := range c.words {
		c.words[i] = ^uint64(0)
	}
	return c
}()

// SeqSet is a set of sequence numbers in bounded memory: a bitmap in chunks of
// 65,536 numbers, where a chunk whose numbers are all present is replaced by
// one shared full chunk. Memory grows with the number of chunks that have
// holes (8 KiB each), not with the number of items.
//
// A SeqSet is not safe for concurrent use; its owner serialises access.
type SeqSet struct {
	chunks map[uint64]*chunk
	count  uint64
}

// NewSeqSet returns an empty set.
func NewSeqSet() *SeqSet { return &SeqSet{chunks: map[uint64]*chunk{}} }

// Add inserts seq and reports whether it was already present.
func (s *SeqSet) Add(seq uint64) (dup bool) {
	ci, bit := seq/chunkBits, seq%chunkBits
	c := s.chunks[ci]
	if c == fullChunk {
		return true
	}
	if c == nil {
		c = &chunk{}
		s.chunks[ci] = c
	}
	w, m := bit/64, uint64(1)<<(bit%64)
	if c.words[w]&m != 0 {
		return true
	}
	c.words[w] |= m
	c.n++
	s.count++
	if c.n == chunkBits {
		s.chunks[ci] = fullChunk
	}
	return false
}

// AddRange inserts seq..seq+n-1 and returns how many were already present.
func (s *SeqSet) AddRange(seq uint64, n int) (dups int) {
	for i := 0; i < n; i++ {
		if s.Add(seq + uint64(i)) {
			dups++
		}
	}
	return dups
}

// Has reports whether seq is in the set.
func (s *SeqSet) Has(seq uint64) bool {
	c := s.chunks[seq/chunkBits]
	if c == nil {
		return false
	}
	bit := seq % chunkBits
	return c.words[bit/64]&(uint64(1)<<(bit%64)) != 0
}

// Len returns the number of sequence numbers in the set.
func (s *SeqSet) Len() uint64 { return s.count }

// Chunks returns the number of chunks held that are not full, a measure of
// the memory the set uses (8 KiB each).
func (s *SeqSet) Chunks() int {
	n := 0
	for _, c := range s.chunks {
		if c != fullChunk {
			n++
		}
	}
	return n
}

// CountRange returns how many numbers in [lo, hi) are in the set.
func (s *SeqSet) CountRange(lo, hi uint64) uint64 {
	return s.countWith(nil, lo, hi)
}

// MissingFrom returns how many numbers in [lo, hi) are in other but not in
// s: with s the arrivals and other the accepted sends, that is the loss.
func (s *SeqSet) MissingFrom(other *SeqSet, lo, hi uint64) uint64 {
	return other.countWith(s, lo, hi)
}

// countWith counts numbers in [lo, hi) present in s and absent from minus
// (minus may be nil).
func (s *SeqSet) countWith(minus *SeqSet, lo, hi uint64) uint64 {
	if hi <= lo {
		return 0
	}
	var total uint64
	for ci, c := range s.chunks {
		base := ci * chunkBits
		if base+chunkBits <= lo || base >= hi {
			continue
		}
		var mc *chunk
		if minus != nil {
			mc = minus.chunks[ci]
			if mc == fullChunk {
				continue
			}
		}
		from, to := uint64(0), uint64(chunkBits)
		if lo > base {
			from = lo - base
		}
		if hi < base+chunkBits {
			to = hi - base
		}
		if from == 0 && to == chunkBits && mc == nil {
			total += uint64(c.n)
			continue
		}
		for w := from / 64; w*64 < to; w++ {
			word := c.words[w]
			if mc != nil {
				word &^= mc.words[w]
			}
			// Mask bits outside [from, to) in the first and last words.
			if w*64 < from {
				word &= ^uint64(0) << (from - w*64)
			}
			if end := (w + 1) * 64; end > to {
				word &= ^uint64(0) >> (end - to)
			}
			total += uint64(bits.OnesCount64(word))
		}
	}
	return total
}
