package metricsout

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/pipebench/pipebench"
)

// OTLPName is the OTLP name of a Prometheus metric name: counters lose
// _total, series in seconds lose _seconds (their unit is "s"). A Prometheus
// receiver or exporter that adds suffixes by type and unit gives the
// Prometheus name back.
func OTLPName(prom string) (name, unit string) {
	name = strings.TrimSuffix(prom, "_total")
	if n, ok := strings.CutSuffix(name, "_seconds"); ok {
		return n, "s"
	}
	return name, ""
}

// Pusher pushes an Exporter's series as OTLP metrics over gRPC at a fixed
// interval, and once more with the final values at Shutdown.
type Pusher struct {
	mp *sdkmetric.MeterProvider
}

// PushOTLP starts pushing exp's series to endpoint (host:port, or an
// http:// or https:// URL; plain http and a bare host:port send without
// TLS) every interval (0: every second; at least 100ms). It returns without waiting for the
// collector: a collector that is not there yet is retried by the SDK.
func PushOTLP(ctx context.Context, endpoint string, interval time.Duration, exp *Exporter) (*Pusher, error) {
	switch {
	case interval <= 0:
		interval = time.Second
	case interval < 100*time.Millisecond:
		interval = 100 * time.Millisecond
	}
	opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithTimeout(5 * time.Second)}
	switch {
	case strings.HasPrefix(endpoint, "http://"):
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, badEndpoint(endpoint, err)
		}
		opts = append(opts, otlpmetricgrpc.WithEndpoint(u.Host), otlpmetricgrpc.WithInsecure())
	case strings.HasPrefix(endpoint, "https://"):
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, badEndpoint(endpoint, err)
		}
		opts = append(opts, otlpmetricgrpc.WithEndpoint(u.Host))
	case strings.Contains(endpoint, "://") || !strings.Contains(endpoint, ":"):
		return nil, badEndpoint(endpoint, nil)
	default:
		opts = append(opts, otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure())
	}
	client, err := otlpmetricgrpc.New(ctx, opts...)
	if err != nil {
		return nil, badEndpoint(endpoint, err)
	}
	res := resource.NewSchemaless(semconv.ServiceName("pipebench"),
		attribute.String("pipebench.scenario", exp.plan.Scenario))
	reader := sdkmetric.NewPeriodicReader(client, sdkmetric.WithInterval(interval),
		sdkmetric.WithProducer(producer{exp: exp, start: time.Now()}))
	return &Pusher{mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))}, nil
}

func badEndpoint(endpoint string, err error) error {
	return pipebench.UsageError(fmt.Sprintf("--otlp-metrics %q is not an OTLP gRPC endpoint", endpoint),
		"give host:port (like 127.0.0.1:4317) or http://host:port", err)
}

// Shutdown pushes the values once more (call it after Exporter.Finish: the
// final ones) and stops; ctx bounds the wait for the collector.
func (p *Pusher) Shutdown(ctx context.Context) error { return p.mp.Shutdown(ctx) }

// producer hands the reader the Exporter's snapshot as OTLP data.
type producer struct {
	exp   *Exporter
	start time.Time
}

func (p producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	sn := p.exp.snapshot()
	now := time.Now()
	var ms []metricdata.Metrics
	add := func(prom, desc string, data metricdata.Aggregation) {
		name, unit := OTLPName(prom)
		ms = append(ms, metricdata.Metrics{Name: name, Description: desc, Unit: unit, Data: data})
	}
	point := func(v float64, kv ...attribute.KeyValue) metricdata.DataPoint[float64] {
		return metricdata.DataPoint[float64]{Attributes: attribute.NewSet(kv...), StartTime: p.start, Time: now, Value: v}
	}
	gauge := func(prom, desc string, pts ...metricdata.DataPoint[float64]) {
		add(prom, desc, metricdata.Gauge[float64]{DataPoints: pts})
	}
	counter := func(prom, desc string, pts ...metricdata.DataPoint[float64]) {
		add(prom, desc, metricdata.Sum[float64]{DataPoints: pts, Temporality: metricdata.CumulativeTemporality, IsMonotonic: true})
	}
	histogram := func(prom, desc string, h hist) {
		counts := h.Counts
		add(prom, desc, metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[float64]{{StartTime: p.start, Time: now,
				Count: h.Count, Sum: h.Sum, Bounds: Buckets, BucketCounts: counts}}})
	}
	plan := p.exp.plan
	gauge(MetricInfo, "The run; always 1.", point(1, attribute.String("scenario", plan.Scenario),
		attribute.String("case", plan.Case), attribute.String("version", plan.Version), attribute.String("status", sn.status)))
	gauge(MetricFinished, "1 once the run ended and every value is final.", point(b2f(sn.finished)))
	gauge(MetricPhaseInfo, "The phase running now; always 1.", point(1, attribute.String("phase", sn.phase)))
	gauge(MetricPhaseIndex, "The phase running now, from 1.", point(float64(sn.index)))
	gauge(MetricElapsed, "Seconds since the load started.", point(sn.elapsed))
	gauge(MetricRemaining, "Planned seconds of load left.", point(sn.remaining))
	gauge(MetricTargetRate, "Items per second the pacer asks for now.", point(sn.target))
	gauge(MetricInFlight, "Sends started and not yet answered.", point(sn.inFlight))
	if sn.queue >= 0 {
		gauge(MetricExporterQueue, "Largest exporter queue size observed now.", point(sn.queue))
	}
	t := sn.t
	counter(MetricSent, "Items whose send started.", point(float64(t.sent)))
	counter(MetricAccepted, "Items the target answered ok.", point(float64(t.items[pipebench.ClassOK])))
	var failed, sends []metricdata.DataPoint[float64]
	for _, c := range failureClasses {
		failed = append(failed, point(float64(t.items[c]), attribute.String("class", c.String())))
	}
	for _, c := range sendClasses {
		sends = append(sends, point(float64(t.batches[c]), attribute.String("class", c.String())))
	}
	counter(MetricFailed, "Items whose send failed, by outcome class.", failed...)
	counter(MetricSends, "Sends (batches) by outcome class.", sends...)
	counter(MetricDropped, "Items never sent because max_in_flight was reached.", point(float64(t.items[pipebench.ClassDropped])))
	counter(MetricSentBytes, "Bytes of the request bodies sent.", point(float64(t.bytes)))
	histogram(MetricLatency, "Send latency from the scheduled time.", toHist(t.latency))
	histogram(MetricServiceTime, "Send service time from the actual start.", toHist(t.service))
	if sn.hasSink {
		counter(MetricDelivered, "Unique items that arrived at the sink.", point(float64(t.delivered)))
		counter(MetricDuplicates, "Items that arrived more than once.", point(float64(t.duplicates)))
		gauge(MetricBacklog, "Items accepted and not yet delivered.", point(sn.backlog))
		histogram(MetricE2ELatency, "End-to-end latency from the send to the arrival.", toHist(t.e2e))
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: "github.com/pipebench/pipebench/metricsout"}, Metrics: ms}}, nil
}
