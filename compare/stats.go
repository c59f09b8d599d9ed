package compare

import "math"

// The small distribution functions the interval needs, written from their
// textbook definitions: the normal and Student t quantiles and the exact
// one-sided p-value of a complete separation in a rank test.

// normalQuantile returns z with P(Z <= z) = p for a standard normal Z.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// studentQuantile returns t with P(T <= t) = p for Student's t with df
// degrees of freedom (df may be fractional, as Welch's is), for p in
// [0.5, 1). It bisects the distribution function: 200 halvings of
// [0, 1e7] are far below float64 resolution.
func studentQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return normalQuantile(p)
	}
	lo, hi := 0.0, 1e7
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := (lo + hi) / 2
		if studentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// studentCDF is P(T <= t) for t >= 0: 1 - I_x(df/2, 1/2)/2 with
// x = df/(df+t²), I the regularised incomplete beta function.
func studentCDF(t, df float64) float64 {
	x := df / (df + t*t)
	return 1 - 0.5*incBeta(df/2, 0.5, x)
}

// incBeta is the regularised incomplete beta function I_x(a, b), by its
// continued fraction (evaluated with the modified Lentz method), using the
// symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges
// slowly.
func incBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaFraction(b, a, 1-x)/b
	}
	return front * betaFraction(a, b, x) / a
}

// betaFraction evaluates the continued fraction of I_x(a, b).
func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1; m <= 500; m++ {
		fm := float64(m)
		for _, num := range [2]float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			f *= c * d
		}
		if math.Abs(c*d-1) < eps {
			break
		}
	}
	return f
}

// separationP is the exact one-sided p-value of the Mann-Whitney rank test
// when every one of n values lies above (or below) every one of m others:
// one arrangement of the C(n+m, n) equally likely under no change.
func separationP(n, m int) float64 {
	lc, _ := math.Lgamma(float64(n + m + 1))
	ln, _ := math.Lgamma(float64(n + 1))
	lm, _ := math.Lgamma(float64(m + 1))
	return math.Exp(-(lc - ln - lm))
}

// mean is the arithmetic mean of v (0 for no values).
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// variance is the sample variance of v (n-1 in the denominator; 0 for
// fewer than two values).
func variance(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v)-1)
}

// cv is the coefficient of variation: the sample standard deviation over
// the absolute mean; 0 when every value is the same, +Inf when values
// differ around a mean of 0.
func cv(v []float64) float64 {
	sd := math.Sqrt(variance(v))
	switch m := math.Abs(mean(v)); {
	case sd == 0:
		return 0
	case m == 0:
		return math.Inf(1)
	default:
		return sd / m
	}
}

// quantile returns the q-quantile of sorted values, interpolating
// between the two nearest ranks.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	lo, hi := sorted[i], sorted[i+1]
	if lo == hi || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		if pos-float64(i) < 0.5 {
			return lo
		}
		return hi
	}
	return lo + (pos-float64(i))*(hi-lo)
}
