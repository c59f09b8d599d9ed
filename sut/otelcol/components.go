package otelcol

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
)

// CollectorVersion is the OpenTelemetry Collector release embedded: every
// collector module (core and contrib) at this one release, the one at
// which the contrib processors resolve on the module proxy.
const CollectorVersion = "0.161.0"

// Components are the embedded collector's components by kind, the list
// docs/otlp.md gives and validate checks a config_file against. The
// collector itself (package collector, in pipebench-sut) is built from
// exactly these: its test holds its factories to this list.
var Components = map[string][]string{
	"receivers":  {"file_log", "filelog", "otlp", "prometheus"},
	"processors": {"attributes", "batch", "filter", "memory_limiter", "resource", "span", "tail_sampling", "transform"},
	"exporters":  {"otlp", "otlp_grpc", "otlp_http", "otlphttp", "prometheus_remote_write", "prometheusremotewrite"},
	"extensions": {"file_storage"},
	"connectors": {},
}

// CoreComponents are the components of the core collector (package
// collector), which the pipebench command carries itself: a
// configuration that uses no other runs on it, any other on the full
// collector in pipebench-sut.
var CoreComponents = map[string][]string{
	"receivers":  {"otlp"},
	"processors": {"batch", "memory_limiter", "resource"},
	"exporters":  {"otlp", "otlp_grpc", "otlp_http", "otlphttp"},
}

// CoreOnly reports whether the collector configuration data declares only
// CoreComponents (false when it is not YAML: the full collector says why).
func CoreOnly(data []byte) bool {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return false
	}
	for _, kind := range []string{"receivers", "processors", "exporters", "extensions", "connectors"} {
		m, _ := doc[kind].(map[string]any)
		for id := range m {
			typ, _, _ := strings.Cut(id, "/")
			if !slices.Contains(CoreComponents[kind], typ) {
				return false
			}
		}
	}
	return true
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
	have := map[string][]string{}
	for k, v := range Components {
		have[k] = slices.Clone(v)
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
