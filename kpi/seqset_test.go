package kpi

import "testing"

func TestSeqSetAddDupAndCount(t *testing.T) {
	s := NewSeqSet()
	for i := uint64(1); i <= 1000; i++ {
		if s.Add(i) {
			t.Fatalf("seq %d reported duplicate on first add", i)
		}
	}
	if !s.Add(500) {
		t.Fatal("second add of 500 not reported as duplicate")
	}
	if got := s.Len(); got != 1000 {
		t.Fatalf("Len = %d, want 1000", got)
	}
	if got := s.CountRange(1, 1001); got != 1000 {
		t.Fatalf("CountRange(1,1001) = %d, want 1000", got)
	}
	if got := s.CountRange(100, 200); got != 100 {
		t.Fatalf("CountRange(100,200) = %d, want 100", got)
	}
	if got := s.CountRange(995, 5000); got != 6 {
		t.Fatalf("CountRange(995,5000) = %d, want 6", got)
	}
}

func TestSeqSetFullChunksFreeMemory(t *testing.T) {
	s := NewSeqSet()
	// Three whole chunks, one with a hole.
	for i := uint64(0); i < 3*chunkBits; i++ {
		if i == chunkBits+7 {
			continue
		}
		s.Add(i)
	}
	if got := s.Chunks(); got != 1 {
		t.Fatalf("non-full chunks = %d, want 1 (only the one with a hole)", got)
	}
	if !s.Has(chunkBits-1) || s.Has(chunkBits+7) {
		t.Fatal("Has is wrong around the hole")
	}
	if !s.Add(5) {
		t.Fatal("add into a full chunk must be a duplicate")
	}
	if got := s.CountRange(0, 3*chunkBits); got != 3*chunkBits-1 {
		t.Fatalf("CountRange = %d, want %d", got, 3*chunkBits-1)
	}
}

func TestSeqSetMissingFrom(t *testing.T) {
	accepted, arrived := NewSeqSet(), NewSeqSet()
	for i := uint64(1); i <= 200000; i++ {
		accepted.Add(i)
		if i%1000 != 0 { // every 1000th is lost
			arrived.Add(i)
		}
	}
	arrived.Add(300000) // arrived but never accepted: not loss
	if got := arrived.MissingFrom(accepted, 1, 200001); got != 200 {
		t.Fatalf("lost = %d, want 200", got)
	}
	if got := arrived.MissingFrom(accepted, 1, 100001); got != 100 {
		t.Fatalf("lost in first half = %d, want 100", got)
	}
	if got := arrived.MissingFrom(accepted, 1000, 1001); got != 1 {
		t.Fatalf("lost at 1000 = %d, want 1", got)
	}
}

func BenchmarkSeqSetAdd(b *testing.B) {
	s := NewSeqSet()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Add(uint64(i))
	}
	b.ReportMetric(float64(s.Chunks()), "open-chunks")
}
