package otlpgen

import (
	"errors"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// MetricPoint is one data point of an encoded metrics request, as
// WalkMetricPoints reads it straight from the wire: what a converter to
// another metrics protocol (remote write) needs, without pdata.
type MetricPoint struct {
	// Name is the metric's name.
	Name []byte
	// Histogram is set for a histogram point, whose Value is its count.
	Histogram bool
	// Value is a gauge or sum point's value (an int point's as a float).
	Value float64
	// TimeNanos is the point's time_unix_nano.
	TimeNanos uint64
	// Seq and Sent are pb.seq and pb.sent (unix nanoseconds), when the
	// point has them as int attributes (HasSeq, HasSent).
	Seq             uint64
	Sent            int64
	HasSeq, HasSent bool
	// Attrs are the other attributes, each value as text as
	// pcommon.Value.AsString writes it (strings, ints, doubles, bools).
	Attrs []PointAttr
}

// PointAttr is one attribute of a MetricPoint; both slices are valid only
// during the callback.
type PointAttr struct{ Key, Value []byte }

// ErrComplexValue is returned by WalkMetricPoints for an attribute whose
// value is bytes, an array or a map, which it does not write as text:
// convert such a request through pdata.
var ErrComplexValue = errors.New("otlp: an attribute's value is bytes, an array or a map")

// PointWalk holds WalkMetricPoints' reusable buffers. The zero value is
// ready; not safe for concurrent use.
type PointWalk struct {
	p    MetricPoint
	text []byte // number attributes' text
	offs [][2]int
}

// WalkMetricPoints calls fn with every gauge, sum and histogram data point
// of an ExportMetricsServiceRequest, in order; exponential histogram and
// summary points are skipped. The point and its slices are reused: copy
// what must outlive the call.
func (w *PointWalk) WalkMetricPoints(body []byte, fn func(*MetricPoint) error) error {
	point := func(hist bool) func(name, b []byte) error {
		return func(name, b []byte) error {
			if err := w.point(b, hist); err != nil {
				return err
			}
			w.p.Name = name
			return fn(&w.p)
		}
	}
	return metricWalk{readName: true, number: point(false), histogram: point(true)}.walk(body)
}

// fixed64 reads a fixed 64-bit field's value.
func fixed64(b []byte) (uint64, error) {
	v, n := protowire.ConsumeFixed64(b)
	if n < 0 {
		return 0, errTruncated
	}
	return v, nil
}

// point reads one NumberDataPoint or HistogramDataPoint into w.p.
func (w *PointWalk) point(msg []byte, hist bool) error {
	p := &w.p
	*p = MetricPoint{Histogram: hist, Attrs: p.Attrs[:0]}
	w.text, w.offs = w.text[:0], w.offs[:0]
	attrs := protowire.Number(7)
	if hist {
		attrs = 9
	}
	var seq, sent uint64
	var seqState, sentState int8 // 0: not seen; 1: an int; 2: something else
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return errTruncated
		}
		msg = msg[n:]
		switch {
		case num == attrs && typ == protowire.BytesType:
			kv, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return errTruncated
			}
			msg = msg[n:]
			key, val, vnum, x, err := w.keyValue(kv)
			if err != nil {
				return err
			}
			switch {
			case seqState == 0 && string(key) == AttrSeq:
				seqState, seq = 2, x
				if vnum == 3 {
					seqState = 1
				}
				continue
			case sentState == 0 && string(key) == AttrSent:
				sentState, sent = 2, x
				if vnum == 3 {
					sentState = 1
				}
				continue
			}
			if err := w.attr(key, val, vnum, x); err != nil {
				return err
			}
			continue
		case num == 3 && typ == protowire.Fixed64Type:
			v, err := fixed64(msg)
			if err != nil {
				return err
			}
			p.TimeNanos = v
		case !hist && (num == 4 || num == 6) && typ == protowire.Fixed64Type:
			v, err := fixed64(msg)
			if err != nil {
				return err
			}
			if num == 4 {
				p.Value = math.Float64frombits(v)
			} else {
				p.Value = float64(int64(v))
			}
		case hist && num == 4 && typ == protowire.Fixed64Type:
			v, err := fixed64(msg)
			if err != nil {
				return err
			}
			p.Value = float64(v)
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			return errTruncated
		}
		msg = msg[n:]
	}
	// Number attributes were written into w.text; their slices are made
	// now that it no longer grows.
	for i, o := range w.offs {
		if o[0] >= 0 {
			p.Attrs[i].Value = w.text[o[0]:o[1]]
		}
	}
	if seqState == 1 {
		p.Seq, p.HasSeq = seq, true
	}
	if sentState == 1 {
		p.Sent, p.HasSent = int64(sent), true
	}
	return nil
}

// keyValue reads a KeyValue: its key and its value's oneof field (the
// last one written wins): the field number, a LEN value or a scalar.
func (w *PointWalk) keyValue(kv []byte) (key, val []byte, vnum protowire.Number, x uint64, err error) {
	for b := kv; len(b) > 0; {
		num, typ, v, _, rest, err := next(b)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		b = rest
		switch num {
		case 1:
			if typ != protowire.BytesType {
				return nil, nil, 0, 0, wrongType("Key", typ)
			}
			key = v
		case 2:
			if typ != protowire.BytesType {
				return nil, nil, 0, 0, wrongType("Value", typ)
			}
			for av := v; len(av) > 0; {
				n, t, l := protowire.ConsumeTag(av)
				if l < 0 {
					return nil, nil, 0, 0, errTruncated
				}
				av = av[l:]
				var lv []byte
				var xv uint64
				switch t {
				case protowire.BytesType:
					lv, l = protowire.ConsumeBytes(av)
				case protowire.VarintType:
					xv, l = protowire.ConsumeVarint(av)
				case protowire.Fixed64Type:
					xv, l = protowire.ConsumeFixed64(av)
				default:
					l = protowire.ConsumeFieldValue(n, t, av)
				}
				if l < 0 {
					return nil, nil, 0, 0, errTruncated
				}
				av = av[l:]
				if n < 1 || n > 8 {
					continue
				}
				if t != anyWire[n] {
					return nil, nil, 0, 0, wrongType("Value", t)
				}
				vnum, val, x = n, lv, xv
			}
		}
	}
	return key, val, vnum, x, nil
}

// attr appends one attribute to w.p, its value as text.
func (w *PointWalk) attr(key, val []byte, vnum protowire.Number, x uint64) error {
	p := &w.p
	off := [2]int{-1, -1}
	a := PointAttr{Key: key}
	switch vnum {
	case 0:
		a.Value = nil // an empty value: AsString gives ""
	case 1:
		a.Value = val
	case 2:
		off[0] = len(w.text)
		w.text = strconv.AppendBool(w.text, x != 0)
		off[1] = len(w.text)
	case 3:
		off[0] = len(w.text)
		w.text = strconv.AppendInt(w.text, int64(x), 10)
		off[1] = len(w.text)
	case 4:
		off[0] = len(w.text)
		w.text = appendDouble(w.text, math.Float64frombits(x))
		off[1] = len(w.text)
	default:
		return ErrComplexValue
	}
	p.Attrs = append(p.Attrs, a)
	w.offs = append(w.offs, off)
	return nil
}

// appendDouble writes f as pcommon.Value.AsString does: NaN, Infinity,
// -Infinity, else as ES6 converts a number to a string.
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}
