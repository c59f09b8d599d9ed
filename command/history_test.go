package command

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/examples"
	"github.com/pipebench/pipebench/internal/testkit/children"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	"github.com/pipebench/pipebench/store"
	"github.com/pipebench/pipebench/store/storetest"
)

// TestMain keeps the tests' runs out of the user's history.
func TestMain(m *testing.M) {
	children.MaybeRun() // the test binary is also the collector's and the document store's child
	dir, err := os.MkdirTemp("", "pipebench-cli-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("PIPEBENCH_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func seed(t *testing.T, ref string) {
	ctx := context.Background()
	s, err := store.Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	i := 0
	for _, v := range []string{"0.99.0", "0.100.0"} {
		for rep := 0; rep < 2; rep++ {
			for _, c := range []string{"single pipeline", "backpressure"} {
				acc := 20000.0 + float64(rep*50)
				if v == "0.100.0" && c == "backpressure" {
					acc = 12000 // a real regression in the receiver rate
				}
				r := resulttest.Pipeline(v, c, acc)
				r.Phases = r.Phases[:1]
				r.Manifest.RunID = "r" + strconv.Itoa(i)
				r.Manifest.Started = time.Date(2026, 11, 1, 0, i, 0, 0, time.UTC)
				i++
				if _, err := s.Save(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// The history commands on both backends: a SQLite file, and a PostgreSQL
// server when one is configured.
func TestHistoryShowCompareGate(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { historyCommands(t, filepath.Join(t.TempDir(), "h.db")) })
	t.Run("postgres", func(t *testing.T) {
		historyCommands(t, storetest.PostgresSchema(t, storetest.PostgresURL(t)))
	})
}

func historyCommands(t *testing.T, db string) {
	seed(t, db)
	out, errOut, code := cli(t, "history", "--store", db)
	if code != 0 || strings.Count(out, "otel-traces") != 8 {
		t.Fatalf("history: %d %s %s", code, out, errOut)
	}
	out, _, code = cli(t, "show", "r3", "--store", db)
	if code != 0 || !strings.Contains(out, "receiver accepted/s") {
		t.Fatalf("show: %d %s", code, out)
	}
	out, _, code = cli(t, "compare", "--store", db)
	if code != 0 || !strings.Contains(out, "| 0.99.0 |") || !strings.Contains(out, "| 0.100.0 |") || !strings.Contains(out, "single pipeline") {
		t.Fatalf("compare: %d\n%s", code, out)
	}
	if !strings.Contains(out, "▼ worse") || !strings.Contains(out, "receiver_accepted_rate") {
		t.Errorf("compare did not flag the regression:\n%s", out)
	}
	_, errOut, code = cli(t, "gate", "--baseline", "0.99.0", "--store", db)
	if code != pipebench.ExitThresholds || !strings.Contains(errOut, "regressed") {
		t.Errorf("gate: exit %d %s", code, errOut)
	}
	_, _, code = cli(t, "gate", "--store", db)
	if code != pipebench.ExitUsage {
		t.Errorf("gate without --baseline: exit %d", code)
	}
	_, errOut, code = cli(t, "show", "nope", "--store", db)
	if code != pipebench.ExitUsage || !strings.Contains(errOut, "pipebench history") {
		t.Errorf("show missing: %d %s", code, errOut)
	}
	out, _, code = cli(t, "report", "r1", "--format", "md", "--store", db)
	if code != 0 || !strings.Contains(out, "Receiver Accepted Spans/sec") {
		t.Errorf("report RUN: %d %s", code, out)
	}
}

// Every built-in scenario (examples/) decodes and compiles against the
// real registry.
func TestBuiltinsAreValid(t *testing.T) {
	names := examples.Names()
	if len(names) < 7 {
		t.Fatalf("only %d builtins", len(names))
	}
	for _, n := range names {
		out, errOut, code := cli(t, "plan", "builtin:"+n)
		if code != 0 || !strings.Contains(out, "total:") {
			t.Errorf("builtin:%s: exit %d\n%s%s", n, code, out, errOut)
		}
	}
	out, _, _ := cli(t, "run", "--list")
	if !strings.Contains(out, "builtin:quickstart") {
		t.Errorf("--list:\n%s", out)
	}
}
