// Package suitetest runs built-in suites and scenarios in tests: a suite
// the way `pipebench suite run` does (builtins.SuitePlans, then suite.Run
// through execute), its table read back; a scenario scaled down
// (RunBuiltin).
package suitetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/scenario"
	"github.com/pipebench/pipebench/suite"
	"github.com/pipebench/pipebench/sut/all"
)

// Registry is the registry of every built-in plug-in, as the commands
// wire them; an error fails the test.
func Registry(tb testing.TB) *pipebench.Registry {
	tb.Helper()
	reg, err := all.Registry()
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

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
	reg := Registry(t)
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

// RunBuiltin runs builtin:name scaled to dur, observed every interval,
// with a drain of at most drain, within 3*dur plus a minute; edit, when
// set, changes the plan first. A run the machine was too loaded to judge
// skips the test (SkipIfOverloaded).
func RunBuiltin(t *testing.T, name string, dur, interval, drain time.Duration, edit ...func(*pipebench.Plan)) *pipebench.Result {
	t.Helper()
	plan, reg := BuiltinPlan(t, name, dur)
	plan.Interval, plan.Drain = pipebench.Duration(interval), pipebench.Duration(drain)
	for _, e := range edit {
		e(&plan)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*dur+time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	SkipIfOverloaded(t, res)
	return res
}

// BuiltinPlan is the plan of builtin:name scaled to dur, with the
// registry of every built-in plug-in; an error fails the test.
func BuiltinPlan(t *testing.T, name string, dur time.Duration) (pipebench.Plan, *pipebench.Registry) {
	t.Helper()
	reg := Registry(t)
	sc, err := builtins.Scenario("builtin:"+name, reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	if plan, err = plan.Scale(dur); err != nil {
		t.Fatal(err)
	}
	return plan, reg
}

// SkipIfOverloaded skips a test whose run pipebench itself found invalid
// because the generator fell behind its schedule or its reading: the
// machine was too loaded for the numbers to say anything of the system,
// and the test cannot judge them.
func SkipIfOverloaded(t *testing.T, res *pipebench.Result) {
	t.Helper()
	for _, r := range res.Manifest.Reasons {
		if strings.Contains(r, "fell behind its schedule") || strings.Contains(r, "for the generator to read them") {
			t.Skipf("the machine was too loaded to judge this run: %s", r)
		}
	}
}
