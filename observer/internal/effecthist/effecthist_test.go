package effecthist

import (
	"testing"
	"time"
)

// The points are cumulative, stop at the first bucket holding every
// latency, and always end with +Inf.
func TestPointsAreCumulative(t *testing.T) {
	at := time.Unix(100, 0)
	if pts := New().Points(at); len(pts) != 1 || pts[0].Labels["le"] != "+Inf" || pts[0].Value != 0 {
		t.Fatalf("empty: %+v", pts)
	}
	b := New()
	for _, d := range []time.Duration{time.Millisecond, time.Millisecond, 50 * time.Millisecond} {
		b.Add(d)
	}
	pts := b.Points(at)
	n := len(pts)
	if n < 3 || pts[0].Labels["le"] != "1" || pts[0].Value != 2 ||
		pts[n-2].Labels["le"] != "50.1187" || pts[n-2].Value != 3 || pts[n-1].Labels["le"] != "+Inf" || pts[n-1].Value != 3 {
		t.Fatalf("want from le=1 (2) up to le=50.1187 (3), then +Inf (3): %+v", pts)
	}
	for i := 1; i < n; i++ {
		if pts[i].Value < pts[i-1].Value {
			t.Errorf("not cumulative at %d: %+v", i, pts)
		}
	}
	if pts[1].Name != Name || !pts[1].At.Equal(at) {
		t.Errorf("point %+v", pts[1])
	}
}

// Each unit is told by the number's size, seconds keep their fraction,
// and 0 or less is no time.
func TestUnixTime(t *testing.T) {
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, f := range []float64{float64(want.UnixNano()), float64(want.UnixMicro()), float64(want.UnixMilli()), float64(want.Unix())} {
		if got, ok := UnixTime(f); !ok || !got.Equal(want) {
			t.Errorf("UnixTime(%g) = %v, %v; want %v", f, got, ok, want)
		}
	}
	if got, ok := UnixTime(1.5); !ok || got.UnixNano() != 1_500_000_000 {
		t.Errorf("1.5 s: %v", got)
	}
	for _, f := range []float64{0, -1} {
		if _, ok := UnixTime(f); ok {
			t.Errorf("UnixTime(%g) is a time", f)
		}
	}
}
