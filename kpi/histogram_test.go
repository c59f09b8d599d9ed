package kpi

import (
	"math"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Quantiles of a window come from the buckets' growth over it, with
// buckets left out below the lowest reported counting 0 and above the
// highest counting all.
func TestHistogramKPIsWindow(t *testing.T) {
	bucket := func(le string, pts ...pipebench.TimeValue) pipebench.Series {
		return pipebench.Series{Name: "lat_ms_bucket", Labels: map[string]string{"le": le}, Kind: pipebench.KindCounter, Points: pts}
	}
	series := []pipebench.Series{
		// t=0: nothing. t=1: 10 observations in (0,10]; t=2: 10 more in
		// (10,20]; t=3: 10 in (20,40]. Until t=3 the 40 bucket is left
		// out, above the highest listed: it counts all.
		bucket("10", reading(1, 10), reading(2, 10), reading(3, 10)),
		bucket("20", reading(1, 10), reading(2, 20), reading(3, 20)),
		bucket("40", reading(3, 30)),
		bucket("+Inf", reading(0, 0), reading(1, 10), reading(2, 20), reading(3, 30)),
	}
	get := func(ks []pipebench.KPI, name string) float64 {
		for _, k := range ks {
			if k.Name == name {
				return k.Value
			}
		}
		return math.NaN()
	}
	// Window (1, 2]: the 10 observations in (10, 20].
	w := HistogramKPIs(series, at(1), at(2))
	if v := get(w, "lat_ms.p50"); math.Abs(v-15) > 1e-9 {
		t.Errorf("p50 over (1,2] = %v, want 15: %+v", v, w)
	}
	if w[0].Unit != pipebench.UnitMillis {
		t.Errorf("unit %q", w[0].Unit)
	}
	// Window (0, 3]: all 30, one third in each bucket.
	w = HistogramKPIs(series, at(0), at(3))
	if v := get(w, "lat_ms.p50"); math.Abs(v-15) > 1e-9 {
		t.Errorf("p50 over all = %v, want 15", v)
	}
	if v := get(w, "lat_ms.p99"); math.Abs(v-39.4) > 1e-9 {
		t.Errorf("p99 over all = %v, want 39.4", v)
	}
	// Window (2, 3]: the 10 in (20, 40], though the 40 bucket was not
	// listed at 2.
	w = HistogramKPIs(series, at(2), at(3))
	if v := get(w, "lat_ms.p50"); math.Abs(v-30) > 1e-9 {
		t.Errorf("p50 over (2,3] = %v, want 30", v)
	}
	// A window with no growth gives nothing.
	if w := HistogramKPIs(series, at(3), at(4)); len(w) != 0 {
		t.Errorf("an empty window gave %+v", w)
	}
}

// A quantile whose rank falls beyond the last finite bucket is that
// bound, flagged with .ge: the API server's P99 "≥ 60 s".
func TestHistogramQuantileInTheLastBucketIsFlagged(t *testing.T) {
	t0 := time.Unix(1000, 0)
	bucket := func(le string, a, b float64) pipebench.Series {
		return pipebench.Series{Name: "lat_seconds_bucket", Labels: map[string]string{"le": le},
			Points: []pipebench.TimeValue{{T: t0, V: a}, {T: t0.Add(10 * time.Second), V: b}}}
	}
	// 100 observations: 90 under 5 ms, 5 under 60 s, 5 above it.
	series := []pipebench.Series{bucket("0.005", 0, 90), bucket("60", 0, 95), bucket("+Inf", 0, 100)}
	got := map[string]float64{}
	for _, k := range HistogramKPIs(series, t0, t0.Add(10*time.Second)) {
		got[k.Name] = k.Value
	}
	if _, ok := got["lat_seconds.p50"+CappedSuffix]; ok {
		t.Errorf("p50 flagged: %v", got)
	}
	if got["lat_seconds.p90"] > 0.005 {
		t.Errorf("p90 %v", got["lat_seconds.p90"])
	}
	if got["lat_seconds.p99"] != 60 || got["lat_seconds.p99"+CappedSuffix] != 60 {
		t.Errorf("p99 %v, flag %v: want 60 and flagged", got["lat_seconds.p99"], got["lat_seconds.p99"+CappedSuffix])
	}
	if _, ok := got["lat_seconds.p95"+CappedSuffix]; ok {
		t.Errorf("p95 is at the 60 s bound's count exactly, not beyond it: %v", got)
	}
}
