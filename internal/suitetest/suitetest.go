// Package suitetest runs suites in tests the way `pipebench suite run`
// does (builtins.SuitePlans, then suite.Run through execute), and reads
// back the table it prints.
package suitetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/scenario"
	"github.com/pipebench/pipebench/suite"
)

// NoAPIServer is an environment in which the nvsentinel scenarios find no
// API server to start or use.
var NoAPIServer = map[string]string{"PIPEBENCH_TEST_KUBE_BIN": "", "PIPEBENCH_KUBECONFIG": ""}

// Outcome is what a suite's run gave: the table it printed (markdown),
// its log, its cases' Results and its exit code.
type Outcome struct {
	Table, Log string
	Results    []*pipebench.Result
	Code       int
}

// Run plans the suite ref (a file or builtin:NAME) with o and runs it
// with no history (the table holds this run's cases), ${VAR} looked up in
// env first, then in the process's environment.
func Run(t *testing.T, ref string, env map[string]string, o scenario.Overrides) Outcome {
	t.Helper()
	reg, err := builtins.Registry()
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
	var table, log bytes.Buffer
	s, plans, err := builtins.SuitePlans(ref, scenario.Params{Registry: reg, Env: lookup}, o, func(note string) { fmt.Fprintln(&log, note) })
	if err != nil {
		t.Fatal(err)
	}
	p := execute.Params{Registry: reg, ToolVersion: "test", Log: &log, Keep: execute.Keep{NoStore: true, Quiet: true}}
	res, code := s.Run(context.Background(), plans, suite.RunParams{Exec: p, Log: &log, Table: &table})
	return Outcome{Table: table.String(), Log: log.String(), Results: res, Code: code}
}

// Rows returns the rows of the markdown table under "## NAME" in out,
// each as its cells, the header first.
func Rows(t *testing.T, out, name string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "## "+name+"\n")
	if !ok {
		t.Fatalf("no table %s in:\n%s", name, out)
	}
	var rows [][]string
	for _, l := range strings.Split(rest, "\n") {
		l = strings.TrimSpace(l)
		if l == "" && len(rows) > 0 {
			break
		}
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "| ---") || strings.HasPrefix(l, "| :--") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

// CheckHeader fails the test unless the first of rows is want.
func CheckHeader(t *testing.T, rows [][]string, want ...string) {
	t.Helper()
	if len(rows) == 0 || strings.Join(rows[0], "|") != strings.Join(want, "|") {
		t.Fatalf("header %v, want %v", rows, want)
	}
}

// Number reads cell i of row as a number (its first word, thousands
// separators dropped), failing the test when it is none.
func Number(t *testing.T, row []string, i int) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.ReplaceAll(strings.Fields(row[i] + " x")[0], ",", ""), 64)
	if err != nil {
		t.Errorf("row %q: column %d is %q, not a number", row[0], i, row[i])
	}
	return v
}
