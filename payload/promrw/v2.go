package promrw

// Remote write 2.0: the io.prometheus.write.v2.Request message, encoded
// and decoded by hand as 1.0 is. The fields used:
//
//	Request    { repeated string symbols = 4; repeated TimeSeries timeseries = 5; }
//	TimeSeries { repeated uint32 labels_refs = 1 [packed]; repeated Sample samples = 2;
//	             repeated Histogram histograms = 3; ... }
//	Sample     { double value = 1; int64 timestamp = 2; }
//
// A series' labels are pairs of references into symbols (name, value,
// name, value, ...); symbols[0] is the empty string.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Protocol headers of remote write 2.0.
const (
	ContentTypeV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	VersionV2     = "2.0.0"
	// The receiver's answer says what it wrote; a 2.0 sender reads them.
	SamplesWrittenHeader    = "X-Prometheus-Remote-Write-Samples-Written"
	HistogramsWrittenHeader = "X-Prometheus-Remote-Write-Histograms-Written"
	ExemplarsWrittenHeader  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// MessageOf returns the protobuf message a Content-Type header names: 1
// for prometheus.WriteRequest (also a bare application/x-protobuf), 2 for
// io.prometheus.write.v2.Request, 0 for anything else.
func MessageOf(contentType string) int {
	parts := strings.Split(contentType, ";")
	if strings.TrimSpace(parts[0]) != "application/x-protobuf" {
		return 0
	}
	proto := ""
	for _, p := range parts[1:] {
		if k, v, _ := strings.Cut(strings.TrimSpace(p), "="); k == "proto" {
			proto = v
		}
	}
	switch proto {
	case "", "prometheus.WriteRequest":
		return 1
	case "io.prometheus.write.v2.Request":
		return 2
	}
	return 0
}

// V2Decoder decodes 2.0 requests; it keeps the symbol table between
// calls to spare allocations. Not safe for concurrent use.
type V2Decoder struct {
	syms [][]byte
	refs []uint32
}

// Decode reads an uncompressed io.prometheus.write.v2.Request as Decode
// reads a 1.0 one: series and samples counted by kind, seq called for
// every sample of a series labelled pipebench="seq". Native histograms
// (field 3) are counted, not matched. Label references outside the
// symbol table make the request malformed.
func (d *V2Decoder) Decode(b []byte, seq func(seq uint64, sentMillis int64)) (Counts, error) {
	var c Counts
	d.syms = d.syms[:0]
	// Pass 1: the symbols, wherever they are in the message.
	if err := eachBytes(b, 4, "symbol", func(s []byte) error { d.syms = append(d.syms, s); return nil }); err != nil {
		return c, err
	}
	// Pass 2: the series.
	err := eachBytes(b, 5, "timeseries", func(ts []byte) error { return d.series(ts, &c, seq) })
	return c, err
}

// series reads one v2 TimeSeries.
func (d *V2Decoder) series(b []byte, c *Counts, seq func(uint64, int64)) error {
	c.Series++
	d.refs = d.refs[:0]
	carrier, report := false, false
	from := -1
	for rest := b; len(rest) > 0; {
		num, typ, n := tag(rest)
		if n < 0 {
			return fmt.Errorf("%w: timeseries field: %v", ErrMalformed, protowire.ParseError(n))
		}
		if from < 0 && num != 1 {
			from = len(b) - len(rest)
		}
		rest = rest[n:]
		if num == 1 && typ == protowire.BytesType { // packed labels_refs
			p, n := bytesField(rest)
			if n < 0 {
				return fmt.Errorf("%w: labels_refs: %v", ErrMalformed, protowire.ParseError(n))
			}
			rest = rest[n:]
			for len(p) > 0 {
				var err error
				if p, err = d.appendRef(p); err != nil {
					return err
				}
			}
			continue
		}
		if num == 1 && typ == protowire.VarintType { // unpacked, also legal
			var err error
			if rest, err = d.appendRef(rest); err != nil {
				return err
			}
			continue
		}
		var err error
		if rest, err = skipField(rest, num, typ, "timeseries field"); err != nil {
			return err
		}
	}
	if len(d.refs)%2 != 0 {
		return fmt.Errorf("%w: labels_refs holds %d references, not name/value pairs", ErrMalformed, len(d.refs))
	}
	for i := 0; i < len(d.refs); i += 2 {
		ni, vi := d.refs[i], d.refs[i+1]
		if int(ni) >= len(d.syms) || int(vi) >= len(d.syms) {
			return fmt.Errorf("%w: label reference %d or %d outside the %d symbols", ErrMalformed, ni, vi, len(d.syms))
		}
		markSeries(d.syms[ni], d.syms[vi], &carrier, &report)
	}
	if from < 0 {
		return nil
	}
	return countSamples(b[from:], 2, 3, carrier, report, c, seq)
}

// appendRef reads one label reference, a varint at the start of b, onto
// d.refs and returns what follows it; packed and unpacked labels_refs
// hold the same varints.
func (d *V2Decoder) appendRef(b []byte) ([]byte, error) {
	v, n := protowire.ConsumeVarint(b)
	if n < 0 || v > math.MaxUint32 {
		return nil, fmt.Errorf("%w: labels_refs: bad varint", ErrMalformed)
	}
	d.refs = append(d.refs, uint32(v))
	return b[n:], nil
}

// countSample counts one float sample by kind and reports a matched one.
func countSample(c *Counts, v float64, ts int64, carrier, report bool, seq func(uint64, int64)) {
	c.Samples++
	switch {
	case IsStale(v):
		c.Stale++
	case report:
		c.Report++
	case carrier && v >= 0 && v == math.Trunc(v) && v < 1<<53:
		c.Matched++
		if seq != nil {
			seq(uint64(v), ts)
		}
	default:
		c.Other++
	}
}

// V2Encoder appends an io.prometheus.write.v2.Request one series at a
// time, interning label names and values in its symbol table. The zero
// value is ready; Reset reuses its buffers.
type V2Encoder struct {
	syms    map[string]uint32
	symBuf  []byte // the symbols fields, in reference order
	buf     []byte // the timeseries fields
	series  []byte
	refs    []byte
	out     []byte
	samples int
}

// Reset empties the request, keeping its buffers.
func (e *V2Encoder) Reset() {
	if e.syms == nil {
		e.syms = map[string]uint32{}
	}
	clear(e.syms)
	e.symBuf, e.buf, e.samples = e.symBuf[:0], e.buf[:0], 0
	e.ref(nil) // symbols[0] is ""
}

// ref returns the reference of a symbol, adding it when new.
func (e *V2Encoder) ref(s []byte) uint32 {
	if e.syms == nil {
		e.Reset()
	}
	if r, ok := e.syms[string(s)]; ok {
		return r
	}
	r := uint32(len(e.syms))
	e.syms[string(s)] = r
	e.symBuf = protowire.AppendTag(e.symBuf, 4, protowire.BytesType)
	e.symBuf = protowire.AppendBytes(e.symBuf, s)
	return r
}

// SeriesBytes appends one series with its labels (name, value pairs,
// names sorted, __name__ first) and samples (value, millisecond timestamp
// pairs).
func (e *V2Encoder) SeriesBytes(labels [][2][]byte, values []float64, millis []int64) {
	refs := e.refs[:0]
	for _, l := range labels {
		refs = protowire.AppendVarint(refs, uint64(e.ref(l[0])))
		refs = protowire.AppendVarint(refs, uint64(e.ref(l[1])))
	}
	e.refs = refs
	s := e.series[:0]
	s = protowire.AppendTag(s, 1, protowire.BytesType)
	s = protowire.AppendBytes(s, refs)
	s = appendSamples(s, values, millis)
	e.series = s
	e.buf = protowire.AppendTag(e.buf, 5, protowire.BytesType)
	e.buf = protowire.AppendBytes(e.buf, s)
	e.samples += len(values)
}

// Series is SeriesBytes with string labels.
func (e *V2Encoder) Series(labels []Label, values []float64, millis []int64) {
	ls := make([][2][]byte, len(labels))
	for i, l := range labels {
		ls[i] = [2][]byte{[]byte(l.Name), []byte(l.Value)}
	}
	e.SeriesBytes(ls, values, millis)
}

// appendSamples appends Sample fields (number 2 in both versions).
func appendSamples(s []byte, values []float64, millis []int64) []byte {
	for i, v := range values {
		s = protowire.AppendTag(s, 2, protowire.BytesType)
		s = protowire.AppendVarint(s, uint64(1+8+1+protowire.SizeVarint(uint64(millis[i]))))
		s = protowire.AppendTag(s, 1, protowire.Fixed64Type)
		s = protowire.AppendFixed64(s, math.Float64bits(v))
		s = protowire.AppendTag(s, 2, protowire.VarintType)
		s = protowire.AppendVarint(s, uint64(millis[i]))
	}
	return s
}

// Bytes is the uncompressed request, symbols first; valid until the next
// call.
func (e *V2Encoder) Bytes() []byte {
	if e.syms == nil {
		e.Reset()
	}
	e.out = append(append(e.out[:0], e.symBuf...), e.buf...)
	return e.out
}

// Samples is the number of samples appended since Reset.
func (e *V2Encoder) Samples() int { return e.samples }

// WrittenHeaders returns the 2.0 answer headers' values for c: samples
// (float samples), histograms and exemplars written.
func WrittenHeaders(c Counts) (samples, histograms, exemplars string) {
	return strconv.Itoa(c.Samples - c.Histograms), strconv.Itoa(c.Histograms), "0"
}
