package eventproxy

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the proxy's own, on a registry of their own (several proxies
// may run in one process).
type metrics struct {
	reg       *prometheus.Registry
	accepted  prometheus.Counter
	published prometheus.Counter
	refused   *prometheus.CounterVec
	latency   prometheus.Histogram
	inFlight  prometheus.Gauge
}

// Metric names, for the prometheus observer's eventproxy preset.
const (
	MetricAccepted  = "eventproxy_events_accepted_total"
	MetricPublished = "eventproxy_events_published_total"
	MetricRefused   = "eventproxy_events_refused_total"
	MetricLatency   = "eventproxy_publish_duration_seconds"
	MetricInFlight  = "eventproxy_publish_in_flight"
)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricAccepted,
			Help: "Events received in well-formed requests, before publishing."}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPublished,
			Help: "Events published to JetStream and acknowledged by the stream."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRefused,
			Help: "Events refused, by reason: bad_request, too_large, stream_full, nats_unavailable, timeout, publish_error."}, []string{"reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricLatency,
			Help:    "Time from publish to the JetStream ack (or failure), in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "Publishes waiting for their JetStream ack."}),
	}
	m.reg.MustRegister(m.accepted, m.published, m.refused, m.latency, m.inFlight)
	for _, r := range []string{"bad_request", "too_large", "stream_full", "nats_unavailable", "timeout", "publish_error"} {
		m.refused.WithLabelValues(r)
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
