package metricsout

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// promHist is a histogram with both classic buckets and native ones, as
// Prometheus's protobuf format carries them (the text format shows the
// classic buckets only).
type promHist struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	h      dto.Histogram
}

func newPromHist(desc *prometheus.Desc, h hist, created time.Time, values []string) prometheus.Metric {
	m := &promHist{desc: desc, labels: prometheus.MakeLabelPairs(desc, values)}
	m.h.SampleCount = proto.Uint64(h.Count)
	m.h.SampleSum = proto.Float64(h.Sum)
	m.h.CreatedTimestamp = timestamppb.New(created)
	var cum uint64
	for i, b := range Buckets {
		cum += h.Classic[i]
		m.h.Bucket = append(m.h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(cum)})
	}
	m.h.Schema = proto.Int32(Schema)
	m.h.ZeroThreshold = proto.Float64(zeroThreshold)
	m.h.ZeroCount = proto.Uint64(h.Zero)
	// Spans of consecutive buckets, each after a gap (offset) from the
	// previous one's end; counts as deltas from the previous bucket's.
	var prevCount int64
	next := 0 // the index after the last span's end
	for k, b := range h.Native {
		if k == 0 || b.Index != next {
			m.h.PositiveSpan = append(m.h.PositiveSpan, &dto.BucketSpan{Offset: proto.Int32(int32(b.Index - next)), Length: proto.Uint32(0)})
		}
		sp := m.h.PositiveSpan[len(m.h.PositiveSpan)-1]
		sp.Length = proto.Uint32(sp.GetLength() + 1)
		m.h.PositiveDelta = append(m.h.PositiveDelta, int64(b.Count)-prevCount)
		prevCount = int64(b.Count)
		next = b.Index + 1
	}
	if len(m.h.PositiveSpan) == 0 && h.Zero == 0 {
		// An empty native histogram still says it is one.
		m.h.PositiveSpan = []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(0)}}
	}
	return m
}

// Desc implements prometheus.Metric.
func (m *promHist) Desc() *prometheus.Desc { return m.desc }

// Write implements prometheus.Metric.
func (m *promHist) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Histogram = &m.h
	return nil
}
