// Package collector is the embedded OpenTelemetry Collector's core: the
// child process the otelcol system under test starts for a configuration
// that uses only the core components (otelcol.CoreComponents: the otlp
// receiver, the batch, memory_limiter and resource processors, the otlp and
// otlphttp exporters; otelcol.CoreChildEnv), its dry run of such a
// configuration (otelcol.CoreCheckEnv), and what the full collector
// (package full, in pipebench-sut) shares with it. The pipebench command
// links it, so that the quickstart's collector needs no other program: it
// adds about half a CPU-minute to a cold build, where the full set of
// components adds nine.
package collector

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/resourceprocessor"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
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

func init() {
	otelcol.SetCoreChecker(func(data []byte, vars map[string]string) error { return DryRun(data, vars, Core) })
}

// Factories makes a collector's set of components.
type Factories func() (otelcolc.Factories, error)

// MaybeRunChild runs the core collector and exits, if this process was
// started as it (otelcol.CoreChildEnv is set), or checks a configuration
// with it and exits (otelcol.CoreCheckEnv); otherwise it returns at once.
// The pipebench command calls it first thing (through sut/all), so do
// pipebench-sut and the test binaries. It is one of the functions outside
// main that exit the process, because in the child it is the main.
func MaybeRunChild() {
	childproc.RunIfChild(otelcol.CoreChildEnv, "embedded collector", func(path string) error { return Run(path, Core) })
	childproc.RunIfChild(otelcol.CoreCheckEnv, "embedded collector's check", otelcol.RunCheck(func(data []byte, vars map[string]string) error {
		return DryRun(data, vars, Core)
	}))
}

// Run runs a collector of the components f makes on the configuration at
// path until SIGTERM or an interrupt.
func Run(path string, f Factories) error {
	col, err := otelcolc.NewCollector(otelcolc.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "pipebench-otelcol", Description: "OpenTelemetry Collector embedded in pipebench", Version: otelcol.CollectorVersion},
		Factories: f,
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

// Core makes the core components, otelcol.CoreComponents.
func Core() (otelcolc.Factories, error) {
	var f otelcolc.Factories
	var err error
	if f.Receivers, err = otelcolc.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcolc.MakeFactoryMap[processor.Factory](batchprocessor.NewFactory(), memorylimiterprocessor.NewFactory(), resourceprocessor.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcolc.MakeFactoryMap[exporter.Factory](otlpexporter.NewFactory(), otlphttpexporter.NewFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

// DryRun validates a collector configuration with the validation of a
// collector of the components f makes.
func DryRun(data []byte, vars map[string]string, f Factories) error {
	col, err := otelcolc.NewCollector(otelcolc.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "pipebench-otelcol", Version: otelcol.CollectorVersion},
		Factories: f,
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
