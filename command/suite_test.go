package command

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	"github.com/pipebench/pipebench/store"
)

// writeSuite writes two small scenarios (HTTP driver to HTTP sink, no
// collector) and a suite naming them; the second lasts long, for a test
// that stops the suite during it.
func writeSuite(t *testing.T, secondDuration string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	scen := func(name, dur string) string {
		return "name: " + name + `
target: {driver: http, connections: 2}
workload: {generator: event, size: 64}
sink: {type: http}
drain: 2s
phases:
  - {name: load, duration: ` + dur + `, rate: 100/s}
`
	}
	os.WriteFile(filepath.Join(dir, "first.yaml"), []byte(scen("suite-first", "1s")), 0o644)
	os.WriteFile(filepath.Join(dir, "second.yaml"), []byte(scen("suite-second", secondDuration)), 0o644)
	file = filepath.Join(dir, "small.yaml")
	os.WriteFile(file, []byte(`name: small
version: 0.1.0
scenarios:
  - scenario: first.yaml
    case: First Case
  - {scenario: second.yaml, case: Second Case}
`), 0o644)
	return dir, file
}

// maskCells replaces the numbers of a markdown table's data cells (the
// first column, the version, is kept) with #: the golden file pins the
// table's shape, not the machine's speed.
func maskCells(md string) string {
	num := regexp.MustCompile(`-?[0-9][0-9,.]*`)
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		cells := strings.Split(l, " | ")
		if len(cells) < 3 || !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "|  |") || strings.Contains(l, "---") || strings.Contains(l, "Version/Test") {
			continue
		}
		for j := 1; j < len(cells); j++ {
			cells[j] = num.ReplaceAllString(cells[j], "#")
		}
		lines[i] = strings.Join(cells, " | ")
	}
	return strings.Join(lines, "\n")
}

// A suite run twice under two version labels prints the reference's
// table: one row per version, a column group per case, in the suite's
// order; a plain run of one of its scenarios stays out of it. compare
// and gate --suite work on the suite's runs.
func TestSuiteRunTwoVersions(t *testing.T) {
	dir, file := writeSuite(t, "1s")
	db := filepath.Join(dir, "h.db")
	// A plain run of the same scenario, another version: not the suite's.
	if _, stderr, code := cli(t, "run", filepath.Join(dir, "first.yaml"), "-q", "--sut-version", "9.9.9", "--store", db); code != 0 {
		t.Fatalf("plain run: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := cli(t, "suite", "run", file, "-q", "--sut-version", "1.0.0", "--store", db); code != 0 {
		t.Fatalf("suite run 1.0.0: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := cli(t, "suite", "run", file, "-q", "--sut-version", "1.1.0", "--store", db)
	if code != 0 {
		t.Fatalf("suite run 1.1.0: exit %d\n%s", code, stderr)
	}
	if strings.Contains(stdout, "9.9.9") {
		t.Errorf("a run outside the suite is in its table:\n%s", stdout)
	}
	resulttest.Golden(t, "suite-two-versions.md", []byte(maskCells(stdout)))

	out, errOut, code := cli(t, "compare", "--suite", "small", "--store", db)
	if code != 0 || !strings.Contains(out, "1.1.0 against 1.0.0") || strings.Contains(out, "9.9.9") ||
		!strings.Contains(out, "First Case") || !strings.Contains(out, "Second Case") {
		t.Errorf("compare --suite: exit %d\n%s\n%s", code, out, errOut)
	}
	// One run of each version: too few to decide, and the gate does
	// not pass (a p99 many times worse may be among them).
	out, errOut, code = cli(t, "gate", "--suite", file, "--baseline", "1.0.0", "--store", db)
	if code != pipebench.ExitUndecided || !strings.Contains(out, "First Case") || !strings.Contains(errOut, "not every KPI was decided") {
		t.Errorf("gate --suite: exit %d, want %d\n%s\n%s", code, pipebench.ExitUndecided, out, errOut)
	}
	out, errOut, code = cli(t, "gate", "--suite", file, "--baseline", "1.0.0", "--store", db, "--allow-undecided")
	if code != 0 || !strings.Contains(out, "gate: passed") {
		t.Errorf("gate --suite --allow-undecided: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = cli(t, "compare", "--suite", "nope", "--store", db)
	if code != pipebench.ExitUsage || !strings.Contains(errOut, `no runs of suite "nope"`) {
		t.Errorf("compare --suite nope: exit %d\n%s", code, errOut)
	}
}

// A suite stopped (the first Ctrl-C) during its second case keeps the
// first: it is in the history and in the table; the cut case is saved as
// aborted, as pipebench run saves it, and left out of the table.
func TestSuiteStoppedHalfwayKeepsFinishedCases(t *testing.T) {
	dir, file := writeSuite(t, "60s")
	db := filepath.Join(dir, "h.db")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- executeWith(ctx, nil, nil, []string{"suite", "run", file, "-q", "--store", db}, &stdout, &stderr)
	}()
	stderr.waitFor(t, "case 2/2: Second Case (")
	stop()
	code := <-done
	if code == 0 {
		t.Errorf("a stopped suite exited 0")
	}
	if !strings.Contains(stderr.String(), "1 of 2 case(s) finished and kept") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "| 0.1.0 |") || !strings.Contains(out, "First Case") || strings.Contains(out, "Second Case") {
		t.Errorf("table:\n%s", out)
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.Runs(context.Background(), pipebench.RunFilter{Scenario: "suite-first"})
	if err != nil || len(runs) != 1 || runs[0].Status != pipebench.StatusCompleted && runs[0].Status != pipebench.StatusPassed {
		t.Fatalf("first case in the history: %v %+v", err, runs)
	}
}

// Bad suite files exit 2 with the file, line and column of each problem.
func TestSuiteBadFilesAreLocated(t *testing.T) {
	dir, _ := writeSuite(t, "1s")
	cases := []struct{ name, text, want string }{
		{"unknown-key.yaml", "name: x\nscenarios:\n  - scenario: first.yaml\n    cas: A\n", `unknown-key.yaml:4:5: scenarios[0].cas: unknown key "cas"`},
		{"bad-duration.yaml", "name: x\nscenarios:\n  - {scenario: first.yaml, duration: soon}\n", "bad-duration.yaml:3:38: scenarios[0].duration"},
		{"no-scenarios.yaml", "name: x\n", "no-scenarios.yaml:1:1: scenarios: missing"},
		{"not-a-list.yaml", "name: x\nscenarios: first.yaml\n", "not-a-list.yaml:2:12: scenarios: expected a list"},
		{"missing-file.yaml", "name: x\nscenarios:\n  - scenario: first.yaml\n  - scenario: nowhere.yaml\n", "missing-file.yaml:4: scenarios[1]"},
		{"same-case.yaml", "name: x\nscenarios:\n  - {scenario: first.yaml, case: A}\n  - {scenario: second.yaml, case: A}\n", `same-case.yaml:4:35: scenarios[1].case: case "A" is already used`},
		{"twice.yaml", "name: x\nname: y\nscenarios: [first.yaml]\n", `twice.yaml:2:1: mapping key "name" already defined`},
		{"syntax.yaml", "name: x\nscenarios: [first.yaml\n", "syntax.yaml:"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		os.WriteFile(path, []byte(c.text), 0o644)
		for _, args := range [][]string{{"suite", "run", path, "--no-store"}, {"suite", "validate", path}} {
			cmd := args[1]
			_, stderr, code := cli(t, args...)
			if code != pipebench.ExitUsage {
				t.Errorf("%s %s: exit %d, want %d\n%s", cmd, c.name, code, pipebench.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("%s %s: stderr lacks %q:\n%s", cmd, c.name, c.want, stderr)
			}
		}
	}
	_, stderr, code := cli(t, "suite", "run", "builtin:nope")
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "pipebench suite list") {
		t.Errorf("builtin:nope: exit %d\n%s", code, stderr)
	}
}

// The built-in suites name scenarios that exist and compile.
func TestBuiltinSuitesValidate(t *testing.T) {
	for _, name := range []string{"kyma-traces", "kyma-metrics", "kyma-metric-agent", "kyma-logs", "kyma-eventing", "chef"} {
		stdout, stderr, code := cli(t, "suite", "validate", "builtin:"+name)
		if code != 0 || !strings.Contains(stdout, "ok: suite "+name) {
			t.Errorf("%s: exit %d\n%s\n%s", name, code, stdout, stderr)
		}
	}
	stdout, _, _ := cli(t, "suite", "list")
	if strings.Count(stdout, "builtin:kyma-") != 5 || !strings.Contains(stdout, "builtin:chef ") {
		t.Errorf("suite list:\n%s", stdout)
	}
	stdout, _, _ = cli(t, "run", "--list")
	if strings.Contains(stdout, "suites") {
		t.Errorf("run --list shows suites:\n%s", stdout)
	}
}

// A suite asking for a row per run prints its columns, run values beside
// KPIs; --out keeps each case's Result in its own file; --metrics-addr
// serves across the cases.
func TestSuiteRowsPerRunOutAndMetrics(t *testing.T) {
	dir, _ := writeSuite(t, "1s")
	file := filepath.Join(dir, "rows.yaml")
	os.WriteFile(file, []byte(`name: rows
version: 2.0.0
scenarios:
  - {scenario: first.yaml, case: First Case}
  - {scenario: second.yaml, case: Second Case}
table:
  rows: run
  columns:
    - {title: Test, value: "@case"}
    - {title: Generator rps, value: target_rate}
    - {title: Sent, value: sent, phase: load}
    - {title: Status, value: "@status"}
    - {title: Version, value: "@version"}
`), 0o644)
	out := filepath.Join(dir, "results")
	stdout, stderr, code := cli(t, "suite", "run", file, "-q", "--no-store", "--out", out, "--metrics-addr", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "metrics: http://127.0.0.1:") {
		t.Errorf("no metrics address:\n%s", stderr)
	}
	for _, want := range []string{
		"| Test | Generator rps | Sent | Status | Version |",
		"| First Case | 100 | 100 | completed | 2.0.0 |",
		"| Second Case | 100 | 100 | completed | 2.0.0 |",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	for _, name := range []string{"01-first-case.json", "02-second-case.json"} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !strings.Contains(string(data), `"status": "completed"`) {
			t.Errorf("%s: %v\n%.200s", name, err, data)
		}
	}
	// A run value that does not exist is refused with its place.
	bad := filepath.Join(dir, "bad-rows.yaml")
	os.WriteFile(bad, []byte("name: rows\nscenarios: [first.yaml]\ntable:\n  rows: run\n  columns:\n    - {title: A, value: \"@case\"}\n    - {title: B, value: \"@crash\"}\n"), 0o644)
	_, stderr, code = cli(t, "suite", "validate", bad)
	if code != pipebench.ExitUsage || !strings.Contains(stderr, `bad-rows.yaml:7:25: table.columns[1].value: unknown run value "@crash"`) || !strings.Contains(stderr, "@crashed") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	// A KPI no run ever has (of a family pipebench computes) is refused,
	// naming the column and what is computed.
	bad = filepath.Join(dir, "bad-kpi.yaml")
	os.WriteFile(bad, []byte("name: rows\nscenarios: [first.yaml]\ntable:\n  rows: run\n  columns:\n    - {title: A, value: \"@case\"}\n    - {title: E2E p42, value: e2e_latency.p42}\n"), 0o644)
	_, stderr, code = cli(t, "suite", "validate", bad)
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "bad-kpi.yaml:7:31: table.columns[1].value (E2E p42): pipebench never computes e2e_latency.p42") || !strings.Contains(stderr, "e2e_latency.p99") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	_, stderr, code = cli(t, "suite", "run", file, "--no-store", "--checkpoint", "1s")
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "--checkpoint needs --out") {
		t.Errorf("--checkpoint without --out: exit %d\n%s", code, stderr)
	}
}
