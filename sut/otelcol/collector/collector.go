// Package collector is the embedded OpenTelemetry Collector: the child
// process the otelcol system under test starts (otelcol.ChildEnv), built
// from otelcol.Components, and the collector's own dry run of a
// config_file (otelcol.CheckEnv). It is linked by pipebench-sut, the
// program that carries the heavy systems under test, and by the test
// binaries that start it as their own child; the pipebench command does
// not link it (its build would take four times as long).
package collector

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusremotewriteexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/attributesprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/resourceprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/spanprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/transformprocessor"
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
	otelcolc "go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/pipebench/pipebench/internal/proc/childproc"
	"github.com/pipebench/pipebench/sut/otelcol"
)

func init() { otelcol.SetChecker(dryRun) }

// MaybeRunChild runs the embedded OpenTelemetry Collector and exits, if this
// process was started as the collector child (otelcol.ChildEnv is set), or
// checks a configuration and exits (otelcol.CheckEnv); otherwise it returns
// at once. pipebench-sut's main calls it first thing, and test binaries from
// TestMain. It is one of the functions outside main that exit the process,
// because in the child it is the main.
func MaybeRunChild() {
	childproc.RunIfChild(otelcol.ChildEnv, "embedded collector", runCollector)
	childproc.RunIfChild(otelcol.CheckEnv, "embedded collector's check", otelcol.RunCheck(dryRun))
}

func runCollector(path string) error {
	col, err := otelcolc.NewCollector(otelcolc.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "pipebench-otelcol", Description: "OpenTelemetry Collector embedded in pipebench", Version: otelcol.CollectorVersion},
		Factories: factories,
		ConfigProviderSettings: otelcolc.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
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

// factories is the embedded collector's components, all in this one
// place (the list README.md gives and validate checks a config_file
// against): receivers otlp, prometheus, filelog; processors batch,
// memory_limiter, resource, attributes, filter, transform, span,
// tail_sampling; exporters otlp, otlphttp, prometheusremotewrite; the
// file_storage extension.
func factories() (otelcolc.Factories, error) {
	var f otelcolc.Factories
	var err error
	if f.Receivers, err = otelcolc.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory(), prometheusreceiver.NewFactory(), filelogreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcolc.MakeFactoryMap[processor.Factory](batchprocessor.NewFactory(), memorylimiterprocessor.NewFactory(), resourceprocessor.NewFactory(),
		attributesprocessor.NewFactory(), filterprocessor.NewFactory(), transformprocessor.NewFactory(), spanprocessor.NewFactory(),
		tailsamplingprocessor.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcolc.MakeFactoryMap[exporter.Factory](otlpexporter.NewFactory(), otlphttpexporter.NewFactory(), prometheusremotewriteexporter.NewFactory()); err != nil {
		return f, err
	}
	if f.Extensions, err = otelcolc.MakeFactoryMap[extension.Factory](filestorage.NewFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

// dryRun validates a collector configuration with the embedded collector's
// own validation.
func dryRun(data []byte, vars map[string]string) error {
	col, err := otelcolc.NewCollector(otelcolc.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "pipebench-otelcol", Version: otelcol.CollectorVersion},
		Factories: factories,
		ConfigProviderSettings: otelcolc.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              []string{configScheme + ":config_file"},
			ProviderFactories: []confmap.ProviderFactory{bytesProvider(data), envStandIns(vars), fileprovider.NewFactory()},
			DefaultScheme:     "env",
		}},
	})
	if err != nil {
		return err
	}
	if err := col.DryRun(context.Background()); err != nil {
		return fmt.Errorf("the embedded collector %s refuses it: %w", otelcol.CollectorVersion, err)
	}
	return nil
}

// configScheme is the scheme of the configuration handed to the dry run.
const configScheme = "pipebench"

// staticProvider hands the collector a configuration held in memory, or
// variables: confmap.Provider.
type staticProvider struct {
	scheme string
	get    func(name string) (string, bool)
}

func (p staticProvider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	name, ok := strings.CutPrefix(uri, p.scheme+":")
	if !ok {
		return nil, fmt.Errorf("%q is not a %s: URI", uri, p.scheme)
	}
	def := ""
	hasDef := false
	if n, d, found := strings.Cut(name, ":-"); found {
		name, def, hasDef = n, d, true
	}
	v, found := p.get(name)
	if !found {
		if !hasDef {
			return confmap.NewRetrievedFromYAML(nil)
		}
		v = def
	}
	if v == "" {
		return confmap.NewRetrieved("")
	}
	return confmap.NewRetrievedFromYAML([]byte(v))
}

func (p staticProvider) Scheme() string { return p.scheme }

func (staticProvider) Shutdown(context.Context) error { return nil }

func bytesProvider(data []byte) confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider {
		return staticProvider{scheme: configScheme, get: func(string) (string, bool) { return string(data), true }}
	})
}

// envStandIns is the env: scheme with vars first, then the process's
// environment.
func envStandIns(vars map[string]string) confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider {
		return staticProvider{scheme: "env", get: func(k string) (string, bool) {
			if v, ok := vars[k]; ok {
				return v, true
			}
			return os.LookupEnv(k)
		}}
	})
}
