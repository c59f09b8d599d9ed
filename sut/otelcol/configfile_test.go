package otelcol_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/internal/proc/childproc"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/scenario"
	"github.com/pipebench/pipebench/sut/all"
)

// selfMetrics is the collector's own metrics, served where pipebench's
// observer reads them, and the start of the service section.
const selfMetrics = `service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus: {host: 127.0.0.1, port: "${env:PIPEBENCH_METRICS_PORT}"}
`

// userCollector is a collector configuration as its users write one: the
// ports through ${env:VAR} and ${VAR} (the collector's own distributions
// read both), a memory_limiter first in the pipeline, a resource
// attribute set, then batch.
const userCollector = `receivers:
  otlp:
    protocols:
      grpc: {endpoint: "${env:PIPEBENCH_OTLP_GRPC}"}
processors:
  memory_limiter: {check_interval: 1s, limit_mib: 200, spike_limit_mib: 50}
  resource:
    attributes: [{key: deployment.environment, value: loadtest, action: upsert}]
  batch: {}
exporters:
  otlp:
    endpoint: "${PIPEBENCH_SINK}"
    tls: {insecure: true}
` + selfMetrics + `  pipelines:
    traces: {receivers: [otlp], processors: [memory_limiter, resource, batch], exporters: [otlp]}
`

// A scenario in a folder of its own runs the user's collector YAML beside
// it (config_file relative to the scenario file, from another working
// directory): every span delivered, counted by the collector too.
func TestConfigFileBesideTheScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	text := `name: own-collector
sut: {type: otelcol, config_file: collector.yaml}
target: {driver: otlp}
workload: {generator: otlp-traces, batch: 50}
sink: {type: otlp}
observers: [{type: prometheus, preset: otelcol}]
interval: 500ms
drain: 10s
phases:
  - {name: load, duration: 3s, rate: 1000/s}
`
	res := runFile(t, writeOwn(t, userCollector, text)) // the working directory is the package's, not the scenario's
	sent, _ := res.Total.Get("sent")
	delivered, _ := res.Total.Get("delivered")
	accepted := acceptedTotal(res)
	if sent != 3000 || delivered != sent {
		t.Errorf("sent %v, delivered %v", sent, delivered)
	}
	if accepted != sent {
		t.Errorf("the collector's own receiver counted %v accepted spans, pipebench sent %v", accepted, sent)
	}
}

// command runs the user's own collector binary (here the test collector of
// tools/otelcol-prom, built by .ci/run) on the user's configuration, with
// pipebench's ports in its environment: its own receiver counts every span
// pipebench sent, read through the same observer as the embedded one
// (metrics: that collector's only exporter is Prometheus's).
func TestCommandRunsTheUsersCollector(t *testing.T) {
	bin := os.Getenv("PIPEBENCH_TEST_OTELCOL_PROM")
	if bin == "" {
		t.Skip("set PIPEBENCH_TEST_OTELCOL_PROM to a collector binary (tools/otelcol-prom/build.sh DIR)")
	}
	port, err := childproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	col := `receivers:
  otlp:
    protocols:
      grpc: {endpoint: "${env:PIPEBENCH_OTLP_GRPC}"}
exporters:
  prometheus: {endpoint: "127.0.0.1:` + strconv.Itoa(port) + `"}
` + selfMetrics + `  pipelines:
    metrics: {receivers: [otlp], exporters: [prometheus]}
`
	text := `name: own-binary
sut: {type: otelcol, signal: metrics, command: ` + bin + `, config_file: collector.yaml}
target: {driver: otlp}
workload: {generator: otlp-metrics, batch: 50}
observers: [{type: prometheus, preset: otelcol}]
interval: 500ms
drain: 3s
phases:
  - {name: load, duration: 2s, rate: 1000/s}
`
	scen := writeOwn(t, col, text)
	res := runFile(t, scen)
	sent, _ := res.Total.Get("sent")
	accepted := acceptedTotal(res)
	if sent != 2000 || accepted != sent {
		t.Errorf("pipebench sent %v points, the user's collector accepted %v", sent, accepted)
	}
	// Without config_file, or naming no program, it says so before running.
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"command: " + bin, "command: ./no-such-collector, config_file: collector.yaml"} {
		if err := os.WriteFile(scen, []byte(strings.Replace(text, "command: "+bin+", config_file: collector.yaml", bad, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := builtins.Scenario(scen, reg); err == nil || !strings.Contains(err.Error(), "sut.command:") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// writeOwn writes a user's collector configuration and a scenario naming
// it (config_file: collector.yaml) into a folder of their own, and returns
// the scenario's path.
func writeOwn(t *testing.T, collector, scenario string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "collector.yaml"), []byte(collector), 0o600); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(scen, []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	return scen
}

// runFile runs the scenario file scen with every built-in plug-in and
// returns its Result, which must be COMPLETED.
func runFile(t *testing.T, scen string) *pipebench.Result {
	t.Helper()
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := builtins.Scenario(scen, reg)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, sc, reg, 0)
	if res.Manifest.Status != pipebench.StatusCompleted {
		t.Fatalf("status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	return res
}

// run compiles sc, scales its load to load unless that is 0, and runs it
// with reg within two minutes; the runner's error fails the test.
func run(t *testing.T, sc *scenario.Scenario, reg *pipebench.Registry, load time.Duration) *pipebench.Result {
	t.Helper()
	plan, err := scenario.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	if load != 0 {
		if plan, err = plan.Scale(load); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// acceptedTotal is what the collector's own receiver counted, summed over
// its instances.
func acceptedTotal(res *pipebench.Result) float64 {
	var n float64
	for _, k := range res.Total.All("receiver_accepted.total") {
		n += k.Value
	}
	return n
}

// config_file is checked before anything runs by the embedded collector's
// own validation (its dry run), with pipebench's variables set to
// stand-ins: a component it does not have, a setting its component
// refuses, a pipeline naming a receiver that is not configured are each
// refused by validate with the collector's words, naming the file; a
// file the collector takes passes. What the collector runs is the file
// as it was checked, copied into the run's folder.
func TestConfigFileValidatedByTheCollector(t *testing.T) {
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	text := `name: own-collector
sut: {type: otelcol, config_file: collector.yaml}
target: {driver: otlp}
workload: {generator: otlp-traces}
phases:
  - {name: load, duration: 1s, rate: 10/s}
`
	// A component the embedded collector lacks is named with what it has
	// (and how to run a collector that has it); what its components
	// refuse, in the collector's own words.
	for name, tc := range map[string]struct{ collector, want, says string }{
		"unknown exporter": {strings.Replace(userCollector, "exporters:\n  otlp:", "exporters:\n  kafka:", 1), "kafka", `has no exporter "kafka"`},
		"bad setting":      {strings.Replace(userCollector, "batch: {}", "batch: {send_batch_size: -5}", 1), "batch", "refuses it"},
		"missing receiver": {strings.Replace(userCollector, "receivers: [otlp]", "receivers: [otlp, jaeger]", 1), "jaeger", "refuses it"},
	} {
		scen := writeOwn(t, tc.collector, text)
		_, err := builtins.Scenario(scen, reg)
		if err == nil || !strings.Contains(err.Error(), "sut.config_file") || !strings.Contains(err.Error(), tc.says) ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := builtins.Scenario(writeOwn(t, userCollector, text), reg); err != nil {
		t.Errorf("a configuration the collector takes: %v", err)
	}
}
