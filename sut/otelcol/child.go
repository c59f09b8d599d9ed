package otelcol

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusremotewriteexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"

	"github.com/pipebench/pipebench/internal/childproc"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/resourceprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// ChildEnv names the environment variable that makes a pipebench process
// the embedded collector: its value is the path of the collector's YAML.
const ChildEnv = "PIPEBENCH_OTELCOL_CONFIG"

// CollectorVersion is the OpenTelemetry Collector release embedded.
const CollectorVersion = "0.162.0"

// MaybeRunChild runs the embedded OpenTelemetry Collector and exits, if this
// process was started as the collector child (ChildEnv is set); otherwise it
// returns at once. cmd/pipebench's main calls it first thing, and test
// binaries from TestMain. It is the one function outside main that exits the
// process, because in the child it is the main.
func MaybeRunChild() { childproc.RunIfChild(ChildEnv, "embedded collector", runCollector) }

func factories() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory(), prometheusreceiver.NewFactory(), filelogreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](batchprocessor.NewFactory(), memorylimiterprocessor.NewFactory(), resourceprocessor.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](otlpexporter.NewFactory(), otlphttpexporter.NewFactory(), prometheusremotewriteexporter.NewFactory()); err != nil {
		return f, err
	}
	if f.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](filestorage.NewFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

func runCollector(path string) error {
	col, err := otelcol.NewCollector(otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "pipebench-otelcol", Description: "OpenTelemetry Collector embedded in pipebench", Version: CollectorVersion},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              []string{"file:" + path},
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
			DefaultScheme:     "env", // ${VAR} as ${env:VAR}, as the collector's own distributions read it
		}},
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return col.Run(ctx)
}
