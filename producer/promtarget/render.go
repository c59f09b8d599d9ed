package promtarget

import (
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
)

// kind is the type of one metric family.
type kind uint8

const (
	kGauge kind = iota
	kCounter
	kHistogram
)

// layout is what every producer serves, independent of the encoding: the
// families, their series in each churn generation, and the values at each
// scrape. Values are pure functions of (producer, metric, series identity,
// scrape index), so a scrape is reproducible and a test can predict it.
type layout struct {
	metrics, series int
	typ             string
	prefix          string
	bounds          []float64
	boundsText      [][]byte // le label values, text format
	boundsOM        [][]byte // le label values, OpenMetrics
	perScrapeSum    float64  // what one observation round adds to _sum
	churnEvery      uint64
	churnTotal      int // series renamed per churn, per producer
	nameWidth       int
}

func newLayout(c *Config) *layout {
	m := &layout{metrics: c.Metrics, series: c.Series, typ: c.Type, prefix: c.Prefix, bounds: c.buckets()}
	for _, b := range m.bounds {
		m.boundsText = append(m.boundsText, appendFloat(nil, b, false))
		m.boundsOM = append(m.boundsOM, appendFloat(nil, b, true))
		m.perScrapeSum += b
	}
	m.perScrapeSum += 2 * m.bounds[len(m.bounds)-1] // the +Inf observation
	if c.ChurnFraction > 0 && c.ChurnEvery > 0 {
		m.churnEvery = uint64(c.ChurnEvery)
		m.churnTotal = int(math.Round(c.ChurnFraction * float64(c.Metrics*c.Series)))
	}
	m.nameWidth = 4
	for n := c.Metrics - 1; n >= 10000; n /= 10 {
		m.nameWidth++
	}
	return m
}

func (m *layout) kindOf(metric int) kind {
	switch m.typ {
	case TypeCounter:
		return kCounter
	case TypeHistogram:
		return kHistogram
	case TypeMixed:
		return kind(metric % 3)
	}
	return kGauge
}

// samplesPerSeries is how many sample lines one series of kind k has.
func (m *layout) samplesPerSeries(k kind) int {
	if k == kHistogram {
		return len(m.bounds) + 3 // buckets, +Inf, _sum, _count
	}
	return 1
}

// SamplesPerScrape is the number of sample lines in one scrape of one
// producer.
func (m *layout) samplesPerScrape() int {
	n := 0
	for i := 0; i < m.metrics; i++ {
		n += m.series * m.samplesPerSeries(m.kindOf(i))
	}
	return n
}

// gen is the churn generation of scrape k.
func (m *layout) gen(k uint64) uint64 {
	if m.churnEvery == 0 || m.churnTotal == 0 {
		return 0
	}
	return k / m.churnEvery
}

// churned reports whether series j of metric i is one of those renamed at
// every churn: churnTotal of them, spread evenly over all series.
func (m *layout) churned(i, j int) bool {
	if m.churnTotal == 0 {
		return false
	}
	n := uint64(m.metrics * m.series)
	x := uint64(i*m.series + j)
	c := uint64(m.churnTotal)
	return (x+1)*c/n > x*c/n
}

// seriesID returns the identity (the series label's number) and the scrape
// index at which the series was born, for slot j of metric i in generation g.
func (m *layout) seriesID(i, j int, g uint64) (id uint64, birth uint64) {
	if g == 0 || !m.churned(i, j) {
		return uint64(j), 0
	}
	return g*uint64(m.series) + uint64(j), g * m.churnEvery
}

func (m *layout) metricName(i int) string {
	s := strconv.Itoa(i)
	for len(s) < m.nameWidth {
		s = "0" + s
	}
	return m.prefix + "_" + s
}

func seriesLabel(id uint64) string {
	s := strconv.FormatUint(id, 10)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

// seed mixes the identity of a series into a number its values derive from.
func seed(producer, metric int, id uint64) uint64 {
	x := uint64(producer)*0x9E3779B97F4A7C15 ^ uint64(metric)*0xBF58476D1CE4E5B9 ^ id*0x94D049BB133111EB
	x ^= x >> 31
	x *= 0xD6E8FEB86659FD93
	x ^= x >> 32
	return x
}

func gaugeValue(sd, k uint64) uint64 { return (sd + k*(1+sd%13)) % 1000 }
func step(sd uint64) uint64          { return 1 + sd%5 }

// Value kinds of one sample line.
const (
	vGauge   uint8 = iota // float
	vCounter              // float: n*step
	vBucket               // integer in OpenMetrics: n*step*mult
	vSum                  // float: n*step*perScrapeSum
)

// op is one sample line of a template: the static bytes before its value end
// at end.
type op struct {
	end   uint32
	kind  uint8
	mult  uint16
	seed  uint64
	birth uint64
}

// template is one producer's exposition for one churn generation and one
// format, with the values left out.
type template struct {
	static []byte
	ops    []op
	gen    uint64
	om     bool
}

const helpText = " Synthetic load metric served by a pipebench producer.\n"

// build renders the static parts of producer p's exposition in generation g.
func (m *layout) build(p int, g uint64, om bool) *template {
	t := &template{gen: g, om: om}
	nb := len(m.bounds)
	est := 0
	for i := 0; i < m.metrics; i++ {
		est += m.series * m.samplesPerSeries(m.kindOf(i))
	}
	t.ops = make([]op, 0, est)
	b := make([]byte, 0, est*(len(m.prefix)+48))
	prod := strconv.Itoa(p)
	for i := 0; i < m.metrics; i++ {
		k := m.kindOf(i)
		name := m.metricName(i)
		family, sample := name, name
		typ := "gauge"
		switch k {
		case kCounter:
			typ = "counter"
			sample = name + "_total"
			if !om {
				family = sample
			}
		case kHistogram:
			typ = "histogram"
		}
		b = append(b, "# HELP "...)
		b = append(b, family...)
		b = append(b, helpText...)
		b = append(b, "# TYPE "...)
		b = append(b, family...)
		b = append(b, ' ')
		b = append(b, typ...)
		b = append(b, '\n')
		for j := 0; j < m.series; j++ {
			id, birth := m.seriesID(i, j, g)
			sd := seed(p, i, id)
			labels := `{producer="` + prod + `",series="` + seriesLabel(id) + `"`
			emit := func(suffix string, le []byte, kind uint8, mult int) {
				b = append(b, sample...)
				b = append(b, suffix...)
				b = append(b, labels...)
				if le != nil {
					b = append(b, `,le="`...)
					b = append(b, le...)
					b = append(b, '"')
				}
				b = append(b, '}', ' ')
				t.ops = append(t.ops, op{end: uint32(len(b)), kind: kind, mult: uint16(mult), seed: sd, birth: birth})
				b = append(b, '\n')
			}
			switch k {
			case kGauge:
				emit("", nil, vGauge, 0)
			case kCounter:
				emit("", nil, vCounter, 1)
			case kHistogram:
				for bi := 0; bi < nb; bi++ {
					le := m.boundsText[bi]
					if om {
						le = m.boundsOM[bi]
					}
					emit("_bucket", le, vBucket, bi+1)
				}
				emit("_bucket", []byte("+Inf"), vBucket, nb+1)
				emit("_sum", nil, vSum, 0)
				emit("_count", nil, vBucket, nb+1)
			}
		}
	}
	if om {
		b = append(b, "# EOF\n"...)
	}
	t.static = b
	return t
}

// render appends producer's exposition at scrape k to b.
func (t *template) render(b []byte, k uint64, perScrapeSum float64) []byte {
	prev := uint32(0)
	om := t.om
	for i := range t.ops {
		o := &t.ops[i]
		b = append(b, t.static[prev:o.end]...)
		prev = o.end
		n := k + 1 - o.birth
		switch o.kind {
		case vGauge:
			b = appendUintFloat(b, gaugeValue(o.seed, k), om)
		case vCounter:
			b = appendUintFloat(b, n*step(o.seed), om)
		case vBucket:
			v := n * step(o.seed) * uint64(o.mult)
			if om {
				b = strconv.AppendUint(b, v, 10)
			} else {
				b = appendUintFloat(b, v, false)
			}
		case vSum:
			b = appendFloat(b, float64(n*step(o.seed))*perScrapeSum, om)
		}
	}
	return append(b, t.static[prev:]...)
}

// appendUintFloat appends v as expfmt writes the float64 v: digits below a
// million, shortest %g above; OpenMetrics adds ".0" when there is neither a
// dot nor an exponent.
func appendUintFloat(b []byte, v uint64, om bool) []byte {
	if v < 1000000 {
		b = strconv.AppendUint(b, v, 10)
		if om {
			b = append(b, '.', '0')
		}
		return b
	}
	return appendFloat(b, float64(v), om)
}

func appendFloat(b []byte, f float64, om bool) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	if om {
		plain := true
		for _, c := range b[start:] {
			if c == '.' || c == 'e' {
				plain = false
				break
			}
		}
		if plain {
			b = append(b, '.', '0')
		}
	}
	return b
}

// families builds producer p's exposition at scrape k as metric families,
// for the expfmt encoder (and as the reference the templates are tested
// against).
func (m *layout) families(p int, k uint64) []*dto.MetricFamily {
	g := m.gen(k)
	prod := strconv.Itoa(p)
	help := helpText[1 : len(helpText)-1]
	out := make([]*dto.MetricFamily, 0, m.metrics)
	for i := 0; i < m.metrics; i++ {
		kd := m.kindOf(i)
		name := m.metricName(i)
		mf := &dto.MetricFamily{Help: &help, Metric: make([]*dto.Metric, 0, m.series)}
		switch kd {
		case kGauge:
			mf.Type = dto.MetricType_GAUGE.Enum()
		case kCounter:
			mf.Type = dto.MetricType_COUNTER.Enum()
			name += "_total"
		case kHistogram:
			mf.Type = dto.MetricType_HISTOGRAM.Enum()
		}
		mf.Name = &name
		for j := 0; j < m.series; j++ {
			id, birth := m.seriesID(i, j, g)
			sd := seed(p, i, id)
			n := k + 1 - birth
			pn, sn, sl := "producer", "series", seriesLabel(id)
			met := &dto.Metric{Label: []*dto.LabelPair{{Name: &pn, Value: &prod}, {Name: &sn, Value: &sl}}}
			switch kd {
			case kGauge:
				v := float64(gaugeValue(sd, k))
				met.Gauge = &dto.Gauge{Value: &v}
			case kCounter:
				v := float64(n * step(sd))
				met.Counter = &dto.Counter{Value: &v}
			case kHistogram:
				per := n * step(sd)
				cnt := per * uint64(len(m.bounds)+1)
				sum := float64(per) * m.perScrapeSum
				h := &dto.Histogram{SampleCount: &cnt, SampleSum: &sum}
				for bi := range m.bounds {
					c := per * uint64(bi+1)
					ub := m.bounds[bi]
					h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &ub, CumulativeCount: &c})
				}
				met.Histogram = h
			}
			mf.Metric = append(mf.Metric, met)
		}
		out = append(out, mf)
	}
	return out
}
