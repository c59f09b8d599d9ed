package otelcol

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/otelcol"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// ChildEnv names the environment variable that makes a pipebench process
// the embedded collector: its value is the path of the collector's YAML.
const ChildEnv = "PIPEBENCH_OTELCOL_CONFIG"

// MaybeRunChild runs the embedded OpenTelemetry Collector and exits, if this
// process was started as the collector child (ChildEnv is set); otherwise it
// returns at once. cmd/pipebench's main calls it first thing, and test
// binaries from TestMain. It is the one function outside main that exits the
// process, because in the child it is the main.
func MaybeRunChild() { childproc.RunIfChild(ChildEnv, "embedded collector", runCollector) }

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
