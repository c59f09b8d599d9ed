// Package promrw is the Prometheus remote-write 1.0 wire format, shared by
// the remote-write driver and sink: a snappy-compressed (block format)
// protobuf prometheus.WriteRequest, encoded and decoded by hand with
// protowire, without the Prometheus module.
//
// The WriteRequest fields used:
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; } // milliseconds
//
// Sequence convention: a series with the label SeqLabel="seq" carries, in
// each sample, the item's sequence number as the value and its send time as
// the timestamp (milliseconds, so e2e latency has millisecond resolution).
// Other samples are counted but not matched.
package promrw

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Protocol headers of remote write 1.0.
const (
	ContentType     = "application/x-protobuf"
	ContentEncoding = "snappy"
	VersionHeader   = "X-Prometheus-Remote-Write-Version"
	Version         = "0.1.0"
)

// SeqLabel marks series whose samples carry sequence numbers (value) and
// send times (timestamp); its value is "seq".
const SeqLabel = "pipebench"

// StaleNaN is the bit pattern of Prometheus' staleness marker: a sample
// with this value says the series ended.
const StaleNaN uint64 = 0x7ff0000000000002

// IsStale reports whether v is a staleness marker.
func IsStale(v float64) bool { return math.Float64bits(v) == StaleNaN }

// reportNames are the series Prometheus adds to every scrape of a target
// (its scrape report), not served by the target.
var reportNames = map[string]bool{
	"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true,
	"scrape_samples_post_metric_relabeling": true, "scrape_series_added": true,
	"scrape_timeout_seconds": true, "scrape_sample_limit": true, "scrape_body_size_bytes": true,
}

// IsScrapeReport reports whether a metric name is one of the series a
// Prometheus scraper adds per scrape (up, scrape_duration_seconds, ...).
func IsScrapeReport(name string) bool { return reportNames[name] }

// Label is one name="value" pair.
type Label struct{ Name, Value string }

// Counts is what one decoded request held.
type Counts struct {
	Series  int // time series
	Samples int // samples of every kind (matched, report, stale and others)
	Stale   int // staleness markers among Samples
	Report  int // non-stale samples of scrape-report series among Samples
	Matched int // samples of SeqLabel series reported to the visitor
	Other   int // the remaining samples: served by a target, not matched
	// Histograms counts native histogram samples (field 4), which are
	// counted but not matched.
	Histograms int
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Series += o.Series
	c.Samples += o.Samples
	c.Stale += o.Stale
	c.Report += o.Report
	c.Matched += o.Matched
	c.Other += o.Other
	c.Histograms += o.Histograms
}

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed remote-write request")

// tag reads a field tag, with a fast path for one-byte tags.
func tag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0] < 0x80 && b[0]>>3 != 0 {
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// bytesField reads a length-delimited value, with a fast path for
// lengths under 128.
func bytesField(b []byte) ([]byte, int) {
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) {
		return b[1 : 1+int(b[0])], 1 + int(b[0])
	}
	return protowire.ConsumeBytes(b)
}

// Decode reads an uncompressed WriteRequest, counting series and samples,
// and calls seq for every sample of a SeqLabel="seq" series, with its
// value as the sequence number and its timestamp in milliseconds. It keeps
// no reference to b and allocates nothing per series.
func Decode(b []byte, seq func(seq uint64, sentMillis int64)) (Counts, error) {
	var c Counts
	err := eachBytes(b, 1, "timeseries", func(ts []byte) error { return decodeSeries(ts, &c, seq) })
	return c, err
}

// eachBytes calls fn, in order, with the value of every field of msg
// numbered num and of the bytes wire type, and skips the other fields.
// what names the field in the error of a value cut short; fn's error
// stops the walk and is returned.
func eachBytes(msg []byte, num protowire.Number, what string, fn func([]byte) error) error {
	for len(msg) > 0 {
		fnum, typ, n := tag(msg)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrMalformed, protowire.ParseError(n))
		}
		msg = msg[n:]
		if fnum == num && typ == protowire.BytesType {
			v, n := bytesField(msg)
			if n < 0 {
				return fmt.Errorf("%w: %s: %v", ErrMalformed, what, protowire.ParseError(n))
			}
			msg = msg[n:]
			if err := fn(v); err != nil {
				return err
			}
			continue
		}
		var err error
		if msg, err = skipField(msg, fnum, typ, "field"); err != nil {
			return err
		}
	}
	return nil
}

// skipField passes over the value of field num, of wire type typ, at the
// start of b, and returns what follows it; what names the field in the
// error of a value cut short.
func skipField(b []byte, num protowire.Number, typ protowire.Type, what string) ([]byte, error) {
	n := protowire.ConsumeFieldValue(num, typ, b)
	if n < 0 {
		return nil, fmt.Errorf("%w: %s %d: %v", ErrMalformed, what, num, protowire.ParseError(n))
	}
	return b[n:], nil
}

// decodeSeries reads one TimeSeries: labels first (to know the series'
// kind), then its samples.
func decodeSeries(b []byte, c *Counts, seq func(uint64, int64)) error {
	c.Series++
	carrier, report := false, false
	// Pass 1: labels (to know the series' kind). Pass 2 starts at the
	// first field that is not a label, as Prometheus writes labels first.
	from := -1
	for rest := b; len(rest) > 0; {
		num, typ, n := tag(rest)
		if n < 0 {
			return fmt.Errorf("%w: timeseries field: %v", ErrMalformed, protowire.ParseError(n))
		}
		if from < 0 && (num != 1 || typ != protowire.BytesType) {
			from = len(b) - len(rest)
		}
		rest = rest[n:]
		if num == 1 && typ == protowire.BytesType {
			l, n := bytesField(rest)
			if n < 0 {
				return fmt.Errorf("%w: label: %v", ErrMalformed, protowire.ParseError(n))
			}
			rest = rest[n:]
			name, value, err := decodeLabel(l)
			if err != nil {
				return err
			}
			markSeries(name, value, &carrier, &report)
			continue
		}
		var err error
		if rest, err = skipField(rest, num, typ, "timeseries field"); err != nil {
			return err
		}
	}
	// Pass 2: samples (and native histograms, counted).
	if from < 0 {
		return nil
	}
	return countSamples(b[from:], 2, 4, carrier, report, c, seq)
}

// markSeries sets carrier when the label name=value marks a series that
// carries sequence numbers, and report when it names one of the series a
// scraper adds of its own (up, scrape_*).
func markSeries(name, value []byte, carrier, report *bool) {
	switch {
	case string(name) == SeqLabel && string(value) == "seq":
		*carrier = true
	case string(name) == "__name__" && reportNames[string(value)]:
		*report = true
	}
}

// countSamples counts the samples of one series' fields b: sampleField
// holds float samples, histField native histograms (counted as samples).
// The two protocol versions number them differently.
func countSamples(b []byte, sampleField, histField protowire.Number, carrier, report bool, c *Counts, seq func(uint64, int64)) error {
	for len(b) > 0 {
		num, typ, n := tag(b)
		if n < 0 {
			return fmt.Errorf("%w: timeseries field: %v", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if (num == sampleField || num == histField) && typ == protowire.BytesType {
			s, n := bytesField(b)
			if n < 0 {
				return fmt.Errorf("%w: sample: %v", ErrMalformed, protowire.ParseError(n))
			}
			b = b[n:]
			if num == histField {
				c.Samples++
				c.Histograms++
				continue
			}
			v, ts, err := decodeSample(s)
			if err != nil {
				return err
			}
			countSample(c, v, ts, carrier, report, seq)
			continue
		}
		var err error
		if b, err = skipField(b, num, typ, "timeseries field"); err != nil {
			return err
		}
	}
	return nil
}

func decodeLabel(b []byte) (name, value []byte, err error) {
	// Fast path: name then value, both shorter than 128 bytes.
	if len(b) >= 4 && b[0] == 0x0a && b[1] < 0x80 {
		n := int(b[1])
		if 4+n <= len(b) && b[2+n] == 0x12 && b[3+n] < 0x80 && 4+n+int(b[3+n]) == len(b) {
			return b[2 : 2+n], b[4+n:], nil
		}
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, fmt.Errorf("%w: label field: %v", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, nil, fmt.Errorf("%w: label: %v", ErrMalformed, protowire.ParseError(n))
			}
			b = b[n:]
			if num == 1 {
				name = v
			} else {
				value = v
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, nil, fmt.Errorf("%w: label field %d: %v", ErrMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return name, value, nil
}

func decodeSample(b []byte) (v float64, ts int64, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, fmt.Errorf("%w: sample field: %v", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			x, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return 0, 0, fmt.Errorf("%w: sample value: %v", ErrMalformed, protowire.ParseError(n))
			}
			v, b = math.Float64frombits(x), b[n:]
		case num == 2 && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, 0, fmt.Errorf("%w: sample timestamp: %v", ErrMalformed, protowire.ParseError(n))
			}
			ts, b = int64(x), b[n:]
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return 0, 0, fmt.Errorf("%w: sample field %d: %v", ErrMalformed, num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return v, ts, nil
}

// Encoder appends a WriteRequest one series at a time. The zero value is
// ready; Reset reuses its buffers.
type Encoder struct {
	buf     []byte // the request so far
	series  []byte // the series being built
	samples int
}

// Reset empties the request, keeping its buffers.
func (e *Encoder) Reset() { e.buf, e.samples = e.buf[:0], 0 }

// Series appends one time series with its labels (names must be sorted,
// __name__ first, as Prometheus expects) and samples (value, millisecond
// timestamp pairs).
func (e *Encoder) Series(labels []Label, values []float64, millis []int64) {
	s := e.series[:0]
	for _, l := range labels {
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendVarint(s, uint64(labelSize(l)))
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendString(s, l.Name)
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendString(s, l.Value)
	}
	s = appendSamples(s, values, millis)
	e.series = s
	e.buf = protowire.AppendTag(e.buf, 1, protowire.BytesType)
	e.buf = protowire.AppendBytes(e.buf, s)
	e.samples += len(values)
}

// SeriesBytes is Series with labels as name, value byte slices.
func (e *Encoder) SeriesBytes(labels [][2][]byte, values []float64, millis []int64) {
	s := e.series[:0]
	for _, l := range labels {
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendVarint(s, uint64(1+protowire.SizeBytes(len(l[0]))+1+protowire.SizeBytes(len(l[1]))))
		s = protowire.AppendTag(s, 1, protowire.BytesType)
		s = protowire.AppendBytes(s, l[0])
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendBytes(s, l[1])
	}
	s = appendSamples(s, values, millis)
	e.series = s
	e.buf = protowire.AppendTag(e.buf, 1, protowire.BytesType)
	e.buf = protowire.AppendBytes(e.buf, s)
	e.samples += len(values)
}

func labelSize(l Label) int {
	return 1 + protowire.SizeBytes(len(l.Name)) + 1 + protowire.SizeBytes(len(l.Value))
}

// Bytes is the uncompressed request; valid until the next call.
func (e *Encoder) Bytes() []byte { return e.buf }

// Samples is the number of samples appended since Reset.
func (e *Encoder) Samples() int { return e.samples }
