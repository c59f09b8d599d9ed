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
	received  prometheus.Counter
	published prometheus.Counter
	refused   *prometheus.CounterVec
	latency   prometheus.Histogram
	inFlight  prometheus.Gauge
}

// Metric names, for the prometheus observer's eventproxy preset. What the
// proxy handled is what it published and JetStream acknowledged (and it
// answered 2xx): MetricPublished. MetricReceived counts every event that
// arrived in a well-formed request, handled or refused.
const (
	MetricReceived  = "eventproxy_events_received_total"
	MetricPublished = "eventproxy_events_published_total"
	MetricRefused   = "eventproxy_events_refused_total"
	MetricLatency   = "eventproxy_publish_duration_seconds"
	MetricInFlight  = "eventproxy_publish_in_flight"
)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(),
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricReceived,
			Help: "Events received in well-formed requests, before publishing: handled (published) or refused."}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPublished,
			Help: "Events handled: published to JetStream and acknowledged by the stream, answered 2xx."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRefused,
			Help: "Events refused, by reason: bad_request, too_large, stream_full, nats_unavailable, timeout, publish_error."}, []string{"reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricLatency,
			Help:    "Time from publish to the JetStream ack (or failure), in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "Publishes waiting for their JetStream ack."}),
	}
	m.reg.MustRegister(m.received, m.published, m.refused, m.latency, m.inFlight)
	for _, r := range []string{"bad_request", "too_large", "stream_full", "nats_unavailable", "timeout", "publish_error"} {
		m.refused.WithLabelValues(r)
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
