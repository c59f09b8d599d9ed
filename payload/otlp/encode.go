package otlpgen

import (
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pipebench/pipebench"
)

// ContentType is the media type of an encoded OTLP export request.
const ContentType = "application/x-protobuf"

// Signal says which OTLP export request an Encoded body holds.
type Signal uint8

// The signals.
const (
	SignalTraces  Signal = iota + 1 // ExportTraceServiceRequest
	SignalMetrics                   // ExportMetricsServiceRequest
	SignalLogs                      // ExportLogsServiceRequest
)

// Encoded is the Data of a batch whose Body is an encoded OTLP export
// request (protobuf, the bytes the collector's pdata would marshal). Drivers
// send Body as it is; callers that want pdata call Traces, Metrics or Logs,
// which decode it.
type Encoded struct {
	Signal Signal
	// Body is the encoded request, the same bytes as Batch.Body.
	Body []byte

	buf       []byte
	abandoned atomic.Bool
}

// Traces decodes Body into pdata.
func (e *Encoded) Traces() (ptrace.Traces, error) {
	return decodeAs(e, SignalTraces, "traces", ptraceotlp.NewExportRequest(), ptraceotlp.ExportRequest.Traces)
}

// Metrics decodes Body into pdata.
func (e *Encoded) Metrics() (pmetric.Metrics, error) {
	return decodeAs(e, SignalMetrics, "metrics", pmetricotlp.NewExportRequest(), pmetricotlp.ExportRequest.Metrics)
}

// Logs decodes Body into pdata.
func (e *Encoded) Logs() (plog.Logs, error) {
	return decodeAs(e, SignalLogs, "logs", plogotlp.NewExportRequest(), plogotlp.ExportRequest.Logs)
}

// decodeAs unmarshals e's Body into req, an empty export request of the
// signal want (what names it in the error of a batch of another), and
// returns data's view of it. On an error the data is the zero value.
func decodeAs[R interface{ UnmarshalProto([]byte) error }, T any](e *Encoded, want Signal, what string, req R, data func(R) T) (T, error) {
	var zero T
	if e.Signal != want {
		return zero, errors.New("otlp: the batch is not " + what)
	}
	if err := req.UnmarshalProto(e.Body); err != nil {
		return zero, err
	}
	return data(req), nil
}

// Abandon tells the generator not to reuse Body after Release: a driver
// calls it when its transport may still read the bytes after Send returned
// (a timed-out or failed request).
func (e *Encoded) Abandon() { e.abandoned.Store(true) }

var encodedPool sync.Pool

func getEncoded(sig Signal, size int) *Encoded {
	e, _ := encodedPool.Get().(*Encoded)
	if e == nil || cap(e.buf) < size {
		e = &Encoded{buf: make([]byte, 0, size+size/8)}
	}
	e.Signal = sig
	e.Body = nil
	return e
}

// releaseEncoded implements Releaser for every generator of this package.
func releaseEncoded(b *pipebench.Batch) {
	e, ok := b.Data.(*Encoded)
	if !ok {
		return
	}
	b.Body, b.Data = nil, nil
	if e.abandoned.Load() || cap(e.buf) > 64<<20 {
		return
	}
	e.Body = nil
	encodedPool.Put(e)
}

// traceEncoder writes ExportTraceServiceRequest bytes directly, field by
// field in the order pdata marshals them (pdata writes every message's
// fields from the highest number down), so the output is byte for byte
// what ptraceotlp.ExportRequest.MarshalProto gives for Traces.Build. The
// constant parts (the span's 40 attributes, its name, the scope) are
// encoded once; per span only the ids, timestamps and pb.seq are written.
type traceEncoder struct {
	attrs []byte // the constant attributes, each as span field 9
	head  []byte // kind and name: fields 6 and 5
	scope []byte // ScopeSpans field 1 with its length
}

const spanName = "pipebench-span"

func newTraceEncoder(keys, values []string) traceEncoder {
	var e traceEncoder
	for i, k := range keys {
		e.attrs = appendStrKV(e.attrs, 9, k, values[i])
	}
	e.head = protowire.AppendTag(e.head, 6, protowire.VarintType)
	e.head = protowire.AppendVarint(e.head, uint64(ptrace.SpanKindServer))
	e.head = protowire.AppendTag(e.head, 5, protowire.BytesType)
	e.head = protowire.AppendString(e.head, spanName)
	var scope []byte
	scope = protowire.AppendTag(scope, 1, protowire.BytesType)
	scope = protowire.AppendString(scope, "pipebench")
	e.scope = protowire.AppendTag(e.scope, 1, protowire.BytesType)
	e.scope = protowire.AppendBytes(e.scope, scope)
	return e
}

// appendStrKV appends a KeyValue with a string value as field num.
func appendStrKV(b []byte, num protowire.Number, key, val string) []byte {
	anyLen := 1 + protowire.SizeBytes(len(val))
	kvLen := 1 + protowire.SizeBytes(anyLen) + 1 + protowire.SizeBytes(len(key))
	b = appendLenHead(b, num, kvLen)
	b = appendLenHead(b, 2, anyLen)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, val)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendString(b, key)
}

// intKVSize is the size of an int KeyValue as a field of tag size 1.
func intKVSize(key string, v int64) int {
	anyLen := 1 + protowire.SizeVarint(uint64(v))
	kvLen := 1 + protowire.SizeBytes(anyLen) + 1 + protowire.SizeBytes(len(key))
	return 1 + protowire.SizeBytes(kvLen)
}

// appendIntKV appends a KeyValue with an int value as field num.
func appendIntKV(b []byte, num protowire.Number, key string, v int64) []byte {
	anyLen := 1 + protowire.SizeVarint(uint64(v))
	kvLen := 1 + protowire.SizeBytes(anyLen) + 1 + protowire.SizeBytes(len(key))
	b = appendLenHead(b, num, kvLen)
	b = appendLenHead(b, 2, anyLen)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(v))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendString(b, key)
}

// resource appends the Resource message (no tag) of service s.
func (t *Traces) resource(b []byte, s int) []byte {
	b = appendStrKV(b, 1, "service.name", "pipebench-"+strconv.Itoa(s))
	for _, kv := range t.resAttrs {
		b = appendStrKV(b, 1, kv[0], kv[1])
	}
	return b
}

// spanLayout is what varies between the spans of a batch.
type spanLayout struct {
	fixed int    // bytes every span has, pb.seq and the parent aside
	sent  []byte // the pb.sent attribute
	ts    uint64 // start time; end is ts+1000
}

func (t *Traces) layout(at time.Time) spanLayout {
	sent := at.UnixNano()
	l := spanLayout{ts: uint64(sent)}
	l.sent = appendIntKV(make([]byte, 0, 32), 9, AttrSent, sent)
	l.fixed = 2 + len(l.sent) + len(t.enc.attrs) + len(t.enc.head) + 10 + 18
	if l.ts+1000 != 0 {
		l.fixed += 9
	}
	if l.ts != 0 {
		l.fixed += 9
	}
	return l
}

func (l *spanLayout) size(q uint64, child bool) int {
	n := l.fixed + intKVSize(AttrSeq, int64(q)) + 2
	if child {
		n += 8
	}
	return n
}

// encode builds the ExportTraceServiceRequest of Next. It follows Build
// span for span: same ids, same grouping.
func (t *Traces) encode(seq uint64, count int, at time.Time) *Encoded {
	l := t.layout(at)
	services := min(t.cfg.Services, count)
	perService := (count + services - 1) / services
	per := uint64(t.cfg.SpansPerTrace)
	var scratch [256]byte

	// Sizes first: a span's size depends only on its pb.seq varint and on
	// whether it has a parent.
	spansSize := func(n, k int) int {
		total := 0
		for i := 0; i < k; i++ {
			idx := uint64(n + i)
			sz := l.size(seq+idx, idx%per != 0)
			total += 1 + protowire.SizeBytes(sz)
		}
		return total
	}
	size := 0
	for s, n := 0, 0; s < services && n < count; s++ {
		k := min(perService, count-n)
		ss := spansSize(n, k) + len(t.enc.scope)
		res := len(t.resource(scratch[:0], s))
		rs := 1 + protowire.SizeBytes(ss) + 1 + protowire.SizeBytes(res)
		size += 1 + protowire.SizeBytes(rs)
		n += k
	}

	e := getEncoded(SignalTraces, size)
	b := e.buf[:0]
	sent := uint64(at.UnixNano())
	var traceID [16]byte
	binary.BigEndian.PutUint64(traceID[8:], sent)
	var parent [8]byte
	for s, n := 0, 0; s < services && n < count; s++ {
		k := min(perService, count-n)
		ss := spansSize(n, k) + len(t.enc.scope)
		res := t.resource(scratch[:0], s)
		rs := 1 + protowire.SizeBytes(ss) + 1 + protowire.SizeBytes(len(res))
		b = appendLenHead(b, 1, rs)
		b = appendLenHead(b, 2, ss)
		for i := 0; i < k; i++ {
			idx := uint64(n + i)
			q := seq + idx
			child := idx%per != 0
			if !child {
				binary.BigEndian.PutUint64(traceID[:8], q)
				binary.BigEndian.PutUint64(parent[:], q)
			}
			b = appendLenHead(b, 2, l.size(q, child))
			b = append(b, 0x7a, 0) // status, empty
			b = appendIntKV(b, 9, AttrSeq, int64(q))
			b = append(b, l.sent...)
			b = append(b, t.enc.attrs...)
			if l.ts+1000 != 0 {
				b = append(b, 0x41)
				b = binary.LittleEndian.AppendUint64(b, l.ts+1000)
			}
			if l.ts != 0 {
				b = append(b, 0x39)
				b = binary.LittleEndian.AppendUint64(b, l.ts)
			}
			b = append(b, t.enc.head...)
			if child {
				b = append(b, 0x22, 8)
				b = append(b, parent[:]...)
			} else {
				b = append(b, 0x22, 0)
			}
			b = append(b, 0x12, 8)
			b = binary.BigEndian.AppendUint64(b, q)
			b = append(b, 0x0a, 16)
			b = append(b, traceID[:]...)
		}
		b = append(b, t.enc.scope...)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, res)
		n += k
	}
	e.buf = b
	e.Body = b
	return e
}
