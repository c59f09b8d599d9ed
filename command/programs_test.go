package command_test

import (
	"os/exec"
	"strings"
	"testing"
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
// list -deps): no program links a test fixture, and none but pipebench-sut
// links testing; the lean load
// generator links no embedded system under test (the jar list the fetch
// command downloads is not one) and no Kubernetes launcher, and stays
// under 800 packages from outside the module; the pipebench command links
// none of the heavy systems that pipebench-sut carries, nor the typed
// Kubernetes clients that pipebench-k8s carries.
func TestProgramsLinkOnlyTheirWing(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the dependencies of every program")
	}
	heavy := []string{module + "/sut/heavy", module + "/sut/otelcol/collector", module + "/sut/healthevents/service",
		"go.opentelemetry.io/collector/otelcol", "github.com/FerretDB/FerretDB"}
	for _, prog := range []string{"pipebench", "pipebench-load", "pipebench-k8s", "pipebench-sut"} {
		deps := goList(t, "-deps", "./cmd/"+prog)
		outside := 0
		for _, d := range deps {
			// pipebench-sut links testing through the collector's own
			// modules (its receivertest, exportertest and processortest
			// packages, Prometheus's tsdb), not through pipebench's.
			if (d == "testing" && prog != "pipebench-sut") || strings.HasPrefix(d, module+"/internal/testkit") {
				t.Errorf("%s links %s", prog, d)
			}
			if !strings.HasPrefix(d, module) && strings.Contains(strings.Split(d, "/")[0], ".") {
				outside++
			}
			switch prog {
			case "pipebench-load":
				if (strings.HasPrefix(d, module+"/sut/") && d != module+"/sut/kafka/jars") ||
					strings.HasPrefix(d, module+"/k8s") || strings.HasPrefix(d, module+"/command/k8scmd") {
					t.Errorf("the lean load generator links %s", d)
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
