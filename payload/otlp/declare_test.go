package otlpgen

import (
	"slices"
	"testing"

	"github.com/pipebench/pipebench"
)

// Each OTLP generator declares its own signal.
func TestFactoriesDeclareTheirSignal(t *testing.T) {
	for f, want := range map[string]pipebench.Payload{
		TracesFactory().Name: pipebench.PayloadOTLPTraces, MetricsFactory().Name: pipebench.PayloadOTLPMetrics, LogsFactory().Name: pipebench.PayloadOTLPLogs,
	} {
		var got []pipebench.Payload
		for _, fac := range []pipebench.Factory[pipebench.Generator]{TracesFactory(), MetricsFactory(), LogsFactory()} {
			if fac.Name == f {
				got = fac.Produces
			}
		}
		if !slices.Equal(got, []pipebench.Payload{want}) {
			t.Errorf("%s produces %v, want %v", f, got, want)
		}
	}
}
