package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
)

// `suite run` over two builds of the system under test: every case runs
// on each build's own collector binary, labelled with its version, and
// the table has one row per version. The two builds are the test
// collector of tools/otelcol-prom (the only collector binary built here)
// copied under two names: what differs is the program each run started
// and the label it carries, which the Results show.
func TestSuiteRunOverBuilds(t *testing.T) {
	bin := os.Getenv("PIPEBENCH_TEST_OTELCOL_PROM")
	if bin == "" {
		t.Skip("set PIPEBENCH_TEST_OTELCOL_PROM to a collector binary (tools/otelcol-prom/build.sh DIR)")
	}
	dir := t.TempDir()
	for _, name := range []string{"otelcol-a", "otelcol-b"} {
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port, err := childproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "collector.yaml"), []byte(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: "${env:PIPEBENCH_OTLP_GRPC}"}
exporters:
  prometheus: {endpoint: "127.0.0.1:`+strconv.Itoa(port)+`"}
service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus: {host: 127.0.0.1, port: "${env:PIPEBENCH_METRICS_PORT}"}
  pipelines:
    metrics: {receivers: [otlp], exporters: [prometheus]}
`), 0o600)
	os.WriteFile(filepath.Join(dir, "metrics.yaml"), []byte(`name: builds-metrics
sut: {type: otelcol, signal: metrics, config_file: collector.yaml, command: ./otelcol-a}   # a build of its own; a suite build replaces it
target: {driver: otlp}
workload: {generator: otlp-metrics, batch: 50}
observers: [{type: prometheus, preset: otelcol}]
interval: 500ms
drain: 2s
phases:
  - {name: load, duration: 2s, rate: 500/s}
`), 0o600)
	suiteFile := filepath.Join(dir, "builds.yaml")
	os.WriteFile(suiteFile, []byte(`name: builds
builds:
  - {version: col-1.0, command: ./otelcol-a}
  - {version: col-2.0, command: ./otelcol-b}
scenarios:
  - {scenario: metrics.yaml, case: Metrics}
`), 0o600)
	out := filepath.Join(dir, "out")
	stdout, stderr, code := cli(t, "suite", "run", suiteFile, "-q", "--no-store", "--out", out)
	if code != 0 {
		t.Fatalf("suite run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, `versions "col-1.0", "col-2.0"`) {
		t.Errorf("the start line does not name both versions:\n%s", stderr)
	}
	rows := suitetest.Rows(t, stdout, "builds")
	var versions []string
	for _, r := range rows[1:] {
		if r[0] != "" { // the second header line names the KPIs
			versions = append(versions, r[0])
		}
	}
	if strings.Join(versions, ",") != "col-1.0,col-2.0" {
		t.Fatalf("rows %v, want one per version:\n%s", versions, stdout)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.json"))
	if len(files) != 2 {
		t.Fatalf("%d Result files: %v", len(files), files)
	}
	ran := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Manifest struct {
				Version string
				Status  pipebench.Status
			}
			Plan struct {
				SUT struct{ Config struct{ Command string } }
			}
			Total struct{ KPIs []pipebench.KPI }
		}
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		ran[res.Manifest.Version] = filepath.Base(res.Plan.SUT.Config.Command)
		var accepted float64
		for _, k := range res.Total.KPIs {
			if k.Name == "receiver_accepted.total" {
				accepted += k.Value
			}
		}
		if accepted != 1000 {
			t.Errorf("%s: its collector accepted %v points, pipebench sent 1000", res.Manifest.Version, accepted)
		}
	}
	if ran["col-1.0"] != "otelcol-a" || ran["col-2.0"] != "otelcol-b" {
		t.Errorf("each version ran %v, want col-1.0 on otelcol-a and col-2.0 on otelcol-b", ran)
	}

	// --build replaces the suite's builds; a build with --sut-version, a
	// build of a system that runs no program of the user's, and a
	// command that is not there are refused before anything runs.
	stdout, stderr, code = cli(t, "suite", "validate", suiteFile, "--build", "x-1="+filepath.Join(dir, "otelcol-a"))
	if code != 0 || !strings.Contains(stdout, "x-1") || strings.Contains(stdout, "col-1.0") {
		t.Errorf("--build: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sut-version", "v9"}, "--sut-version and the builds both label the versions"},
		{[]string{"--build", "nothing"}, `--build "nothing" is not VERSION=COMMAND`},
		{[]string{"--build", "v=" + filepath.Join(dir, "no-such-collector")}, "is not an executable file"},
	} {
		_, stderr, code := cli(t, append([]string{"suite", "validate", suiteFile}, c.args...)...)
		if code != pipebench.ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, code, c.want, stderr)
		}
	}
	_, stderr, code = cli(t, "suite", "validate", "builtin:kafka", "--build", "v="+filepath.Join(dir, "otelcol-a"))
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "runs no program of yours") {
		t.Errorf("builds of the kafka suite: exit %d\n%s", code, stderr)
	}
}
