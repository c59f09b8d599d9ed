package metricsout

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/pipebench/pipebench"
)

// Pusher pushes an Exporter's series as OTLP metrics (over gRPC or
// OTLP/HTTP) at a fixed interval, and once more with the final values at
// Shutdown.
type Pusher struct {
	mp *sdkmetric.MeterProvider
}

// The standard OpenTelemetry variables PushOTLP and EndpointFromEnv read.
const (
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvMetricsEndpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvMetricsProtocol = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
)

// EndpointFromEnv is where the standard variables say metrics go, for a
// run given no --otlp-metrics: $OTEL_EXPORTER_OTLP_METRICS_ENDPOINT as it
// is, else $OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/metrics added when the
// protocol is http/protobuf), else "".
func EndpointFromEnv() string {
	if e := os.Getenv(EnvMetricsEndpoint); e != "" {
		return e
	}
	e := os.Getenv(EnvEndpoint)
	if e != "" && httpProtocol() {
		u, err := url.Parse(e)
		if err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/metrics"
			return u.String()
		}
	}
	return e
}

// httpProtocol reports whether the standard variables ask for OTLP/HTTP.
func httpProtocol() bool {
	p := os.Getenv(EnvMetricsProtocol)
	if p == "" {
		p = os.Getenv(EnvProtocol)
	}
	return strings.HasPrefix(p, "http/")
}

// PushOTLP starts pushing exp's series to endpoint every interval (0:
// every second; at least 100ms). The endpoint is OTLP/HTTP when it is an
// http:// or https:// URL with a path (http://collector:4318/v1/metrics,
// sent to exactly that path), or a URL without one while
// OTEL_EXPORTER_OTLP_(METRICS_)PROTOCOL is http/protobuf (/v1/metrics
// added); otherwise OTLP/gRPC: host:port or an http(s):// URL of one.
// Plain http and a bare host:port send without TLS. The exporters also
// read the other standard variables (OTEL_EXPORTER_OTLP_HEADERS,
// _TIMEOUT, _COMPRESSION, _CERTIFICATE, and their METRICS_ forms). It
// returns without waiting for the collector: a collector that is not
// there yet is retried by the SDK.
//
// The series are the Prometheus exposition's, named as OpenTelemetry names
// them (OTLPName: no _total, no unit suffix; every instrument has its
// unit), so that a collector's Prometheus exporter gives the same names
// back; counters and histograms are cumulative from the run's start, the
// latency histograms exponential (scale Schema). The resource is
// service.name pipebench and service.instance.id the host's name, with
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME on top.
func PushOTLP(ctx context.Context, endpoint string, interval time.Duration, exp *Exporter) (*Pusher, error) {
	switch {
	case interval <= 0:
		interval = time.Second
	case interval < 100*time.Millisecond:
		interval = 100 * time.Millisecond
	}
	client, err := otlpClient(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("pipebench"), semconv.ServiceInstanceID(host)), resource.WithFromEnv())
	if err != nil {
		return nil, pipebench.UsageError("OTEL_RESOURCE_ATTRIBUTES: "+err.Error(), "write it as key1=value1,key2=value2", nil)
	}
	reader := sdkmetric.NewPeriodicReader(client, sdkmetric.WithInterval(interval),
		sdkmetric.WithProducer(producer{exp: exp}))
	return &Pusher{mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))}, nil
}

// otlpClient is the exporter endpoint asks for: OTLP/HTTP or gRPC.
func otlpClient(ctx context.Context, endpoint string) (sdkmetric.Exporter, error) {
	if strings.HasPrefix(endpoint, "http://") || strings.HasPrefix(endpoint, "https://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, badEndpoint(endpoint, err)
		}
		if (u.Path != "" && u.Path != "/") || httpProtocol() {
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/metrics"
			}
			opts := []otlpmetrichttp.Option{otlpmetrichttp.WithTimeout(5 * time.Second), otlpmetrichttp.WithEndpointURL(u.String())}
			c, err := otlpmetrichttp.New(ctx, opts...)
			if err != nil {
				return nil, badEndpoint(endpoint, err)
			}
			return c, nil
		}
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithTimeout(5 * time.Second), otlpmetricgrpc.WithEndpoint(u.Host)}
		if u.Scheme == "http" {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		c, err := otlpmetricgrpc.New(ctx, opts...)
		if err != nil {
			return nil, badEndpoint(endpoint, err)
		}
		return c, nil
	}
	if strings.Contains(endpoint, "://") || !strings.Contains(endpoint, ":") {
		return nil, badEndpoint(endpoint, nil)
	}
	c, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithTimeout(5*time.Second), otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure())
	if err != nil {
		return nil, badEndpoint(endpoint, err)
	}
	return c, nil
}

func badEndpoint(endpoint string, err error) error {
	return pipebench.UsageError(fmt.Sprintf("--otlp-metrics %q is not an OTLP endpoint", pipebench.RedactURL(endpoint)),
		"give an OTLP/HTTP URL (like http://127.0.0.1:4318/v1/metrics), or a gRPC host:port (like 127.0.0.1:4317) or http://host:port", err)
}

// Shutdown pushes the values once more (call it after Exporter.Finish: the
// final ones) and stops; ctx bounds the wait for the collector.
func (p *Pusher) Shutdown(ctx context.Context) error { return p.mp.Shutdown(ctx) }

// producer hands the reader the Exporter's families as OTLP data.
type producer struct{ exp *Exporter }

func (p producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	fs, began := p.exp.snapshot()
	now := time.Now()
	ms := make([]metricdata.Metrics, 0, len(fs.list))
	for _, f := range fs.list {
		m := metricdata.Metrics{Name: otlpName(f.Name, f.Unit, f.Kind == counter), Description: f.Help, Unit: f.Unit}
		switch f.Kind {
		case gauge, counter:
			pts := make([]metricdata.DataPoint[float64], 0, len(f.Points))
			for _, pt := range f.Points {
				pts = append(pts, metricdata.DataPoint[float64]{Attributes: attrs(f.Labels, pt.Values), StartTime: began, Time: now, Value: pt.Value})
			}
			if f.Kind == gauge {
				m.Data = metricdata.Gauge[float64]{DataPoints: pts}
			} else {
				m.Data = metricdata.Sum[float64]{DataPoints: pts, Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
			}
		case histogram:
			pts := make([]metricdata.ExponentialHistogramDataPoint[float64], 0, len(f.Points))
			for _, pt := range f.Points {
				pts = append(pts, exponential(*pt.Hist, attrs(f.Labels, pt.Values), began, now))
			}
			m.Data = metricdata.ExponentialHistogram[float64]{DataPoints: pts, Temporality: metricdata.CumulativeTemporality}
		}
		ms = append(ms, m)
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: "github.com/pipebench/pipebench/metricsout"}, Metrics: ms}}, nil
}

func attrs(names, values []string) attribute.Set {
	kv := make([]attribute.KeyValue, len(names))
	for i := range names {
		kv[i] = attribute.String(names[i], values[i])
	}
	return attribute.NewSet(kv...)
}

// exponential is h as an OTLP exponential histogram point of scale Schema,
// whose bucket k holds (base^k, base^(k+1)]: the native bucket k+1.
func exponential(h hist, set attribute.Set, start, now time.Time) metricdata.ExponentialHistogramDataPoint[float64] {
	dp := metricdata.ExponentialHistogramDataPoint[float64]{Attributes: set, StartTime: start, Time: now,
		Count: h.Count, Sum: h.Sum, Scale: Schema, ZeroCount: h.Zero, ZeroThreshold: zeroThreshold}
	if h.Count > 0 {
		dp.Min, dp.Max = metricdata.NewExtrema(h.Min), metricdata.NewExtrema(h.Max)
	}
	if n := len(h.Native); n > 0 {
		first := h.Native[0].Index
		counts := make([]uint64, h.Native[n-1].Index-first+1)
		for _, b := range h.Native {
			counts[b.Index-first] = b.Count
		}
		dp.PositiveBucket = metricdata.ExponentialBucket{Offset: int32(first - 1), Counts: counts}
	}
	return dp
}
