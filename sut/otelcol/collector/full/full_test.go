package full_test

import (
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/component"
	otelcolc "go.opentelemetry.io/collector/otelcol"

	"github.com/pipebench/pipebench/sut/otelcol"
	"github.com/pipebench/pipebench/sut/otelcol/collector"
	"github.com/pipebench/pipebench/sut/otelcol/collector/full"
)

func types[F any](m map[component.Type]F) []string {
	var out []string
	for t := range maps.Keys(m) {
		out = append(out, t.String())
	}
	slices.Sort(out)
	return out
}

// The lists validate checks a config_file against (otelcol.Components,
// otelcol.CoreComponents) are the components the two collectors are built
// from: each factory's type is on its list, and each name on a list is a
// factory's type or one of the names the collector reads as one (otlp_grpc,
// otlp_http, prometheus_remote_write, filelog).
func TestFactoriesAreTheLists(t *testing.T) {
	aliases := map[string]bool{"otlp_grpc": true, "otlp_http": true, "prometheus_remote_write": true, "filelog": true}
	for _, c := range []struct {
		name string
		make func() (collectorFactories, error)
		list map[string][]string
	}{
		{"full", func() (collectorFactories, error) { f, err := full.Factories(); return byKind(f), err }, otelcol.Components},
		{"core", func() (collectorFactories, error) { f, err := collector.Core(); return byKind(f), err }, otelcol.CoreComponents},
	} {
		got, err := c.make()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for kind, have := range got {
			for _, typ := range have {
				if !slices.Contains(c.list[kind], typ) {
					t.Errorf("the %s collector has %s %q, which its list does not name", c.name, kind, typ)
				}
			}
			for _, name := range c.list[kind] {
				if !slices.Contains(have, name) && !aliases[name] {
					t.Errorf("the %s collector's list names %s %q, which it has no factory for (it has %v)", c.name, kind, name, have)
				}
			}
		}
	}
	for kind, names := range otelcol.CoreComponents {
		for _, n := range names {
			if !slices.Contains(otelcol.Components[kind], n) {
				t.Errorf("the core's %s %q is not in the full collector's list", kind, n)
			}
		}
	}
}

type collectorFactories map[string][]string

func byKind(f otelcolc.Factories) collectorFactories {
	return collectorFactories{"receivers": types(f.Receivers), "processors": types(f.Processors), "exporters": types(f.Exporters),
		"extensions": types(f.Extensions), "connectors": types(f.Connectors)}
}
