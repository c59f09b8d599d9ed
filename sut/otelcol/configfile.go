package otelcol

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/otelcol"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
)

// MaxConfigFile bounds config_file: a collector's configuration is a few
// KiB (the largest of the collector-contrib examples is 30 KiB).
const MaxConfigFile = 1 << 20

// readConfigFile reads config_file as pipebench reads every file a user
// names: a regular file (the collector reads it after pipebench does: a
// FIFO or a device would hold the run), at most MaxConfigFile, YAML
// nested no deeper than any file pipebench reads.
func readConfigFile(path string) ([]byte, error) {
	data, err := pipebench.ReadInput(context.Background(), pipebench.Input{Path: path, What: "config_file", Limit: MaxConfigFile, Regular: true})
	if err != nil {
		return nil, err
	}
	if _, p := yamlnode.Tokens(path, "collector configuration", string(data)); p != nil {
		return nil, fmt.Errorf("%s", p)
	}
	return data, nil
}

// checkConfigFile reads config_file (readConfigFile) and, for the embedded
// collector, validates it as the collector does before it starts (its
// dry run: every component known and its settings valid, every pipeline
// whole), with the variables pipebench gives the collector set to
// stand-ins of their kind. A collector of your own (command) is given the
// file as it is: its components are its own.
func (c *Config) checkConfigFile() error {
	data, err := readConfigFile(c.ConfigFile)
	if err != nil {
		return err
	}
	if c.Command != "" {
		return nil
	}
	if err := dryRun(data, c.standIns()); err != nil {
		return fmt.Errorf("%s: %w", c.ConfigFile, err)
	}
	return nil
}

// standIns are the values of the variables the collector's configuration
// reads, for its validation: those pipebench sets at the start (ports, the
// sink as the exporter takes it), and the scenario's env.
func (c *Config) standIns() map[string]string {
	sink := "127.0.0.1:4317"
	switch c.sinkExporter() {
	case "otlphttp":
		sink = "http://127.0.0.1:4318"
	case "prometheusremotewrite":
		sink = "http://127.0.0.1:9090/api/v1/write"
	}
	vars := map[string]string{"PIPEBENCH_OTLP_GRPC": "127.0.0.1:4317", "PIPEBENCH_OTLP_HTTP": "127.0.0.1:4318",
		"PIPEBENCH_SINK": sink, "PIPEBENCH_METRICS_PORT": "8888"}
	for k, v := range c.Env {
		vars[k] = v
	}
	return vars
}

// dryRun validates a collector configuration with the embedded collector's
// own validation.
func dryRun(data []byte, vars map[string]string) error {
	col, err := otelcol.NewCollector(otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "pipebench-otelcol", Version: CollectorVersion},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs:              []string{configScheme + ":config_file"},
			ProviderFactories: []confmap.ProviderFactory{bytesProvider(data), envStandIns(vars), fileprovider.NewFactory()},
			DefaultScheme:     "env",
		}},
	})
	if err != nil {
		return err
	}
	if err := col.DryRun(context.Background()); err != nil {
		return fmt.Errorf("the embedded collector %s refuses it: %w", CollectorVersion, err)
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

// copyConfigFile writes config_file's text, read again as it was checked,
// into the run's folder for the collector to read: the file pipebench
// checked is the one the collector runs, whatever happens to the original
// meanwhile.
func (c *Collector) copyConfigFile(sfx string) (string, error) {
	data, err := readConfigFile(c.cfg.ConfigFile)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, c.prefix+"otelcol-config"+sfx+".yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
