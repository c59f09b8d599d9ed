package promrw

import (
	"errors"
	"math"
	"testing"
)

// Encoded series decode to the same counts; every kind of sample lands in
// its own count, and sequence numbers come back with their timestamps.
func TestRoundTrip(t *testing.T) {
	var e Encoder
	e.Series([]Label{{Name: "__name__", Value: "m"}, {Name: SeqLabel, Value: "seq"}}, []float64{7, 8}, []int64{1000, 2000})
	e.Series([]Label{{Name: "__name__", Value: "up"}}, []float64{1}, []int64{1})
	e.Series([]Label{{Name: "__name__", Value: "m"}}, []float64{3.5, math.Float64frombits(StaleNaN)}, []int64{1, 2})
	e.Series([]Label{{Name: "__name__", Value: "m"}, {Name: SeqLabel, Value: "seq"}}, []float64{-1, 1.5}, []int64{1, 2})
	if e.Samples() != 7 {
		t.Fatalf("encoder counted %d samples", e.Samples())
	}
	got := map[uint64]int64{}
	c, err := Decode(e.Bytes(), func(seq uint64, ms int64) { got[seq] = ms })
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Series: 4, Samples: 7, Stale: 1, Report: 1, Matched: 2, Other: 3}
	if c != want {
		t.Fatalf("counts %+v, want %+v", c, want)
	}
	if len(got) != 2 || got[7] != 1000 || got[8] != 2000 {
		t.Fatalf("sequence numbers %v", got)
	}
	e.Reset()
	if len(e.Bytes()) != 0 || e.Samples() != 0 {
		t.Fatal("Reset left data")
	}
}

// Every truncation of a valid request either decodes or fails with
// ErrMalformed; none panics.
func TestTruncatedNeverPanics(t *testing.T) {
	var e Encoder
	for i := 0; i < 3; i++ {
		e.Series([]Label{{Name: "__name__", Value: "metric"}, {Name: "a", Value: "b"}, {Name: SeqLabel, Value: "seq"}}, []float64{float64(i)}, []int64{int64(i) << 40})
	}
	b := e.Bytes()
	for n := 0; n < len(b); n++ {
		if _, err := Decode(b[:n], nil); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v does not wrap ErrMalformed", n, err)
		}
	}
	if _, err := Decode([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a huge length: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	var e Encoder
	e.Series([]Label{{Name: "__name__", Value: "m"}, {Name: SeqLabel, Value: "seq"}}, []float64{1}, []int64{1})
	f.Add(e.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Decode(b, func(uint64, int64) {})
	})
}

// Decode allocates nothing, however many series a request holds.
func TestDecodeAllocatesNothing(t *testing.T) {
	var e Encoder
	for i := 0; i < 100; i++ {
		e.Series([]Label{{Name: "__name__", Value: "m"}, {Name: SeqLabel, Value: "seq"}}, []float64{float64(i)}, []int64{1})
	}
	b := e.Bytes()
	seq := func(uint64, int64) {}
	if n := testing.AllocsPerRun(100, func() { Decode(b, seq) }); n != 0 {
		t.Errorf("Decode made %v allocations a call", n)
	}
}
