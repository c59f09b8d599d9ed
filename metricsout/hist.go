package metricsout

import (
	"math"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Buckets are the upper bounds, in seconds, of the classic buckets every
// latency histogram also carries, for servers that do not take native
// histograms (Prometheus before 2.40, or without
// --enable-feature=native-histograms): 1, 2 and 5 times each power of ten
// from 5 µs, so that a loopback system's sub-millisecond latencies fall in
// more than one bucket, to 60 s. A quantile PromQL estimates from them is
// only as good as their width allows (up to 2.5x apart): native histograms
// agree with the table.
var Buckets = []float64{
	0.000005, 0.00001, 0.00002, 0.00005, 0.0001, 0.0002, 0.0005,
	0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5,
	1, 2, 5, 10, 20, 30, 60,
}

// Schema is the resolution of the native (Prometheus) and exponential
// (OTLP: scale) histograms: bucket bounds grow by 2^(2^-Schema), 0.27% at
// 8, the finest Prometheus stores. A quantile PromQL estimates from them
// lies in the same 0.27% bucket as the table's value.
const Schema = 8

// zeroThreshold is the native histograms' zero bucket's width: it holds
// exactly the latencies HdrHistogram recorded as 0 µs.
const zeroThreshold = 2.938735877055719e-39 // 2^-128, Prometheus's default

// bounds are the upper bounds of one power of two's 2^Schema buckets as
// fractions in (0.5, 1]: bounds[j] = 2^((j+1)/2^Schema - 1).
var bounds = func() []float64 {
	n := 1 << Schema
	out := make([]float64, n)
	for j := range out {
		out[j] = math.Exp2(float64(j+1)/float64(n) - 1)
	}
	out[n-1] = 1
	return out
}()

// nativeIndex is the index of the native histogram bucket holding v > 0:
// bucket i holds (2^((i-1)/2^Schema), 2^(i/2^Schema)].
func nativeIndex(v float64) int {
	frac, exp := math.Frexp(v) // v = frac * 2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		// A power of two is the upper bound of the bucket below.
		return (exp - 1) << Schema
	}
	return (exp-1)<<Schema + sort.SearchFloat64s(bounds, frac) + 1
}

// hist is one HdrHistogram of microseconds as both kinds of histograms,
// in seconds. Every observation is placed by the value the KPI table reads
// for it: HdrHistogram's highest value equivalent to it (within its 0.1%).
type hist struct {
	Count    uint64
	Sum      float64
	Min, Max float64
	// Classic holds the observations of each bucket of Buckets alone
	// (not cumulative); the last one, above the largest bound.
	Classic []uint64
	// Zero counts the observations of 0; Native the others by native
	// bucket index, sorted by index.
	Zero   uint64
	Native []nativeBucket
}

type nativeBucket struct {
	Index int
	Count uint64
}

func toHist(h *hdrhistogram.Histogram) hist {
	out := hist{Classic: make([]uint64, len(Buckets)+1)}
	if h == nil {
		return out
	}
	for _, bar := range h.Distribution() {
		if bar.Count <= 0 {
			continue
		}
		n := uint64(bar.Count)
		v := float64(bar.To) / 1e6
		out.Classic[sort.SearchFloat64s(Buckets, v)] += n // the first bound >= v
		out.Count += n
		if v <= 0 {
			out.Zero += n
			continue
		}
		i := nativeIndex(v)
		if k := len(out.Native); k > 0 && out.Native[k-1].Index == i {
			out.Native[k-1].Count += n
		} else {
			out.Native = append(out.Native, nativeBucket{Index: i, Count: n})
		}
	}
	out.Sum = h.Mean() * float64(h.TotalCount()) / 1e6
	if out.Count > 0 {
		out.Min, out.Max = float64(h.Min())/1e6, float64(h.Max())/1e6
	}
	return out
}
