package command_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goList runs go list in the module's root and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return strings.Fields(string(out))
}

const module = "github.com/pipebench/pipebench"

// The fence between the two wings, read from what each program links (go
// list -deps): no program links a test fixture, and the lean load
// generator not even testing; the lean load generator links no embedded
// system under test (the jar list the fetch command downloads is not one)
// and no Kubernetes launcher (package k8s, command/k8scmd, client-go's
// clientsets and typed clients): of Kubernetes only the pods' side
// (k8s/pod, command/k8spod), which the shards and the in-cluster sink run,
// with client-go's REST client and the core group's types; and it stays
// under 800 packages from outside the module. The pipebench command links none of the heavy
// systems that pipebench-sut carries (but the core of the collector,
// which the quickstart runs on), nor the typed Kubernetes clients that
// pipebench-k8s carries.
func TestProgramsLinkOnlyTheirWing(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the dependencies of every program")
	}
	// The core collector (sut/otelcol/collector) is pipebench's own: the
	// quickstart runs on it; the rest of the collector's components are
	// pipebench-sut's.
	heavy := []string{module + "/sut/heavy", module + "/sut/otelcol/collector/full", module + "/sut/healthevents/service",
		"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver",
		"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver",
		"github.com/open-telemetry/opentelemetry-collector-contrib/processor/transformprocessor",
		"github.com/FerretDB/FerretDB"}
	for _, prog := range []string{"pipebench", "pipebench-load", "pipebench-k8s", "pipebench-sut"} {
		deps := goList(t, "-deps", "./cmd/"+prog)
		outside := 0
		for _, d := range deps {
			// The programs that carry the collector link testing through
			// its own modules (its receivertest, exportertest and
			// processortest packages, Prometheus's tsdb), never through
			// pipebench's (TestNoProductionPackageImportsTesting).
			if (d == "testing" && prog == "pipebench-load") || strings.HasPrefix(d, module+"/internal/testkit") {
				t.Errorf("%s links %s", prog, d)
			}
			if !strings.HasPrefix(d, module) && strings.Contains(strings.Split(d, "/")[0], ".") {
				outside++
			}
			switch prog {
			case "pipebench-load":
				if (strings.HasPrefix(d, module+"/sut/") && d != module+"/sut/kafka/jars") ||
					d == module+"/k8s" || (strings.HasPrefix(d, module+"/k8s/") && d != module+"/k8s/pod") ||
					strings.HasPrefix(d, module+"/command/k8scmd") {
					t.Errorf("the lean load generator links %s", d)
				}
				// The typed clients (and their scheme, every API group's
				// types): the pods read and write ConfigMaps through a
				// REST client of their own (k8s/pod).
				if strings.HasPrefix(d, "k8s.io/client-go/kubernetes") || strings.HasPrefix(d, "k8s.io/client-go/informers") {
					t.Errorf("the lean load generator links %s: the pods' client is a REST client of ConfigMaps alone", d)
				}
			case "pipebench":
				for _, h := range heavy {
					if d == h || strings.HasPrefix(d, h+"/") {
						t.Errorf("pipebench links %s, which pipebench-sut carries", d)
					}
				}
				if strings.HasPrefix(d, "k8s.io/client-go/kubernetes") || strings.HasPrefix(d, module+"/k8s") {
					t.Errorf("pipebench links %s, which pipebench-k8s carries", d)
				}
			}
		}
		t.Logf("%s: %d packages from outside the module", prog, outside)
		if prog == "pipebench-load" && outside >= 800 {
			t.Errorf("the lean load generator links %d packages from outside the module, want fewer than 800", outside)
		}
	}
}

// No production package imports testing: only test fixtures
// (internal/testkit) and packages named for tests (…test) may.
func TestNoProductionPackageImportsTesting(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package's imports")
	}
	for _, line := range goList(t, "-f", "{{.ImportPath}}:{{range .Imports}}{{if eq . \"testing\"}}testing{{end}}{{end}}", "./...") {
		path, imp, _ := strings.Cut(line, ":")
		if imp != "testing" {
			continue
		}
		last := path[strings.LastIndex(path, "/")+1:]
		if strings.HasPrefix(path, module+"/internal/testkit/") || strings.HasSuffix(last, "test") {
			continue
		}
		t.Errorf("%s imports testing: move what it does for tests to internal/testkit, or name the package …test", path)
	}
}

// The quickstart runs on the pipebench program alone: its collector is the
// core one pipebench carries, so a machine with no pipebench-sut (here
// PIPEBENCH_BIN_DIR names an empty folder, where pipebench would look for
// it first and fail) runs it to the end, with the collector's own
// numbers.
func TestQuickstartNeedsNoOtherProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pipebench and runs the quickstart")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pipebench")
	build := exec.Command("go", "build", "-o", bin, "./cmd/pipebench")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/pipebench: %v\n%s", err, out)
	}
	empty := filepath.Join(dir, "bin")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "run", "--duration", "6s", "--no-store", "--out", filepath.Join(dir, "result.json"))
	run.Dir = dir
	run.Env = append(os.Environ(), "PIPEBENCH_BIN_DIR="+empty, "HOME="+dir, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	out, err := run.CombinedOutput()
	code := run.ProcessState.ExitCode()
	// 99: a threshold of the quickstart may fail in a run this short.
	if (err != nil && code != 99) || !strings.Contains(string(out), `{instance="collector-0"}`) || strings.Contains(string(out), "pipebench-sut") {
		t.Fatalf("pipebench run (exit %d, %v), without pipebench-sut:\n%s", code, err, out)
	}
	res, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil || !strings.Contains(string(res), `"exporter_sent_rate`) {
		t.Errorf("the Result has no exporter_sent_rate of the collector (%v)", err)
	}
}
