package otlpgen

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Mark is one item's pb.seq and pb.sent (unix nanoseconds) as read from an
// encoded request.
type Mark struct {
	Seq  uint64
	Sent int64
}

// Scan is what ScanTraces, ScanMetrics and ScanLogs read from an encoded
// export request: the same answer as pdata's UnmarshalProto followed by
// ExtractTraces, ExtractMetrics or ExtractLogs, without building pdata.
// Reuse one Scan to reuse its Marks.
type Scan struct {
	// Marks are the items that carried pb.seq and pb.sent, in order.
	Marks []Mark
	// Items counts every span, data point or log record
	// (Traces.SpanCount, Metrics.DataPointCount, Logs.LogRecordCount).
	Items int
	// Unmatched counts the items without an int pb.seq and pb.sent.
	Unmatched int
}

func (s *Scan) reset() {
	s.Marks = s.Marks[:0]
	s.Items, s.Unmatched = 0, 0
}

// The scanners check the wire format down to the items' attributes, with
// pdata's rules: a malformed tag or length, or a wrong wire type for a field
// they read, is an error; unknown fields are skipped; the deprecated
// instrumentation-library field (1000) is read only when a resource has no
// scope field, as pdata migrates it; when a key repeats, the first wins
// (pcommon.Map.Get); when a oneof repeats, the last wins. Values of other
// attributes, attributes after both keys were found and other nested
// messages are skipped, not decoded.

var errTruncated = errors.New("proto: truncated or malformed field")

func wrongType(what string, t protowire.Type) error {
	return fmt.Errorf("proto: wrong wireType = %d for field %s", t, what)
}

// next reads one field: its number, type, the value of a LEN field, a
// varint, and the rest of msg.
func next(msg []byte) (num protowire.Number, typ protowire.Type, val []byte, v uint64, rest []byte, err error) {
	// The fast path: a one-byte tag of a LEN field shorter than 16 KiB.
	if len(msg) >= 3 && msg[0] < 0x80 && msg[0]&7 == 2 && msg[0] >= 8 {
		n, i := int(msg[1]), 2
		if n >= 0x80 && msg[2] < 0x80 {
			n, i = n&0x7f|int(msg[2])<<7, 3
		}
		if n < 0x80 || i == 3 {
			if n > len(msg)-i {
				return 0, 0, nil, 0, nil, errTruncated
			}
			return protowire.Number(msg[0] >> 3), protowire.BytesType, msg[i : i+n], 0, msg[i+n:], nil
		}
	}
	num, typ, start, end, v, err := field(msg)
	if err != nil {
		return 0, 0, nil, 0, nil, err
	}
	if typ == protowire.BytesType {
		val = msg[start:end]
	}
	return num, typ, val, v, msg[end:], nil
}

// uvarint reads a varint at msg[i:]; n is 0 when it is malformed.
func uvarint(msg []byte, i int) (v uint64, n int) {
	if i < len(msg) && msg[i] < 0x80 {
		return uint64(msg[i]), i + 1
	}
	v, l := protowire.ConsumeVarint(msg[min(i, len(msg)):])
	if l < 0 {
		return 0, 0
	}
	return v, i + l
}

// field reads the field at the start of msg: its number and type, where
// its value starts and ends (for a LEN field, the bytes; for a varint, v).
func field(msg []byte) (num protowire.Number, typ protowire.Type, start, end int, v uint64, err error) {
	tag, i := uvarint(msg, 0)
	if i == 0 {
		return 0, 0, 0, 0, 0, errTruncated
	}
	num, typ = protowire.Number(tag>>3), protowire.Type(tag&7)
	if num < protowire.MinValidNumber || tag>>3 > uint64(protowire.MaxValidNumber) {
		return 0, 0, 0, 0, 0, errTruncated
	}
	switch typ {
	case protowire.BytesType:
		var n uint64
		n, start = uvarint(msg, i)
		if start == 0 || n > uint64(len(msg)-start) {
			return 0, 0, 0, 0, 0, errTruncated
		}
		return num, typ, start, start + int(n), 0, nil
	case protowire.VarintType:
		v, end = uvarint(msg, i)
		if end == 0 {
			return 0, 0, 0, 0, 0, errTruncated
		}
		return num, typ, i, end, v, nil
	case protowire.Fixed64Type:
		end = i + 8
	case protowire.Fixed32Type:
		end = i + 4
	default:
		l := protowire.ConsumeFieldValue(num, typ, msg[i:])
		if l < 0 {
			return 0, 0, 0, 0, 0, protowire.ParseError(l)
		}
		end = i + l
	}
	if end > len(msg) {
		return 0, 0, 0, 0, 0, errTruncated
	}
	return num, typ, i, end, 0, nil
}

// each calls fn with every LEN field num of msg, checking every field.
func each(msg []byte, num protowire.Number, what string, fn func([]byte) error) (found bool, err error) {
	for len(msg) > 0 {
		n, t, val, _, rest, err := next(msg)
		if err != nil {
			return found, err
		}
		msg = rest
		if n != num {
			continue
		}
		if t != protowire.BytesType {
			return found, wrongType(what, t)
		}
		found = true
		if err := fn(val); err != nil {
			return found, err
		}
	}
	return found, nil
}

// scopes calls fn with every scope-level message of a resource-level one:
// field 2, or field 1000 when there is no field 2.
func scopes(res []byte, what string, fn func([]byte) error) error {
	found, err := each(res, 2, what, fn)
	if err != nil || found {
		return err
	}
	_, err = each(res, 1000, "Deprecated"+what, fn)
	return err
}

// ScanTraces reads an ExportTraceServiceRequest.
func ScanTraces(body []byte, s *Scan) error { return scanItems(body, s, "Spans", "Spans", 9) }

// ScanLogs reads an ExportLogsServiceRequest.
func ScanLogs(body []byte, s *Scan) error { return scanItems(body, s, "Logs", "LogRecords", 6) }

// scanItems reads a request of traces or logs, which nest alike: field 1
// of the request holds Resource<signal> messages, their scopes (see
// scopes) Scope<signal> messages, and field 2 of those the items (named
// items in errors), whose attributes are field attrs.
func scanItems(body []byte, s *Scan, signal, items string, attrs protowire.Number) error {
	s.reset()
	item := func(b []byte) error { return s.item(b, attrs) }
	scope := func(b []byte) error { _, err := each(b, 2, items, item); return err }
	resource := func(b []byte) error { return scopes(b, "Scope"+signal, scope) }
	_, err := each(body, 1, "Resource"+signal, resource)
	return err
}

// ScanMetrics reads an ExportMetricsServiceRequest. Exponential histogram
// and summary points count as unmatched, as in ExtractMetrics.
func ScanMetrics(body []byte, s *Scan) error {
	s.reset()
	return metricWalk{
		number:    func(_, b []byte) error { return s.item(b, 7) },
		histogram: func(_, b []byte) error { return s.item(b, 9) },
		other:     func(_, _ []byte) error { s.Items++; s.Unmatched++; return nil },
	}.walk(body)
}

// metricWalk reads an ExportMetricsServiceRequest's data points, each
// handed to the function of its metric's kind with the metric's name (nil
// unless readName). A nil function skips its points.
type metricWalk struct {
	// readName reads each metric's name, and makes a name that is not
	// bytes on the wire an error.
	readName bool
	// number takes gauge and sum points, histogram histogram points,
	// other exponential histogram and summary points.
	number, histogram, other func(name, point []byte) error
}

func (mw metricWalk) walk(body []byte) error {
	var name []byte
	points := func(fn func(name, point []byte) error) func([]byte) error {
		if fn == nil {
			return nil
		}
		return func(b []byte) error { return fn(name, b) }
	}
	number, histogram, other := points(mw.number), points(mw.histogram), points(mw.other)
	metric := func(b []byte) error {
		// The data oneof: the last of gauge, sum, histogram, exponential
		// histogram and summary wins.
		var data []byte
		var kind protowire.Number
		name = nil
		for len(b) > 0 {
			n, t, val, _, rest, err := next(b)
			if err != nil {
				return err
			}
			b = rest
			switch n {
			case 1:
				if !mw.readName {
					continue
				}
				if t != protowire.BytesType {
					return wrongType("Name", t)
				}
				name = val
			case 5, 7, 9, 10, 11:
				if t != protowire.BytesType {
					return wrongType("Data", t)
				}
				data, kind = val, n
			}
		}
		var fn func([]byte) error
		switch kind {
		case 5, 7:
			fn = number
		case 9:
			fn = histogram
		case 10, 11:
			fn = other
		}
		if fn == nil {
			return nil
		}
		_, err := each(data, 1, "DataPoints", fn)
		return err
	}
	scope := func(b []byte) error { _, err := each(b, 2, "Metrics", metric); return err }
	resource := func(b []byte) error { return scopes(b, "ScopeMetrics", scope) }
	_, err := each(body, 1, "ResourceMetrics", resource)
	return err
}

// item reads one span, data point or log record whose attributes are field
// attrs.
func (s *Scan) item(msg []byte, attrs protowire.Number) error {
	s.Items++
	var seq, sent uint64
	var seqState, sentState int8 // 0: not seen; 1: an int; 2: something else
	for len(msg) > 0 {
		num, typ, kv, _, rest, err := next(msg)
		if err != nil {
			return err
		}
		msg = rest
		if num != attrs {
			continue
		}
		if typ != protowire.BytesType {
			return wrongType("Attributes", typ)
		}
		if seqState != 0 && sentState != 0 {
			continue
		}
		key, isInt, v, err := keyValue(kv)
		if err != nil {
			return err
		}
		switch {
		case seqState == 0 && string(key) == AttrSeq:
			seqState, seq = 2, v
			if isInt {
				seqState = 1
			}
		case sentState == 0 && string(key) == AttrSent:
			sentState, sent = 2, v
			if isInt {
				sentState = 1
			}
		}
	}
	if seqState == 1 && sentState == 1 {
		s.Marks = append(s.Marks, Mark{Seq: seq, Sent: int64(sent)})
	} else {
		s.Unmatched++
	}
	return nil
}

// keyValue reads a KeyValue: its key and, when its value is an int, the
// value. The value is read only for the two keys that matter.
func keyValue(kv []byte) (key []byte, isInt bool, v uint64, err error) {
	values := 0
	for b := kv; len(b) > 0; {
		num, typ, val, _, rest, err := next(b)
		if err != nil {
			return nil, false, 0, err
		}
		b = rest
		switch num {
		case 1:
			if typ != protowire.BytesType {
				return nil, false, 0, wrongType("Key", typ)
			}
			key = val
		case 2:
			if typ != protowire.BytesType {
				return nil, false, 0, wrongType("Value", typ)
			}
			values++
		}
	}
	if values == 0 || (string(key) != AttrSeq && string(key) != AttrSent) {
		return key, false, 0, nil
	}
	// A repeated value field merges: the last oneof field wins.
	for b := kv; len(b) > 0; {
		num, _, val, _, rest, _ := next(b)
		b = rest
		if num == 2 {
			if isInt, v, err = anyValue(val, isInt, v); err != nil {
				return nil, false, 0, err
			}
		}
	}
	return key, isInt, v, nil
}

// anyWire is the wire type of each AnyValue oneof field, 1 to 8.
var anyWire = [9]protowire.Type{0, protowire.BytesType, protowire.VarintType, protowire.VarintType,
	protowire.Fixed64Type, protowire.BytesType, protowire.BytesType, protowire.BytesType, protowire.VarintType}

// anyValue reads an AnyValue on top of what was read before (isInt, v).
func anyValue(b []byte, isInt bool, v uint64) (bool, uint64, error) {
	for len(b) > 0 {
		num, typ, _, x, rest, err := next(b)
		if err != nil {
			return false, 0, err
		}
		b = rest
		if num < 1 || num > 8 {
			continue
		}
		if typ != anyWire[num] {
			return false, 0, wrongType("Value", typ)
		}
		isInt, v = num == 3, x
	}
	return isInt, v, nil
}
