package kpi

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// HistogramQuantiles are the quantiles HistogramKPIs reports for every
// histogram, with their KPI suffixes (the reference reports' P50, P75, P90,
// P95, P99).
var HistogramQuantiles = []struct {
	Suffix string
	Q      float64
}{{"p50", 0.5}, {"p75", 0.75}, {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99}}

// HistogramKPIs computes, for every histogram an observer reported as
// cumulative bucket counters (series NAME_bucket with an "le" label, one
// value per bucket at each observation, a "+Inf" bucket among them), the
// quantiles of the observations made within the window [from, to]:
// NAME.p50, NAME.p75, NAME.p90, NAME.p95, NAME.p99, from each bucket's
// growth between the last observation at or before from (the first one in
// the window when there is none) and the last one in the window,
// interpolated inside a bucket as PromQL's histogram_quantile does. These
// are quantiles of every observation in the window, not of one interval's.
//
// An observer may leave out buckets at an observation: a bucket missing
// below the lowest one reported counts 0, one missing above the highest
// finite one reported counts what "+Inf" counts. A counter that went down
// (a restart) measures from 0. The unit follows the name: _ms gives
// milliseconds, _seconds seconds. A quantile in the "+Inf" bucket is the
// highest finite bound, as histogram_quantile gives, and comes with
// NAME.pNN.ge (CappedSuffix) saying it is only a lower bound.
func HistogramKPIs(series []pipebench.Series, from, to time.Time) []pipebench.KPI {
	type hist struct {
		name    string
		labels  map[string]string
		buckets map[float64][]pipebench.TimeValue
	}
	groups := map[string]*hist{}
	var keys []string
	for _, s := range series {
		if !strings.HasSuffix(s.Name, "_bucket") {
			continue
		}
		le, err := strconv.ParseFloat(s.Labels["le"], 64)
		if err != nil {
			continue
		}
		rest := map[string]string{}
		for k, v := range s.Labels {
			if k != "le" {
				rest[k] = v
			}
		}
		if len(rest) == 0 {
			rest = nil
		}
		name := strings.TrimSuffix(s.Name, "_bucket")
		key := pipebench.KeyOf(name, rest)
		h := groups[key]
		if h == nil {
			h = &hist{name: name, labels: rest, buckets: map[float64][]pipebench.TimeValue{}}
			groups[key] = h
			keys = append(keys, key)
		}
		h.buckets[le] = append(h.buckets[le], s.Points...)
	}
	sort.Strings(keys)
	var out []pipebench.KPI
	for _, key := range keys {
		h := groups[key]
		inf := h.buckets[math.Inf(1)]
		if len(inf) == 0 {
			continue
		}
		sort.Slice(inf, func(i, j int) bool { return inf[i].T.Before(inf[j].T) })
		base, end := -1, -1
		for i, p := range inf {
			if !p.T.After(from) {
				base = i
			}
			if !p.T.Before(from) && !p.T.After(to) {
				end = i
			}
		}
		if end < 0 {
			continue
		}
		if base < 0 {
			// No observation before the window: it measures from its
			// first one.
			for i, p := range inf {
				if !p.T.Before(from) {
					base = i
					break
				}
			}
		}
		if base >= end {
			continue
		}
		les := make([]float64, 0, len(h.buckets))
		for le := range h.buckets {
			les = append(les, le)
		}
		sort.Float64s(les)
		b := snapshot(h.buckets, les, inf[base])
		e := snapshot(h.buckets, les, inf[end])
		counts := make([]float64, len(les))
		reset := false
		for i := range les {
			counts[i] = e[i] - b[i]
			reset = reset || counts[i] < 0
		}
		if reset {
			copy(counts, e)
		}
		for i := 1; i < len(counts); i++ { // cumulative, whatever rounding did
			counts[i] = math.Max(counts[i], counts[i-1])
		}
		if counts[len(counts)-1] <= 0 {
			continue
		}
		unit := pipebench.Unit("")
		switch {
		case strings.HasSuffix(h.name, "_ms"):
			unit = pipebench.UnitMillis
		case strings.HasSuffix(h.name, "_seconds"):
			unit = pipebench.UnitSeconds
		}
		for _, q := range HistogramQuantiles {
			if v := bucketQuantile(les, counts, q.Q); !math.IsNaN(v) {
				out = append(out, pipebench.KPI{Name: h.name + "." + q.Suffix, Labels: h.labels, Value: v, Unit: unit})
				if inLastBucket(les, counts, q.Q) {
					out = append(out, pipebench.KPI{Name: h.name + "." + q.Suffix + CappedSuffix, Labels: h.labels, Value: v, Unit: unit})
				}
			}
		}
	}
	return out
}

// snapshot returns each bucket's cumulative count at the observation of
// the "+Inf" point at: a bucket not reported then counts 0 below the lowest
// reported bucket and the "+Inf" count above the highest.
func snapshot(buckets map[float64][]pipebench.TimeValue, les []float64, at pipebench.TimeValue) []float64 {
	v := make([]float64, len(les))
	have := make([]bool, len(les))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, le := range les {
		pts := buckets[le]
		j := sort.Search(len(pts), func(j int) bool { return !pts[j].T.Before(at.T) })
		if j < len(pts) && pts[j].T.Equal(at.T) {
			v[i], have[i] = pts[j].V, true
			if !math.IsInf(le, 1) {
				lo, hi = math.Min(lo, le), math.Max(hi, le)
			}
		}
	}
	for i, le := range les {
		switch {
		case have[i]:
		case le < lo:
			v[i] = 0
		default:
			v[i] = at.V
		}
	}
	return v
}

// CappedSuffix marks a histogram quantile that fell in the "+Inf" bucket:
// NAME.p99.ge holds the highest finite bound, and the quantile is at least
// that, not that (reports print "≥ 60 s").
const CappedSuffix = ".ge"

// inLastBucket reports whether the q-quantile's rank falls in the "+Inf"
// bucket, beyond every finite bound.
func inLastBucket(les, counts []float64, q float64) bool {
	n := len(counts)
	if n < 2 || !math.IsInf(les[n-1], 1) || counts[n-1] <= 0 {
		return false
	}
	return q*counts[n-1] > counts[n-2]
}

// bucketQuantile estimates the q-quantile from cumulative counts by upper
// bound (sorted, +Inf last) as PromQL's histogram_quantile does: linear
// inside the bucket holding the rank, the lowest bucket starting at 0, the
// highest finite bound when the rank falls in +Inf.
func bucketQuantile(les, counts []float64, q float64) float64 {
	n := len(counts)
	if n == 0 || counts[n-1] <= 0 {
		return math.NaN()
	}
	rank := q * counts[n-1]
	i := sort.Search(n, func(i int) bool { return counts[i] >= rank })
	if i >= n-1 && math.IsInf(les[n-1], 1) {
		if n < 2 {
			return math.NaN()
		}
		return les[n-2]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = les[i-1], counts[i-1]
	} else if les[0] <= 0 {
		return les[0]
	}
	in := counts[i] - below
	if in <= 0 {
		return les[i]
	}
	return lower + (les[i]-lower)*(rank-below)/in
}

// setHistograms sets on p the histogram quantiles of the window [from, to]
// (the total row's observations go on through the drain; a blast's until
// it took effect).
func setHistograms(p *pipebench.PhaseResult, series []pipebench.Series, from, to time.Time) {
	for _, k := range HistogramKPIs(series, from, to) {
		p.Set(k)
	}
}
