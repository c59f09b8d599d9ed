package otlpgen

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The metrics and logs encoders write export requests directly, in the
// order pdata marshals them: pdata writes each message from its last byte
// back, so its fields come out from the highest number down and repeated
// fields in order; a message field that pdata always writes (a scope, a
// resource, a log record's body and ids) is written even when empty. Each
// item is encoded into a scratch buffer first (its length prefixes it),
// the items into the pooled body buffer after room for the envelopes' tags
// and lengths, which are written right-aligned before them once the items'
// total length is known.

// headRoom is room for four envelope tags and lengths and a Sum's
// header, in front of the items.
const headRoom = 4*(1+binary.MaxVarintLen64) + 4

// prepend writes head right-aligned before b[at:] and returns where it
// starts.
func prepend(b []byte, at int, head []byte) int {
	return at - copy(b[at-len(head):at], head)
}

// appendLen appends field num as a LEN field holding b.
func appendLen(dst []byte, num protowire.Number, b []byte) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}

// appendLenHead appends the tag of field num, length-delimited, and the
// length n of its value, which the caller appends (or prepends) apart:
// the headers of nested messages whose bodies are built first.
func appendLenHead(dst []byte, num protowire.Number, n int) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendVarint(dst, uint64(n))
}

// appendFixed64 appends field num as a fixed 64-bit value.
func appendFixed64(dst []byte, num protowire.Number, v uint64) []byte {
	dst = protowire.AppendTag(dst, num, protowire.Fixed64Type)
	return binary.LittleEndian.AppendUint64(dst, v)
}

// metricsConst is what every batch of a Metrics generator shares.
type metricsConst struct {
	attrs  []byte // attr.j = value-j, each as a data point's attribute field
	prefix []byte // the Metric's data header (Sum's is_monotonic and temporality)
	name   []byte // the Metric's name field
	scope  []byte // ScopeMetrics field 1: the scope named pipebench
	res    []byte // ResourceMetrics field 1: service.name = pipebench
	bounds []byte // a histogram point's explicit_bounds and bucket_counts
}

// attrField is the attribute field of the generator's data points.
func (m *Metrics) attrField() protowire.Number {
	if m.cfg.Type == "histogram" {
		return 9
	}
	return 7
}

func (m *Metrics) init() {
	c := &m.enc
	for j := 0; j < m.cfg.Attributes; j++ {
		c.attrs = appendStrKV(c.attrs, m.attrField(), "attr."+strconv.Itoa(j), "value-"+strconv.Itoa(j))
	}
	switch m.cfg.Type {
	case "sum":
		c.prefix = append(c.prefix, 0x18, 1, 0x10, 2) // is_monotonic, cumulative
	case "histogram":
		c.prefix = append(c.prefix, 0x10, 2) // cumulative
		var bounds, counts []byte
		for _, f := range []float64{1, 5, 10} {
			bounds = binary.LittleEndian.AppendUint64(bounds, math.Float64bits(f))
		}
		for _, n := range []uint64{1, 4, 5, 0} {
			counts = binary.LittleEndian.AppendUint64(counts, n)
		}
		c.bounds = appendLen(c.bounds, 7, bounds)
		c.bounds = appendLen(c.bounds, 6, counts)
		c.bounds = appendFixed64(c.bounds, 5, math.Float64bits(55))
		c.bounds = appendFixed64(c.bounds, 4, 10)
	}
	c.name = appendLen(nil, 1, []byte("pipebench.load."+m.cfg.Type))
	c.scope = appendLen(nil, 1, appendLen(nil, 1, []byte("pipebench")))
	c.res = appendLen(nil, 1, appendStrKV(nil, 1, "service.name", "pipebench"))
}

// dataField is the Metric's field of the generator's type.
func (m *Metrics) dataField() protowire.Number {
	switch m.cfg.Type {
	case "sum":
		return 7
	case "histogram":
		return 9
	}
	return 5
}

// encode builds the ExportMetricsServiceRequest of Build, byte for byte.
func (m *Metrics) encode(seq uint64, count int, at time.Time) *Encoded {
	m.once.Do(m.init)
	c := &m.enc
	ts := uint64(at.UnixNano())
	sent := at.UnixNano()
	attr := m.attrField()
	// Each point: its fields, highest number first, then its attributes.
	per := 64 + len(c.attrs) + len(c.bounds)
	e := getEncoded(SignalMetrics, headRoom+count*per+len(c.name)+len(c.scope)+len(c.res))
	pts := e.buf[:headRoom]
	var pt, producer []byte
	for i := 0; i < count; i++ {
		q := seq + uint64(i)
		pt = pt[:0]
		switch m.cfg.Type {
		case "sum":
			pt = appendFixed64(pt, 6, uint64(int64(seq)+int64(i)))
		case "histogram":
			pt = append(pt, c.bounds...)
		default:
			pt = appendFixed64(pt, 4, math.Float64bits(float64(i)))
		}
		if ts != 0 {
			pt = appendFixed64(pt, 3, ts)
		}
		pt = appendIntKV(pt, attr, AttrSeq, int64(q))
		pt = appendIntKV(pt, attr, AttrSent, sent)
		gen := uint64(0)
		if m.cfg.Churn > 0 {
			gen = uint64(float64(q) * m.cfg.Churn / float64(m.cfg.Producers))
		}
		producer = append(producer[:0], "producer-"...)
		producer = strconv.AppendUint(producer, q%uint64(m.cfg.Producers), 10)
		producer = append(producer, '-')
		producer = strconv.AppendUint(producer, gen, 10)
		pt = appendStrKV(pt, attr, "producer", string(producer))
		pt = append(pt, c.attrs...)
		pts = appendLen(pts, 1, pt)
	}
	dataLen := len(c.prefix) + len(pts) - headRoom
	metricLen := 1 + protowire.SizeBytes(dataLen) + len(c.name)
	smLen := 1 + protowire.SizeBytes(metricLen) + len(c.scope)
	rmLen := 1 + protowire.SizeBytes(smLen) + len(c.res)
	var head [headRoom]byte
	h := head[:0]
	h = appendLenHead(h, 1, rmLen)
	h = appendLenHead(h, 2, smLen)
	h = appendLenHead(h, 2, metricLen)
	h = appendLenHead(h, m.dataField(), dataLen)
	h = append(h, c.prefix...)
	b := append(pts, c.name...)
	b = append(b, c.scope...)
	b = append(b, c.res...)
	start := prepend(b, headRoom, h)
	e.buf, e.Body = b, b[start:]
	return e
}

// logsConst is what every batch of a Logs generator shares.
type logsConst struct {
	attrs []byte // attr.j = value-j, each as a log record's field 6
}

func (l *Logs) init() {
	for j := 0; j < l.cfg.Attributes; j++ {
		l.enc.attrs = appendStrKV(l.enc.attrs, 6, "attr."+strconv.Itoa(j), "value-"+strconv.Itoa(j))
	}
}

// encode builds the ExportLogsServiceRequest of Build, byte for byte.
func (l *Logs) encode(seq uint64, count int, at time.Time) *Encoded {
	l.once.Do(l.init)
	ts := uint64(at.UnixNano())
	sent := at.UnixNano()
	e := getEncoded(SignalLogs, headRoom+count*(200+len(l.enc.attrs))+64)
	recs := e.buf[:headRoom]
	var rec, body, line []byte
	date := l.appendDate(nil, at)
	for i := 0; i < count; i++ {
		q := seq + uint64(i)
		rec = append(rec[:0], 0x52, 0, 0x4a, 0) // span and trace ids, empty
		rec = appendIntKV(rec, 6, AttrSeq, int64(q))
		rec = appendIntKV(rec, 6, AttrSent, sent)
		rec = append(rec, l.enc.attrs...)
		line = l.appendLine(line[:0], q, date)
		body = appendLen(body[:0], 1, line)
		rec = appendLen(rec, 5, body)
		rec = append(rec, 0x10, 9) // severity INFO
		if ts != 0 {
			rec = appendFixed64(rec, 1, ts)
		}
		recs = appendLen(recs, 2, rec)
	}
	const scope = 2 // field 1, empty
	slLen := len(recs) - headRoom + scope
	rlLen := 1 + protowire.SizeBytes(slLen) + len(logsResource)
	var head [headRoom]byte
	h := head[:0]
	h = appendLenHead(h, 1, rlLen)
	h = appendLenHead(h, 2, slLen)
	b := append(recs, 0x0a, 0)
	b = append(b, logsResource...)
	start := prepend(b, headRoom, h)
	e.buf, e.Body = b, b[start:]
	return e
}

// logsResource is ResourceLogs field 1: service.name = pipebench.
var logsResource = appendLen(nil, 1, appendStrKV(nil, 1, "service.name", "pipebench"))
