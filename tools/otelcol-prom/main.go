// Command otelcol-prom is a test-only OpenTelemetry Collector: the OTLP
// receiver in front of the Prometheus exporter (from collector-contrib), the
// path pipebench's OTLP metrics take to a Prometheus server that scrapes a
// collector. The metricsout tests push a run's metrics through it and read
// them back from its /metrics. It lives in its own module so that
// pipebench's module never depends on collector-contrib (or on a second
// collector release). Usage: otelcol-prom --config FILE.
package main

import (
	"fmt"
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// Version is the collector release the components come from.
const Version = "0.165.0"

func components() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](prometheusexporter.NewFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

func main() {
	cmd := otelcol.NewCommand(otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-prom", Description: "OTLP receiver and Prometheus exporter, for pipebench's tests", Version: Version},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
			DefaultScheme:     "file",
		}},
	})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
