// Package otlpgen generates OpenTelemetry data: traces of N spans with K
// attributes (encoded straight to OTLP protobuf, the bytes the collector's
// pdata would marshal), metric points from P producers and log records in
// flog-like formats (all encoded straight to OTLP protobuf). Every span, data point
// and log record carries the attributes pb.seq (its sequence number) and
// pb.sent (unix nanoseconds), which the OTLP sink reads back. No I/O.
package otlpgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/pipebench/pipebench"
)

// Attribute keys of the sequence convention.
const (
	AttrSeq  = "pb.seq"
	AttrSent = "pb.sent"
)

// TracesConfig configures the "otlp-traces" generator.
type TracesConfig struct {
	SpansPerTrace      int `yaml:"spans_per_trace" json:"spans_per_trace"`
	Attributes         int `yaml:"attributes" json:"attributes"`
	AttributeSize      int `yaml:"attribute_size" json:"attribute_size"`
	Services           int `yaml:"services" json:"services"`
	ResourceAttributes int `yaml:"resource_attributes" json:"resource_attributes"`
}

// Validate reports every problem, each prefixed with its key.
func (c *TracesConfig) Validate() error {
	var errs []error
	if c.SpansPerTrace < 1 {
		errs = append(errs, fmt.Errorf("spans_per_trace: must be at least 1"))
	}
	if c.Attributes < 0 || c.Attributes > 1000 {
		errs = append(errs, fmt.Errorf("attributes: %d is outside 0..1000", c.Attributes))
	}
	if c.AttributeSize < 1 || c.AttributeSize > 65536 {
		errs = append(errs, fmt.Errorf("attribute_size: %d is outside 1..65536", c.AttributeSize))
	}
	if c.Services < 1 {
		errs = append(errs, fmt.Errorf("services: must be at least 1"))
	}
	if c.ResourceAttributes < 0 || c.ResourceAttributes > 100 {
		errs = append(errs, fmt.Errorf("resource_attributes: %d is outside 0..100", c.ResourceAttributes))
	}
	return errors.Join(errs...)
}

// TracesFactory returns the factory of "otlp-traces": traces of
// spans_per_trace spans (default 2) with attributes per span (default 40),
// the shape of the collector KPI reference tests.
func TracesFactory() pipebench.Factory[pipebench.Generator] {
	def := func() *TracesConfig {
		return &TracesConfig{SpansPerTrace: 2, Attributes: 40, AttributeSize: 16, Services: 1, ResourceAttributes: 5}
	}
	return pipebench.NewFactory("otlp-traces", "OTLP traces: N spans per trace, K attributes per span (protobuf encoded directly, byte for byte as pdata)", def,
		func(c *TracesConfig, _ pipebench.Env) (pipebench.Generator, error) { return newTraces(*c), nil },
	).WithPayloads([]pipebench.Payload{pipebench.PayloadOTLPTraces}, nil)
}

// Traces builds trace batches: Next encodes the export request directly
// (Batch.Body, Batch.Data an *Encoded), Build gives the same spans as
// ptrace.Traces. Safe for concurrent use.
type Traces struct {
	cfg      TracesConfig
	keys     []string
	values   []string
	resAttrs [][2]string
	enc      traceEncoder
}

var (
	_ pipebench.Generator = (*Traces)(nil)
	_ pipebench.Releaser  = (*Traces)(nil)
)

func newTraces(c TracesConfig) *Traces {
	t := &Traces{cfg: c}
	for i := 0; i < c.Attributes; i++ {
		t.keys = append(t.keys, "attr."+strconv.Itoa(i))
		t.values = append(t.values, pad("value-"+strconv.Itoa(i)+"-", c.AttributeSize))
	}
	for i := 0; i < c.ResourceAttributes; i++ {
		t.resAttrs = append(t.resAttrs, [2]string{"resource.attr." + strconv.Itoa(i), "resource-value-" + strconv.Itoa(i)})
	}
	t.enc = newTraceEncoder(t.keys, t.values)
	return t
}

func pad(s string, n int) string {
	if len(s) >= n {
		return s[:n]
	}
	return s + strings.Repeat("x", n-len(s))
}

// ItemName says what one item is.
func (t *Traces) ItemName() string { return "span" }

// Next builds count spans numbered seq.., grouped spans_per_trace to a
// trace, under one resource per service, as an encoded
// ExportTraceServiceRequest: Body holds the protobuf bytes (the very bytes
// pdata would marshal for Build), Data an *Encoded that decodes them on
// demand. Release takes the buffer back.
func (t *Traces) Next(seq uint64, count int, at time.Time) pipebench.Batch {
	e := t.encode(seq, count, at)
	return pipebench.Batch{Seq: seq, Count: count, Scheduled: at, ContentType: ContentType, Body: e.Body, Data: e}
}

// Release implements pipebench.Releaser: the body's buffer is reused.
func (t *Traces) Release(b *pipebench.Batch) { releaseEncoded(b) }

// Build builds the spans of Next as pdata. A trace may span two services'
// resources when a service's share of the batch ends mid-trace.
func (t *Traces) Build(seq uint64, count int, at time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	sent := at.UnixNano()
	ts := pcommon.NewTimestampFromTime(at)
	services := min(t.cfg.Services, count)
	perService := (count + services - 1) / services
	n := 0
	var traceID pcommon.TraceID
	var parent pcommon.SpanID
	for s := 0; s < services && n < count; s++ {
		rs := td.ResourceSpans().AppendEmpty()
		ra := rs.Resource().Attributes()
		ra.EnsureCapacity(len(t.resAttrs) + 1)
		ra.PutStr("service.name", "pipebench-"+strconv.Itoa(s))
		for _, kv := range t.resAttrs {
			ra.PutStr(kv[0], kv[1])
		}
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("pipebench")
		spans := ss.Spans()
		k := min(perService, count-n)
		spans.EnsureCapacity(k)
		for i := 0; i < k; i++ {
			q := seq + uint64(n)
			idx := uint64(n)
			if idx%uint64(t.cfg.SpansPerTrace) == 0 {
				binary.BigEndian.PutUint64(traceID[:8], q)
				binary.BigEndian.PutUint64(traceID[8:], uint64(sent))
				parent = pcommon.SpanID{}
			}
			sp := spans.AppendEmpty()
			sp.SetTraceID(traceID)
			var sid pcommon.SpanID
			binary.BigEndian.PutUint64(sid[:], q)
			sp.SetSpanID(sid)
			sp.SetParentSpanID(parent)
			if parent.IsEmpty() {
				parent = sid
			}
			sp.SetName("pipebench-span")
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetStartTimestamp(ts)
			sp.SetEndTimestamp(ts + 1000)
			a := sp.Attributes()
			a.EnsureCapacity(len(t.keys) + 2)
			a.PutInt(AttrSeq, int64(q))
			a.PutInt(AttrSent, sent)
			for j, key := range t.keys {
				a.PutStr(key, t.values[j])
			}
			n++
		}
	}
	return td
}

// MetricsConfig configures the "otlp-metrics" generator.
type MetricsConfig struct {
	Producers  int     `yaml:"producers" json:"producers"`
	Attributes int     `yaml:"attributes" json:"attributes"`
	Type       string  `yaml:"type" json:"type"`
	Churn      float64 `yaml:"churn" json:"churn"`
}

// Validate reports every problem, each prefixed with its key.
func (c *MetricsConfig) Validate() error {
	var errs []error
	if c.Producers < 1 {
		errs = append(errs, fmt.Errorf("producers: must be at least 1"))
	}
	if c.Attributes < 0 || c.Attributes > 1000 {
		errs = append(errs, fmt.Errorf("attributes: %d is outside 0..1000", c.Attributes))
	}
	if c.Type != "gauge" && c.Type != "sum" && c.Type != "histogram" {
		errs = append(errs, fmt.Errorf("type: %q is not gauge, sum or histogram", c.Type))
	}
	if c.Churn < 0 || c.Churn > 1 {
		errs = append(errs, fmt.Errorf("churn: %v is outside 0..1", c.Churn))
	}
	return errors.Join(errs...)
}

// MetricsFactory returns the factory of "otlp-metrics": one data point per
// item, spread over producers (default 2,000) with attributes (default 10).
func MetricsFactory() pipebench.Factory[pipebench.Generator] {
	def := func() *MetricsConfig { return &MetricsConfig{Producers: 2000, Attributes: 10, Type: "gauge"} }
	return pipebench.NewFactory("otlp-metrics", "OTLP metric points from P producers with K attributes (gauge, sum or histogram)", def,
		func(c *MetricsConfig, _ pipebench.Env) (pipebench.Generator, error) { return &Metrics{cfg: *c}, nil },
	).WithPayloads([]pipebench.Payload{pipebench.PayloadOTLPMetrics}, nil)
}

// Metrics builds metric batches: Next encodes the export request directly
// (Batch.Body, Batch.Data an *Encoded), Build gives the same points as
// pmetric.Metrics. Safe for concurrent use.
type Metrics struct {
	cfg  MetricsConfig
	once sync.Once
	enc  metricsConst
}

var (
	_ pipebench.Generator = (*Metrics)(nil)
	_ pipebench.Releaser  = (*Metrics)(nil)
	_ pipebench.Generator = (*Logs)(nil)
	_ pipebench.Releaser  = (*Logs)(nil)
)

// ItemName says what one item is.
func (m *Metrics) ItemName() string { return "metric point" }

// Next builds count data points: point i belongs to producer (seq+i) mod
// producers; with churn, a share of series get a new identity each time.
// Body holds the encoded ExportMetricsServiceRequest (the very bytes pdata
// would marshal for Build), Data an *Encoded that decodes them on demand.
// Release takes the buffer back.
func (m *Metrics) Next(seq uint64, count int, at time.Time) pipebench.Batch {
	e := m.encode(seq, count, at)
	return pipebench.Batch{Seq: seq, Count: count, Scheduled: at, ContentType: ContentType, Body: e.Body, Data: e}
}

// Release implements pipebench.Releaser: the body's buffer is reused.
func (m *Metrics) Release(b *pipebench.Batch) { releaseEncoded(b) }

// Build builds the data points of Next as pdata.
func (m *Metrics) Build(seq uint64, count int, at time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "pipebench")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("pipebench")
	met := sm.Metrics().AppendEmpty()
	met.SetName("pipebench.load." + m.cfg.Type)
	ts := pcommon.NewTimestampFromTime(at)
	sent := at.UnixNano()
	attrs := func(a pcommon.Map, q uint64) {
		producer := q % uint64(m.cfg.Producers)
		gen := uint64(0)
		if m.cfg.Churn > 0 {
			gen = uint64(float64(q) * m.cfg.Churn / float64(m.cfg.Producers))
		}
		a.EnsureCapacity(m.cfg.Attributes + 3)
		a.PutInt(AttrSeq, int64(q))
		a.PutInt(AttrSent, sent)
		a.PutStr("producer", "producer-"+strconv.FormatUint(producer, 10)+"-"+strconv.FormatUint(gen, 10))
		for j := 0; j < m.cfg.Attributes; j++ {
			a.PutStr("attr."+strconv.Itoa(j), "value-"+strconv.Itoa(j))
		}
	}
	switch m.cfg.Type {
	case "sum":
		s := met.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i := 0; i < count; i++ {
			dp := s.DataPoints().AppendEmpty()
			dp.SetTimestamp(ts)
			dp.SetIntValue(int64(seq) + int64(i))
			attrs(dp.Attributes(), seq+uint64(i))
		}
	case "histogram":
		h := met.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for i := 0; i < count; i++ {
			dp := h.DataPoints().AppendEmpty()
			dp.SetTimestamp(ts)
			dp.SetCount(10)
			dp.SetSum(55)
			dp.ExplicitBounds().FromRaw([]float64{1, 5, 10})
			dp.BucketCounts().FromRaw([]uint64{1, 4, 5, 0})
			attrs(dp.Attributes(), seq+uint64(i))
		}
	default:
		g := met.SetEmptyGauge()
		for i := 0; i < count; i++ {
			dp := g.DataPoints().AppendEmpty()
			dp.SetTimestamp(ts)
			dp.SetDoubleValue(float64(i))
			attrs(dp.Attributes(), seq+uint64(i))
		}
	}
	return md
}

// LogsConfig configures the "otlp-logs" generator.
type LogsConfig struct {
	Format     string `yaml:"format" json:"format"`
	Attributes int    `yaml:"attributes" json:"attributes"`
}

// Validate reports every problem, each prefixed with its key.
func (c *LogsConfig) Validate() error {
	switch c.Format {
	case "apache_common", "apache_combined", "json", "syslog":
	default:
		return fmt.Errorf("format: %q is not apache_common, apache_combined, json or syslog", c.Format)
	}
	if c.Attributes < 0 || c.Attributes > 1000 {
		return fmt.Errorf("attributes: %d is outside 0..1000", c.Attributes)
	}
	return nil
}

// LogsFactory returns the factory of "otlp-logs": flog-like log lines.
func LogsFactory() pipebench.Factory[pipebench.Generator] {
	def := func() *LogsConfig { return &LogsConfig{Format: "apache_common", Attributes: 5} }
	return pipebench.NewFactory("otlp-logs", "OTLP log records with flog-like bodies (apache common/combined, JSON, syslog)", def,
		func(c *LogsConfig, _ pipebench.Env) (pipebench.Generator, error) { return &Logs{cfg: *c}, nil },
	).WithPayloads([]pipebench.Payload{pipebench.PayloadOTLPLogs}, nil)
}

// Logs builds log batches: Next encodes the export request directly
// (Batch.Body, Batch.Data an *Encoded), Build gives the same records as
// plog.Logs. Safe for concurrent use.
type Logs struct {
	cfg  LogsConfig
	once sync.Once
	enc  logsConst
}

// ItemName says what one item is.
func (l *Logs) ItemName() string { return "log record" }

var paths = []string{"/api/orders", "/api/users/42", "/static/app.js", "/healthz", "/api/cart"}

// Line returns a flog-like log line for item q at t.
func (l *Logs) Line(q uint64, t time.Time) string {
	return string(l.appendLine(nil, q, l.appendDate(nil, t)))
}

// appendDate appends t as the line's format writes it.
func (l *Logs) appendDate(b []byte, t time.Time) []byte {
	if l.cfg.Format == "syslog" {
		return t.AppendFormat(b, time.RFC3339)
	}
	return t.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
}

// appendLine appends the line of item q, date being appendDate's.
func (l *Logs) appendLine(b []byte, q uint64, date []byte) []byte {
	var ipb [24]byte
	ip := append(ipb[:0], "10."...)
	ip = strconv.AppendUint(ip, q%200, 10)
	ip = append(ip, '.')
	ip = strconv.AppendUint(ip, (q/200)%250, 10)
	ip = append(ip, '.')
	ip = strconv.AppendUint(ip, q%250, 10)
	path := paths[q%uint64(len(paths))]
	status := int64([]int{200, 200, 200, 201, 404, 500}[q%6])
	size := 100 + q%4000
	switch l.cfg.Format {
	case "json":
		b = append(b, `{"host":`...)
		b = strconv.AppendQuote(b, string(ip))
		b = append(b, `,"user-identifier":"-","datetime":`...)
		b = strconv.AppendQuote(b, string(date))
		b = append(b, `,"method":"GET","request":`...)
		b = strconv.AppendQuote(b, path)
		b = append(b, `,"protocol":"HTTP/1.1","status":`...)
		b = strconv.AppendInt(b, status, 10)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendUint(b, size, 10)
		return append(b, '}')
	case "syslog":
		b = append(b, '<')
		b = strconv.AppendUint(b, 160+q%8, 10)
		b = append(b, ">1 "...)
		b = append(b, date...)
		b = append(b, " host-"...)
		b = strconv.AppendUint(b, q%10, 10)
		b = append(b, " app "...)
		b = strconv.AppendUint(b, 1000+q%9000, 10)
		b = append(b, " ID"...)
		b = strconv.AppendUint(b, q%100, 10)
		b = append(b, " - request "...)
		b = append(b, path...)
		b = append(b, " finished with "...)
		return strconv.AppendInt(b, status, 10)
	}
	b = append(b, ip...)
	b = append(b, " - - ["...)
	b = append(b, date...)
	b = append(b, `] "GET `...)
	b = append(b, path...)
	b = append(b, ` HTTP/1.1" `...)
	b = strconv.AppendInt(b, status, 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, size, 10)
	if l.cfg.Format == "apache_combined" {
		b = append(b, ` "https://example.com/" "pipebench/1.0"`...)
	}
	return b
}

// Next builds count log records: Body holds the encoded
// ExportLogsServiceRequest (the very bytes pdata would marshal for Build),
// Data an *Encoded that decodes them on demand. Release takes the buffer
// back.
func (l *Logs) Next(seq uint64, count int, at time.Time) pipebench.Batch {
	e := l.encode(seq, count, at)
	return pipebench.Batch{Seq: seq, Count: count, Scheduled: at, ContentType: ContentType, Body: e.Body, Data: e}
}

// Release implements pipebench.Releaser: the body's buffer is reused.
func (l *Logs) Release(b *pipebench.Batch) { releaseEncoded(b) }

// Build builds the log records of Next as pdata.
func (l *Logs) Build(seq uint64, count int, at time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "pipebench")
	sl := rl.ScopeLogs().AppendEmpty()
	recs := sl.LogRecords()
	recs.EnsureCapacity(count)
	ts := pcommon.NewTimestampFromTime(at)
	sent := at.UnixNano()
	for i := 0; i < count; i++ {
		q := seq + uint64(i)
		r := recs.AppendEmpty()
		r.SetTimestamp(ts)
		r.SetSeverityNumber(plog.SeverityNumberInfo)
		r.Body().SetStr(l.Line(q, at))
		a := r.Attributes()
		a.PutInt(AttrSeq, int64(q))
		a.PutInt(AttrSent, sent)
		for j := 0; j < l.cfg.Attributes; j++ {
			a.PutStr("attr."+strconv.Itoa(j), "value-"+strconv.Itoa(j))
		}
	}
	return ld
}
