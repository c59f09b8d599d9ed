package compare

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// seedBase is the fixed seed of every bootstrap: the same runs give the
// same interval, so the gate's verdict is reproducible. Each KPI's
// generator is seeded from it and the KPI's own key, so adding a KPI or a
// case never changes another's interval.
const seedBase uint64 = 0x7069706562656e63

// seedFor derives the generator's seed of one comparison key.
func seedFor(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return seedBase ^ h.Sum64()
}

// relChange is (c - b) / |b|: 0 when both are 0, ±Inf when only b is.
func relChange(b, c float64) float64 {
	switch {
	case b == 0 && c == 0:
		return 0
	case b == 0:
		return math.Inf(int(math.Copysign(1, c)))
	}
	return (c - b) / math.Abs(b)
}

// interval is the relative change of the candidate's mean from the
// baseline's, (mean(cand) - mean(base)) / |mean(base)|, and its
// confidence interval at level conf.
//
// The interval is a percentile bootstrap: resamples times, each side's
// runs are drawn again with replacement and the change of the two means
// recomputed; the interval is the middle conf of those changes. A plain
// percentile bootstrap is too narrow with few runs (a resampled mean
// varies (n-1)/n as much as the mean does, and the normal quantile stands
// in for Student's), so the interval is widened about the estimate by
// expansion: the "expanded percentile interval" (Hesterberg, "What
// teachers should know about the bootstrap", 2015) for two samples. It
// keeps the bootstrap's asymmetry and covers at about the nominal level
// from two runs a side (see the coverage test).
func interval(base, cand []float64, conf float64, resamples int, seed uint64) (change, lo, hi float64) {
	change = relChange(mean(base), mean(cand))
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	draws := make([]float64, resamples)
	for i := range draws {
		draws[i] = relChange(resampledMean(rng, base), resampledMean(rng, cand))
	}
	slices.Sort(draws)
	alpha := 1 - conf
	qlo, qhi := quantile(draws, alpha/2), quantile(draws, 1-alpha/2)
	k := expansion(base, cand, conf)
	lo = math.Min(change, change-k*(change-qlo))
	hi = math.Max(change, change+k*(qhi-change))
	if slices.Min(base) >= 0 && slices.Min(cand) >= 0 {
		// A KPI that cannot be negative cannot fall by more than all of
		// it; the widening must not say it could.
		lo = math.Max(lo, -1)
	}
	return change, lo, hi
}

// expansion is the factor that widens a two-sample percentile bootstrap
// interval of a difference of means to the width of Welch's t interval:
// the ratio of the unbiased variance of the difference to the bootstrap's
// (which divides by n, not n-1), times Student's quantile at Welch's
// degrees of freedom over the normal's. 1 when both sides are constant.
func expansion(base, cand []float64, conf float64) float64 {
	nb, nc := float64(len(base)), float64(len(cand))
	if nb < 2 || nc < 2 {
		return 1
	}
	sb, sc := variance(base)/nb, variance(cand)/nc // squared standard errors
	boot := sb*(nb-1)/nb + sc*(nc-1)/nc
	if boot == 0 {
		return 1
	}
	df := (sb + sc) * (sb + sc) / (sb*sb/(nb-1) + sc*sc/(nc-1))
	p := 1 - (1-conf)/2
	return math.Sqrt((sb+sc)/boot) * studentQuantile(p, df) / normalQuantile(p)
}

// resampledMean is the mean of len(v) values drawn from v with
// replacement. Each 64-bit random number gives two indices, by
// multiplying its 32-bit halves by len(v) (Lemire's method without the
// rejection step: the bias, under len(v)/2³², is far below the
// bootstrap's own Monte Carlo error).
func resampledMean(rng *rand.Rand, v []float64) float64 {
	n := uint64(len(v))
	s := 0.0
	i := 0
	for ; i+1 < len(v); i += 2 {
		r := rng.Uint64()
		s += v[(r&0xffffffff)*n>>32] + v[(r>>32)*n>>32]
	}
	if i < len(v) {
		s += v[(rng.Uint64()&0xffffffff)*n>>32]
	}
	return s / float64(len(v))
}
