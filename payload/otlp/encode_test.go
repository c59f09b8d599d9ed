package otlpgen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/pipebench/pipebench"
)

// The encoded batch decodes with pdata to exactly the spans asked for:
// every pb.seq once and in order, pb.sent, the ids, the timestamps and the
// 40 attributes.
func TestEncodedTracesDecodeWithPdata(t *testing.T) {
	g := newTraces(TracesConfig{SpansPerTrace: 2, Attributes: 40, AttributeSize: 16, Services: 1, ResourceAttributes: 5})
	at := time.Unix(1_750_000_000, 123_456_789)
	const seq, count = 120, 1000 // pb.seq crosses the one- to two-byte varint boundary at 128
	b := g.Next(seq, count, at)
	if b.ContentType != ContentType || len(b.Body) == 0 {
		t.Fatalf("content type %q, %d bytes", b.ContentType, len(b.Body))
	}
	td, err := b.Data.(*Encoded).Traces()
	if err != nil {
		t.Fatal(err)
	}
	if td.SpanCount() != count {
		t.Fatalf("%d spans, want %d", td.SpanCount(), count)
	}
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	ts := pcommon.NewTimestampFromTime(at)
	for i := 0; i < spans.Len(); i++ {
		sp := spans.At(i)
		q := uint64(seq + i)
		a := sp.Attributes()
		if a.Len() != 42 {
			t.Fatalf("span %d: %d attributes", i, a.Len())
		}
		if v, _ := a.Get(AttrSeq); v.Type() != pcommon.ValueTypeInt || uint64(v.Int()) != q {
			t.Fatalf("span %d: pb.seq %v, want %d", i, v.AsRaw(), q)
		}
		if v, _ := a.Get(AttrSent); v.Type() != pcommon.ValueTypeInt || v.Int() != at.UnixNano() {
			t.Fatalf("span %d: pb.sent %v", i, v.AsRaw())
		}
		if v, _ := a.Get("attr.39"); v.Str() != "value-39-xxxxxxx" {
			t.Fatalf("span %d: attr.39 = %q", i, v.Str())
		}
		root := q - uint64(i%2)
		sid, tid, parent := sp.SpanID(), sp.TraceID(), sp.ParentSpanID()
		if binary.BigEndian.Uint64(sid[:]) != q || binary.BigEndian.Uint64(tid[:8]) != root || binary.BigEndian.Uint64(tid[8:]) != uint64(at.UnixNano()) {
			t.Fatalf("span %d: span id %v trace id %v", i, sid, tid)
		}
		if (i%2 == 0) != parent.IsEmpty() || (i%2 == 1 && binary.BigEndian.Uint64(parent[:]) != root) {
			t.Fatalf("span %d: parent %v", i, parent)
		}
		if sp.StartTimestamp() != ts || sp.EndTimestamp() != ts+1000 || sp.Name() != spanName || sp.Kind() != ptrace.SpanKindServer {
			t.Fatalf("span %d: %v %v %q %v", i, sp.StartTimestamp(), sp.EndTimestamp(), sp.Name(), sp.Kind())
		}
	}
	if v, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("service.name"); v.Str() != "pipebench-0" {
		t.Errorf("service.name %q", v.Str())
	}
	g.Release(&b)
	if b.Body != nil || b.Data != nil {
		t.Error("Release left the body in the batch")
	}
}

// encodeCase is one batch a test of an encoder makes: the generator's
// configuration, the first sequence number, how many items, and when.
type encodeCase[C any] struct {
	cfg   C
	seq   uint64
	count int
	at    time.Time
}

// The direct encoder writes the bytes pdata marshals for the same spans,
// whatever the shape: services splitting traces, varint widths of pb.seq,
// a zero start time.
func TestEncodedTracesAreWhatPdataMarshals(t *testing.T) {
	cases := []encodeCase[TracesConfig]{
		{TracesConfig{SpansPerTrace: 2, Attributes: 40, AttributeSize: 16, Services: 1, ResourceAttributes: 5}, 1, 1000, time.Now()},
		{TracesConfig{SpansPerTrace: 3, Attributes: 3, AttributeSize: 300, Services: 4, ResourceAttributes: 0}, 16380, 10, time.Now()},
		{TracesConfig{SpansPerTrace: 1, Attributes: 0, AttributeSize: 1, Services: 3, ResourceAttributes: 2}, 1<<35 - 2, 9, time.Unix(0, 0)},
		{TracesConfig{SpansPerTrace: 5, Attributes: 1, AttributeSize: 1, Services: 50, ResourceAttributes: 1}, 1, 7, time.Unix(0, -5)},
	}
	for i, c := range cases {
		g := newTraces(c.cfg)
		b := g.Next(c.seq, c.count, c.at)
		want, err := ptraceotlp.NewExportRequestFromTraces(g.Build(c.seq, c.count, c.at)).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Body, want) {
			t.Errorf("case %d: %d bytes differ from pdata's %d", i, len(b.Body), len(want))
		}
		g.Release(&b)
	}
}

// recorded is what ExtractTraces/Metrics/Logs report.
type recorded struct {
	marks            []Mark
	items, unmatched int
}

func collect() (*recorded, func(uint64, time.Time)) {
	r := &recorded{}
	return r, func(seq uint64, sent time.Time) { r.marks = append(r.marks, Mark{seq, sent.UnixNano()}) }
}

func sameScan(t *testing.T, name string, s *Scan, r *recorded) {
	t.Helper()
	if s.Items != r.items || s.Unmatched != r.unmatched || fmt.Sprint(s.Marks) != fmt.Sprint(r.marks) {
		t.Errorf("%s: scan %d items %d unmatched %d marks, extract %d/%d/%d", name, s.Items, s.Unmatched, len(s.Marks), r.items, r.unmatched, len(r.marks))
	}
}

// The wire scanners give the sink exactly what pdata plus Extract* give,
// also for items without, or with odd, pb.seq and pb.sent.
func TestScanMatchesExtract(t *testing.T) {
	at := time.Now()
	var s Scan

	g := newTraces(TracesConfig{SpansPerTrace: 2, Attributes: 4, AttributeSize: 8, Services: 2, ResourceAttributes: 1})
	td := g.Build(100, 20, at)
	spans := td.ResourceSpans().At(1).ScopeSpans().At(0).Spans()
	spans.At(0).Attributes().Remove(AttrSeq)
	spans.At(1).Attributes().PutStr(AttrSent, "not an int")
	spans.At(2).Attributes().PutDouble(AttrSeq, 3)
	m := spans.At(3).Attributes()
	m.Clear()
	m.PutStr("a", "b")
	m.PutInt(AttrSent, 7)
	m.PutInt(AttrSeq, 9)
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	body, _ := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err := ScanTraces(body, &s); err != nil {
		t.Fatal(err)
	}
	r, fn := collect()
	r.items, r.unmatched = ExtractTraces(td, fn)
	sameScan(t, "traces", &s, r)
	if r.unmatched != 4 || len(r.marks) != 17 {
		t.Errorf("traces: the case lost its point: %d unmatched, %d marks", r.unmatched, len(r.marks))
	}
	if err := ScanTraces(body[:len(body)-3], &s); err == nil {
		t.Error("a truncated request scanned without error")
	}

	for _, typ := range []string{"gauge", "sum", "histogram"} {
		mg := &Metrics{cfg: MetricsConfig{Producers: 3, Attributes: 2, Type: typ}}
		md := mg.Build(1, 10, at)
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		ms.AppendEmpty().SetEmptySummary().DataPoints().AppendEmpty()
		ms.AppendEmpty().SetEmptyExponentialHistogram().DataPoints().AppendEmpty()
		body, _ := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
		if err := ScanMetrics(body, &s); err != nil {
			t.Fatal(err)
		}
		r, fn := collect()
		r.items, r.unmatched = ExtractMetrics(md, fn)
		sameScan(t, typ, &s, r)
		if s.Items != md.DataPointCount() || r.unmatched != 2 {
			t.Errorf("%s: %d items, %d points, %d unmatched", typ, s.Items, md.DataPointCount(), r.unmatched)
		}
	}

	lg := &Logs{cfg: LogsConfig{Format: "json", Attributes: 3}}
	ld := lg.Build(5, 30, at)
	lbody, _ := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err := ScanLogs(lbody, &s); err != nil {
		t.Fatal(err)
	}
	r, fn = collect()
	r.items, r.unmatched = ExtractLogs(ld, fn)
	sameScan(t, "logs", &s, r)
	if s.Items != 30 || len(s.Marks) != 30 || s.Marks[29].Seq != 34 {
		t.Errorf("logs: %d items, %d marks", s.Items, len(s.Marks))
	}
}

func BenchmarkTracesNext(b *testing.B) {
	gen, _ := TracesFactory().New(nil, pipebench.Env{})
	g := gen.(*Traces)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		bt := g.Next(uint64(i*1000+1), 1000, time.Now())
		b.SetBytes(int64(len(bt.Body)))
		g.Release(&bt)
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "spans/s")
}

func BenchmarkScanTraces(b *testing.B) {
	gen, _ := TracesFactory().New(nil, pipebench.Env{})
	bt := gen.Next(1, 1000, time.Now())
	var s Scan
	b.SetBytes(int64(len(bt.Body)))
	for b.Loop() {
		if err := ScanTraces(bt.Body, &s); err != nil || len(s.Marks) != 1000 {
			b.Fatal(err, len(s.Marks))
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "spans/s")
}
