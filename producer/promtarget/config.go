package promtarget

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// Metric types a target can serve.
const (
	TypeGauge     = "gauge"
	TypeCounter   = "counter"
	TypeHistogram = "histogram"
	TypeMixed     = "mixed" // metric m is gauge, counter, histogram for m%3 = 0, 1, 2
)

// Encoders.
const (
	EncoderFast   = "fast"   // pre-rendered templates, values appended per scrape
	EncoderExpfmt = "expfmt" // dto.MetricFamily through prometheus/common/expfmt on every scrape
)

// Config configures a set of scrape targets.
type Config struct {
	// Listen is the host:port of the shared server (port 0 picks one). It
	// serves /producer/N/metrics for every producer, the index at / and
	// /targets (Prometheus HTTP service discovery JSON), and the target's
	// own counters at /metrics.
	Listen string `yaml:"listen" json:"listen"`
	// SeparatePorts gives every producer its own listener on Listen's host
	// (an ephemeral port each) serving /metrics, so a scraper sees
	// Producers distinct targets with the default metrics path.
	SeparatePorts bool `yaml:"separate_ports" json:"separate_ports"`
	// Producers is the number of targets.
	Producers int `yaml:"producers" json:"producers"`
	// Metrics is the number of metric families per producer.
	Metrics int `yaml:"metrics" json:"metrics"`
	// Series is the number of series per metric family.
	Series int `yaml:"series" json:"series"`
	// Type is gauge, counter, histogram or mixed.
	Type string `yaml:"type" json:"type"`
	// Buckets are the histogram upper bounds (+Inf is implied).
	Buckets []float64 `yaml:"buckets" json:"buckets,omitempty"`
	// Prefix of the metric names: Prefix_0000 .. Prefix_NNNN.
	Prefix string `yaml:"prefix" json:"prefix"`
	// ChurnFraction of the series (0..1) get a new identity every
	// ChurnEvery scrapes of their producer.
	ChurnFraction float64 `yaml:"churn_fraction" json:"churn_fraction"`
	// ChurnEvery is how many scrapes of a producer pass between renames
	// of the ChurnFraction of its series.
	ChurnEvery int `yaml:"churn_every" json:"churn_every"`
	// OpenMetrics lets scrapers negotiate the OpenMetrics text format.
	OpenMetrics bool `yaml:"openmetrics" json:"openmetrics"`
	// Gzip compresses responses for scrapers that accept it. It costs CPU
	// in the pipebench process; off by default.
	Gzip bool `yaml:"gzip" json:"gzip"`
	// Encoder is fast (default) or expfmt (the reference, much slower).
	Encoder string `yaml:"encoder" json:"encoder"`
}

// DefaultBuckets are the histogram bounds used when Buckets is empty.
var DefaultBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// DefaultConfig returns the reference load: 20 producers x 1,000 metrics x
// 10 series of gauges.
func DefaultConfig() *Config {
	return &Config{
		Listen:      "127.0.0.1:0",
		Producers:   20,
		Metrics:     1000,
		Series:      10,
		Type:        TypeGauge,
		Prefix:      "pb_load_metric",
		OpenMetrics: true,
		Encoder:     EncoderFast,
	}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
	}
	if c.Producers < 1 || c.Producers > 10000 {
		errs = append(errs, fmt.Errorf("producers: %d is outside 1..10000", c.Producers))
	}
	if c.Metrics < 1 || c.Metrics > 1000000 {
		errs = append(errs, fmt.Errorf("metrics: %d is outside 1..1000000", c.Metrics))
	}
	if c.Series < 1 || c.Series > 1000000 {
		errs = append(errs, fmt.Errorf("series: %d is outside 1..1000000", c.Series))
	}
	if c.Metrics > 0 && c.Series > 0 && int64(c.Metrics)*int64(c.Series) > 10000000 {
		errs = append(errs, fmt.Errorf("metrics x series: %d series per producer is more than 10000000", int64(c.Metrics)*int64(c.Series)))
	}
	switch c.Type {
	case TypeGauge, TypeCounter, TypeHistogram, TypeMixed:
	default:
		errs = append(errs, fmt.Errorf("type: %q is not gauge, counter, histogram or mixed", c.Type))
	}
	for i, b := range c.Buckets {
		if b != b || (i > 0 && b <= c.Buckets[i-1]) {
			errs = append(errs, fmt.Errorf("buckets: must be increasing numbers"))
			break
		}
	}
	if !validName(c.Prefix) {
		errs = append(errs, fmt.Errorf("prefix: %q is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", c.Prefix))
	}
	if c.ChurnFraction < 0 || c.ChurnFraction > 1 || c.ChurnFraction != c.ChurnFraction {
		errs = append(errs, fmt.Errorf("churn_fraction: %v is outside 0..1", c.ChurnFraction))
	}
	if c.ChurnEvery < 0 {
		errs = append(errs, fmt.Errorf("churn_every: must be 0 (no churn) or more"))
	}
	if c.ChurnFraction > 0 && c.ChurnEvery == 0 {
		errs = append(errs, fmt.Errorf("churn_every: set it (in scrapes) when churn_fraction is more than 0"))
	}
	switch c.Encoder {
	case EncoderFast, EncoderExpfmt:
	default:
		errs = append(errs, fmt.Errorf("encoder: %q is not fast or expfmt", c.Encoder))
	}
	return errors.Join(errs...)
}

func validName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

func (c *Config) buckets() []float64 {
	if len(c.Buckets) > 0 {
		return c.Buckets
	}
	return DefaultBuckets
}
