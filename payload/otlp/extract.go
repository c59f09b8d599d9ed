package otlpgen

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// visit reads pb.seq and pb.sent from one item's attributes.
func visit(a pcommon.Map, fn func(seq uint64, sent time.Time), unmatched *int) {
	s, ok1 := a.Get(AttrSeq)
	t, ok2 := a.Get(AttrSent)
	if !ok1 || !ok2 || s.Type() != pcommon.ValueTypeInt || t.Type() != pcommon.ValueTypeInt {
		*unmatched++
		return
	}
	fn(uint64(s.Int()), time.Unix(0, t.Int()))
}

// ExtractTraces calls fn for every span with its sequence number and send
// time, and returns the spans and how many carried none.
func ExtractTraces(td ptrace.Traces, fn func(seq uint64, sent time.Time)) (items, unmatched int) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				items++
				visit(spans.At(k).Attributes(), fn, &unmatched)
			}
		}
	}
	return items, unmatched
}

// ExtractMetrics does the same for every data point.
func ExtractMetrics(md pmetric.Metrics, fn func(seq uint64, sent time.Time)) (items, unmatched int) {
	EachMetric(md, func(m pmetric.Metric) {
		switch m.Type() {
		case pmetric.MetricTypeGauge:
			dps := m.Gauge().DataPoints()
			for d := 0; d < dps.Len(); d++ {
				items++
				visit(dps.At(d).Attributes(), fn, &unmatched)
			}
		case pmetric.MetricTypeSum:
			dps := m.Sum().DataPoints()
			for d := 0; d < dps.Len(); d++ {
				items++
				visit(dps.At(d).Attributes(), fn, &unmatched)
			}
		case pmetric.MetricTypeHistogram:
			dps := m.Histogram().DataPoints()
			for d := 0; d < dps.Len(); d++ {
				items++
				visit(dps.At(d).Attributes(), fn, &unmatched)
			}
		case pmetric.MetricTypeExponentialHistogram:
			n := m.ExponentialHistogram().DataPoints().Len()
			items += n
			unmatched += n
		case pmetric.MetricTypeSummary:
			n := m.Summary().DataPoints().Len()
			items += n
			unmatched += n
		}
	})
	return items, unmatched
}

// EachMetric calls fn with every metric of md, resource by resource and
// scope by scope, in order.
func EachMetric(md pmetric.Metrics, fn func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				fn(ms.At(k))
			}
		}
	}
}

// ExtractLogs does the same for every log record.
func ExtractLogs(ld plog.Logs, fn func(seq uint64, sent time.Time)) (items, unmatched int) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			recs := sls.At(j).LogRecords()
			for k := 0; k < recs.Len(); k++ {
				items++
				visit(recs.At(k).Attributes(), fn, &unmatched)
			}
		}
	}
	return items, unmatched
}
