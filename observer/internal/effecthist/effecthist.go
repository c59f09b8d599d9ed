// Package effecthist is the event-to-effect latency histogram that every
// effect observer reports the same way: cumulative buckets as counters
// named effect_latency_ms_bucket{le=...}, from which kpi computes each
// phase's own quantiles (how the buckets grew over the phase), so a
// quantile covers every event of the phase, not one poll.
// Effects is what every effect observer records of the effects it saw:
// their count, times, latencies (those buckets) and summaries.
package effecthist

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/pipebench/pipebench"
)

// Name is the bucket series' name.
const Name = "effect_latency_ms_bucket"

// bounds are the upper bounds in milliseconds: 20 a decade (each 12%
// above the last) from 0.1 ms to about 3 hours.
var bounds = func() []float64 {
	var b []float64
	for k := -20; k <= 140; k++ {
		b = append(b, math.Round(math.Pow(10, float64(k)/20)*1e4)/1e4)
	}
	return b
}()

var boundLabels = func() []string {
	l := make([]string, len(bounds))
	for i, b := range bounds {
		l[i] = strconv.FormatFloat(b, 'g', -1, 64)
	}
	return l
}()

// Buckets counts latencies. The zero value is not ready: use New. Not
// safe for concurrent use: the observer's own lock guards it.
type Buckets struct{ n []int64 }

// New returns empty buckets.
func New() *Buckets { return &Buckets{n: make([]int64, len(bounds)+1)} }

// Add counts one latency.
func (b *Buckets) Add(d time.Duration) {
	b.n[sort.SearchFloat64s(bounds, float64(d.Microseconds())/1000)]++
}

// Points are the cumulative buckets at at, from the lowest holding a
// latency to the first holding them all, and +Inf (always, so a phase
// without effects still has a start).
func (b *Buckets) Points(at time.Time) []pipebench.Point {
	var total int64
	for _, v := range b.n {
		total += v
	}
	pts := make([]pipebench.Point, 0, 8)
	var cum int64
	for i, v := range b.n[:len(bounds)] {
		cum += v
		if cum == 0 {
			continue
		}
		pts = append(pts, pipebench.Point{Name: Name, Labels: map[string]string{"le": boundLabels[i]}, Kind: pipebench.KindCounter, At: at, Value: float64(cum)})
		if cum == total {
			break
		}
	}
	return append(pts, pipebench.Point{Name: Name, Labels: map[string]string{"le": "+Inf"}, Kind: pipebench.KindCounter, At: at, Value: float64(total)})
}

// UnixTime reads a Unix time whose unit is guessed from its size:
// nanoseconds from 1e17, microseconds from 1e14, milliseconds from 1e11,
// else seconds (their fraction kept). A time of 0 or less is no time.
func UnixTime(f float64) (time.Time, bool) {
	switch {
	case f <= 0:
		return time.Time{}, false
	case f >= 1e17:
		return time.Unix(0, int64(f)), true
	case f >= 1e14:
		return time.UnixMicro(int64(f)), true
	case f >= 1e11:
		return time.UnixMilli(int64(f)), true
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}
