package runner

import (
	"math"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// A soak's series stay bounded and age: the recent half at the
// observation interval, older points merged, and what KPIs and detectors
// read survives the merging: a counter's running total at every point, a
// gauge's peak, a rate's integral over time (what it adds up to).
func TestSeriesAge(t *testing.T) {
	s := newSeriesSet()
	t0 := time.Unix(1_700_000_000, 0)
	const n = 3 * 24 * 3600 / 10 // three days at a 10 s interval
	var rateIntegral float64
	for i := 0; i < n; i++ {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		s.add("sent", nil, pipebench.UnitCount, pipebench.KindCounter, at, float64(i*100))
		q := 3.0
		if i == 500 {
			q = 9_999 // one spike, early on
		}
		s.add("exporter_queue_size", nil, pipebench.UnitCount, pipebench.KindGauge, at, q)
		r := 10.0 + float64(i%7) // a rate that moves
		s.add("delivered_rate", nil, pipebench.UnitPerSecond, pipebench.KindGauge, at, r)
		if i > 0 {
			rateIntegral += r * 10
		}
	}
	for _, se := range s.list() {
		if len(se.Points) > maxPoints || len(se.Points) < maxPoints/2 {
			t.Errorf("%s: %d points, want %d..%d", se.Name, len(se.Points), maxPoints/2, maxPoints)
		}
		last := se.Points[len(se.Points)-1]
		if want := t0.Add(time.Duration(n-1) * 10 * time.Second); !last.T.Equal(want) {
			t.Errorf("%s: last point at %v, want %v", se.Name, last.T, want)
		}
		// The most recent quarter of the series is at the interval.
		for i := len(se.Points) - maxPoints/4; i < len(se.Points); i++ {
			if d := se.Points[i].T.Sub(se.Points[i-1].T); d != 10*time.Second {
				t.Fatalf("%s: point %d is %v after the one before, want the 10 s interval", se.Name, i, d)
			}
		}
		first := se.Points[0].T.Sub(t0)
		if first < time.Hour {
			t.Errorf("%s: the oldest point stands for %v only: the old points did not age", se.Name, first)
		}
		switch se.Name {
		case "sent":
			for _, p := range se.Points {
				if want := float64(p.T.Sub(t0)/(10*time.Second)) * 100; p.V != want {
					t.Fatalf("counter at %v: %v, want its running total %v", p.T, p.V, want)
				}
			}
		case "exporter_queue_size":
			peak := 0.0
			for _, p := range se.Points {
				peak = max(peak, p.V)
			}
			if peak != 9_999 {
				t.Errorf("the queue's peak is %v after aging, want 9,999", peak)
			}
		case "delivered_rate":
			got := 0.0
			for i := 1; i < len(se.Points); i++ {
				got += se.Points[i].V * se.Points[i].T.Sub(se.Points[i-1].T).Seconds()
			}
			// The first merged point's own span (before the series) is
			// not counted: allow that much.
			slack := se.Points[0].V * se.Points[0].T.Sub(t0).Seconds()
			if math.Abs(got-rateIntegral) > slack+1e-6*rateIntegral {
				t.Errorf("the rate adds up to %v after aging, %v before (slack %v)", got, rateIntegral, slack)
			}
		}
	}
}
