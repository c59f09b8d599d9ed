package otelcol

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
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
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// CollectorVersion is the OpenTelemetry Collector release embedded: every
// collector module (core and contrib) at this one release, the one at
// which the contrib processors below resolve on the module proxy.
const CollectorVersion = "0.161.0"

// factories is the embedded collector's components, all in this one
// place (the list docs/otlp.md gives and validate checks a config_file
// against): receivers otlp, prometheus, filelog; processors batch,
// memory_limiter, resource, attributes, filter, transform, span,
// tail_sampling; exporters otlp, otlphttp, prometheusremotewrite; the
// file_storage extension.
func factories() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory(), prometheusreceiver.NewFactory(), filelogreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](batchprocessor.NewFactory(), memorylimiterprocessor.NewFactory(), resourceprocessor.NewFactory(),
		attributesprocessor.NewFactory(), filterprocessor.NewFactory(), transformprocessor.NewFactory(), spanprocessor.NewFactory(),
		tailsamplingprocessor.NewFactory()); err != nil {
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

// checkComponents reads a collector configuration file and names every
// component it declares that the embedded collector does not have, with
// the ones it has: the error validate shows, before anything starts.
func checkComponents(path string) []error {
	b, err := readConfigFile(path)
	if err != nil {
		return []error{fmt.Errorf("config_file: %v", err)}
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return []error{fmt.Errorf("config_file: %s is not YAML: %v", path, err)}
	}
	f, err := factories()
	if err != nil {
		return []error{err}
	}
	have := map[string][]string{}
	for t := range f.Receivers {
		have["receivers"] = append(have["receivers"], t.String())
	}
	for t := range f.Processors {
		have["processors"] = append(have["processors"], t.String())
	}
	for t := range f.Exporters {
		have["exporters"] = append(have["exporters"], t.String())
	}
	for t := range f.Extensions {
		have["extensions"] = append(have["extensions"], t.String())
	}
	var errs []error
	for _, kind := range []string{"receivers", "processors", "exporters", "extensions", "connectors"} {
		m, _ := doc[kind].(map[string]any)
		for _, id := range slices.Sorted(maps.Keys(m)) {
			typ, _, _ := strings.Cut(id, "/")
			if !slices.Contains(have[kind], typ) {
				slices.Sort(have[kind])
				list := strings.Join(have[kind], ", ")
				if list == "" {
					list = "none"
				}
				errs = append(errs, fmt.Errorf("config_file: %s.%s: the embedded collector %s has no %s %q (it has: %s); run a collector that has it with command:",
					kind, id, CollectorVersion, strings.TrimSuffix(kind, "s"), typ, list))
			}
		}
	}
	return errs
}
