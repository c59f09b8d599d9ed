package promobs

import (
	"math"
	"sort"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pipebench/pipebench"
)

// DefaultQuantiles are reported for a histogram or summary mapping that
// names none.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99}

// quantileName is the suffix of a quantile's KPI: 0.99 -> "p99", 0.999 ->
// "p99.9".
func quantileName(q float64) string {
	return "p" + strconv.FormatFloat(q*100, 'f', -1, 64)
}

// cumulative is a histogram's cumulative bucket counts, by upper bound,
// summed over the series a mapping selects, with their count and sum.
type cumulative struct {
	upper  []float64 // sorted, +Inf last
	counts []float64
	count  float64
	sum    float64
}

// addHistogram adds one series' buckets to c.
func (c *cumulative) addHistogram(h *dto.Histogram) {
	c.count += float64(h.GetSampleCount())
	c.sum += h.GetSampleSum()
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) { // the text format lists +Inf; added once below
			c.add(b.GetUpperBound(), float64(b.GetCumulativeCount()))
		}
	}
	c.add(math.Inf(1), float64(h.GetSampleCount()))
}

func (c *cumulative) add(le, n float64) {
	i := sort.SearchFloat64s(c.upper, le)
	if i < len(c.upper) && c.upper[i] == le {
		c.counts[i] += n
		return
	}
	c.upper = append(c.upper, 0)
	c.counts = append(c.counts, 0)
	copy(c.upper[i+1:], c.upper[i:])
	copy(c.counts[i+1:], c.counts[i:])
	c.upper[i], c.counts[i] = le, n
}

// minus returns the buckets observed since prev (a counter reset, when any
// count went down, gives c itself).
func (c *cumulative) minus(prev *cumulative) *cumulative {
	if prev == nil || prev.count > c.count {
		return c
	}
	d := &cumulative{upper: append([]float64(nil), c.upper...), counts: make([]float64, len(c.counts)), count: c.count - prev.count, sum: c.sum - prev.sum}
	for i, le := range c.upper {
		p := 0.0
		if j := sort.SearchFloat64s(prev.upper, le); j < len(prev.upper) && prev.upper[j] == le {
			p = prev.counts[j]
		}
		if p > c.counts[i] {
			return c
		}
		d.counts[i] = c.counts[i] - p
	}
	return d
}

// quantile estimates the q-quantile the way PromQL's histogram_quantile
// does: linear interpolation inside the bucket holding the rank, the
// lowest bucket starting at 0, and the highest finite bound when the rank
// falls in the +Inf bucket. NaN when there are no observations.
func (c *cumulative) quantile(q float64) float64 {
	n := len(c.counts)
	if n == 0 || c.counts[n-1] == 0 {
		return math.NaN()
	}
	total := c.counts[n-1]
	rank := q * total
	i := sort.Search(n, func(i int) bool { return c.counts[i] >= rank })
	if i >= n-1 && math.IsInf(c.upper[n-1], 1) {
		if n < 2 {
			return math.NaN()
		}
		return c.upper[n-2]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = c.upper[i-1], c.counts[i-1]
	} else if c.upper[0] <= 0 {
		return c.upper[0]
	}
	inBucket := c.counts[i] - below
	if inBucket == 0 {
		return c.upper[i]
	}
	return lower + (c.upper[i]-lower)*(rank-below)/inBucket
}

// distributionPoints gives the points of one histogram or summary mapping
// for one scrape: KPI.count and KPI.sum (counters, so per-phase rates and
// the mean come downstream), and one gauge per quantile, KPI.p50 etc. For
// a histogram the quantiles are of the observations since the previous
// scrape (bucket deltas), and absent when there were none; for a summary
// they are the summary's own (its sliding window), averaged over the
// series selected.
func (o *Observer) distributionPoints(m Mapping, fam *dto.MetricFamily, instance string, at time.Time) []pipebench.Point {
	labels := map[string]string{"instance": instance}
	qs := m.Quantiles
	if len(qs) == 0 {
		qs = DefaultQuantiles
	}
	var pts []pipebench.Point
	switch fam.GetType() {
	case dto.MetricType_HISTOGRAM:
		cur := &cumulative{}
		found := false
		for _, metric := range fam.GetMetric() {
			if h := metric.GetHistogram(); h != nil && matches(metric, m.Labels) {
				cur.addHistogram(h)
				found = true
			}
		}
		if !found {
			return nil
		}
		key := instance + "\x00" + m.KPI
		delta := cur.minus(o.prevHist[key])
		if o.prevHist[key] == nil {
			delta = nil // the first scrape has no interval to measure
		}
		o.prevHist[key] = cur
		pts = append(pts,
			pipebench.Point{Name: m.KPI + ".count", Labels: labels, Kind: pipebench.KindCounter, At: at, Value: cur.count},
			pipebench.Point{Name: m.KPI + ".sum", Labels: labels, Kind: pipebench.KindCounter, At: at, Value: cur.sum})
		if m.Buckets {
			for i, le := range cur.upper {
				bl := map[string]string{"instance": instance, "le": strconv.FormatFloat(le, 'g', -1, 64)}
				pts = append(pts, pipebench.Point{Name: m.KPI + "_bucket", Labels: bl, Kind: pipebench.KindCounter, At: at, Value: cur.counts[i]})
			}
		}
		if delta != nil && delta.count > 0 {
			for _, q := range qs {
				if v := delta.quantile(q); !math.IsNaN(v) {
					pts = append(pts, pipebench.Point{Name: m.KPI + "." + quantileName(q), Labels: labels, Kind: pipebench.KindGauge, At: at, Value: v})
				}
			}
		}
	case dto.MetricType_SUMMARY:
		var count, sum float64
		qsum := map[float64]float64{}
		qn := map[float64]int{}
		found := false
		for _, metric := range fam.GetMetric() {
			s := metric.GetSummary()
			if s == nil || !matches(metric, m.Labels) {
				continue
			}
			found = true
			count += float64(s.GetSampleCount())
			sum += s.GetSampleSum()
			for _, sq := range s.GetQuantile() {
				if v := sq.GetValue(); !math.IsNaN(v) {
					qsum[sq.GetQuantile()] += v
					qn[sq.GetQuantile()]++
				}
			}
		}
		if !found {
			return nil
		}
		pts = append(pts,
			pipebench.Point{Name: m.KPI + ".count", Labels: labels, Kind: pipebench.KindCounter, At: at, Value: count},
			pipebench.Point{Name: m.KPI + ".sum", Labels: labels, Kind: pipebench.KindCounter, At: at, Value: sum})
		for _, q := range qs {
			if n := qn[q]; n > 0 {
				pts = append(pts, pipebench.Point{Name: m.KPI + "." + quantileName(q), Labels: labels, Kind: pipebench.KindGauge, At: at, Value: qsum[q] / float64(n)})
			}
		}
	}
	return pts
}
