package command

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"

	"github.com/pipebench/pipebench/metricsout"
)

// otlpReceiver is a real OTLP/gRPC metrics service (the collector's pdata
// server code) that keeps the last value pushed of every series.
type otlpReceiver struct {
	pmetricotlp.UnimplementedGRPCServer
	mu      sync.Mutex
	exports int
	values  map[string]float64 // name{attrs} -> value; histograms: count
}

func (r *otlpReceiver) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports++
	rms := req.Metrics().ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					r.numbers(m.Name(), m.Sum().DataPoints())
				case pmetric.MetricTypeGauge:
					r.numbers(m.Name(), m.Gauge().DataPoints())
				case pmetric.MetricTypeHistogram:
					dps := m.Histogram().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						r.values[m.Name()+"_count"] = float64(dps.At(d).Count())
					}
				case pmetric.MetricTypeExponentialHistogram:
					dps := m.ExponentialHistogram().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						r.values[m.Name()+"_count"] = float64(dps.At(d).Count())
					}
				}
			}
		}
	}
	return pmetricotlp.NewExportResponse(), nil
}

func (r *otlpReceiver) numbers(name string, dps pmetric.NumberDataPointSlice) {
	for d := 0; d < dps.Len(); d++ {
		dp := dps.At(d)
		key := name
		if c, ok := dp.Attributes().Get("class"); ok {
			key += "{" + c.AsString() + "}"
		}
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			r.values[key] = float64(dp.IntValue())
		} else {
			r.values[key] = dp.DoubleValue()
		}
	}
}

// `pipebench run --otlp-metrics`: the same series pushed as OTLP to a real
// OTLP/gRPC server; the last values pushed agree with the Result.
func TestOTLPMetricsPush(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4 s scenario")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	recv := &otlpReceiver{values: map[string]float64{}}
	pmetricotlp.RegisterGRPCServer(srv, recv)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	_, res := runSteadyThenFailing(t, "otlp-metrics-out", "interval: 500ms", "--otlp-metrics", ln.Addr().String())
	want := totalOf(t, res)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if recv.exports < 3 {
		t.Errorf("only %d exports over a 4 s run at a 500 ms interval", recv.exports)
	}
	name := func(prom string) string { n, _ := metricsout.OTLPName(prom); return n }
	for key, wantV := range map[string]float64{
		name(metricsout.MetricSent):                  want("sent"),
		name(metricsout.MetricAccepted):              want("accepted"),
		name(metricsout.MetricDelivered):             want("delivered"),
		name(metricsout.MetricFailed) + "{refused}":  want("errors", "class", "refused"),
		name(metricsout.MetricFailed) + "{error}":    want("errors", "class", "error"),
		name(metricsout.MetricFinished):              1,
		name(metricsout.MetricE2ELatency) + "_count": want("delivered"),
	} {
		if got, ok := recv.values[key]; !ok || got != wantV {
			t.Errorf("%s: pushed %v (present %v), the Result %v", key, got, ok, wantV)
		}
	}
	if want("errors", "class", "refused") == 0 {
		t.Error("no failures: the test proves nothing about classes")
	}
	// Every series of the Prometheus exposition is pushed too.
	for _, n := range metricsout.Names() {
		key := name(n)
		found := false
		for k := range recv.values {
			if k == key || strings.HasPrefix(k, key+"{") || k == key+"_count" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s (OTLP %s) was never pushed", n, key)
		}
	}
}
