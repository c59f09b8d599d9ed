package suite

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

func TestParseSuite(t *testing.T) {
	s, err := Parse(filepath.Join("dir", "s.yaml"), []byte(`# a comment
name: traces
description: the traces table
version: 1.2.0
scenarios:
  - scenario: builtin:kyma-traces-single
    case: Single Pipeline
    duration: 2m
  - scenario: multi.yaml
  - builtin:kyma-traces-backpressure
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "traces" || s.Version != "1.2.0" || s.Description != "the traces table" || len(s.Entries) != 3 {
		t.Fatalf("%+v", s)
	}
	e := s.Entries
	if e[0].Scenario != "builtin:kyma-traces-single" || e[0].Case != "Single Pipeline" || e[0].Duration.D().Minutes() != 2 || e[0].Line != 6 {
		t.Errorf("entry 0: %+v", e[0])
	}
	if e[1].Scenario != filepath.Join("dir", "multi.yaml") || e[1].Duration != 0 {
		t.Errorf("a relative path is relative to the suite file: %+v", e[1])
	}
	if e[2].Scenario != "builtin:kyma-traces-backpressure" {
		t.Errorf("short form: %+v", e[2])
	}
}

func TestParseReportsEveryProblemWithItsPlace(t *testing.T) {
	_, err := Parse("s.yaml", []byte(`name: 3
colour: blue
scenarios:
  - {scenario: a.yaml, duration: -1s}
  - {case: B}
  - scenario: [a, b]
  - 7
`))
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err %T %v", err, err)
	}
	if pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("exit code %d", pipebench.ExitCode(err))
	}
	msg := err.Error()
	for _, want := range []string{
		`s.yaml:2:1: colour: unknown key "colour"`,
		`s.yaml:4:34: scenarios[0].duration:`,
		`s.yaml:5:5: scenarios[1].scenario: missing`,
		`s.yaml:6:15: scenarios[2].scenario: expected a file path or builtin:NAME, got a list`,
		`s.yaml:7:5: scenarios[3]: expected a mapping`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("lacks %q:\n%s", want, msg)
		}
	}
	// In file order.
	if strings.Index(msg, "colour") > strings.Index(msg, "scenarios[0]") {
		t.Errorf("not in file order:\n%s", msg)
	}
}

func TestParseRefusesWhatIsNotASuite(t *testing.T) {
	for name, data := range map[string]string{
		"empty":     "",
		"binary":    "name: x\x00\n",
		"two docs":  "name: x\nscenarios: [a.yaml]\n---\nname: y\n",
		"a list":    "- a.yaml\n",
		"no list":   "name: x\nscenarios: []\n",
		"huge":      strings.Repeat("#", MaxSize+1),
		"bad yaml":  "name: [x\n",
		"no name":   "scenarios: [a.yaml]\n",
		"null name": "name:\nscenarios: [a.yaml]\n",
	} {
		_, err := Parse("s.yaml", []byte(data))
		if err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage || !strings.Contains(err.Error(), "s.yaml") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseTable(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`name: eventing
scenarios: [builtin:eventing-proxy]
table:
  rows: run
  columns:
    - {title: Cluster, value: "@label:cluster"}
    - {title: Generator rps, value: sent_rate}
    - title: Proxy rps
      value: eventproxy_accepted_rate
      phase: soak
      agg: sum
`))
	if err != nil {
		t.Fatal(err)
	}
	tb := s.Table
	if tb == nil || tb.Rows != RowsRun || len(tb.Columns) != 3 {
		t.Fatalf("%+v", tb)
	}
	if c := tb.Columns[2]; c.Title != "Proxy rps" || c.Value != "eventproxy_accepted_rate" || c.Phase != "soak" || c.Agg != "sum" || c.Line != 9 || c.Col != 14 {
		t.Errorf("column 2: %+v", c)
	}
	if c := tb.Columns[0]; c.Value != "@label:cluster" || c.Line != 6 {
		t.Errorf("column 0: %+v", c)
	}
	s, err = Parse("s.yaml", []byte("name: x\nscenarios: [a.yaml]\n"))
	if err != nil || s.Table != nil {
		t.Errorf("no table: %+v %v", s.Table, err)
	}
}

func TestParseTableProblems(t *testing.T) {
	_, err := Parse("s.yaml", []byte(`name: eventing
scenarios: [a.yaml]
table:
  rows: runs
  colour: red
  columns:
    - {title: A, value: sent_rate, agg: avg}
    - {value: sent_rate, width: 3}
    - 7
`))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`s.yaml:4:9: table.rows: unknown layout "runs": run (a row per case run) or version`,
		`s.yaml:5:3: table.colour: unknown key "colour"; a table has rows, columns`,
		`s.yaml:7:41: table.columns[0].agg: unknown "avg"`,
		`s.yaml:8:26: table.columns[1].width: unknown key "width"; a table column has title, value, phase, agg`,
		`table.columns[1].title: missing`,
		`s.yaml:9:7: table.columns[2]: expected a mapping`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("lacks %q:\n%s", want, msg)
		}
	}
	_, err = Parse("s.yaml", []byte("name: x\nscenarios: [a.yaml]\ntable: {rows: run, columns: [{title: T, value: \"@case\"}]}\n"))
	if err == nil || !strings.Contains(err.Error(), "rows: run needs at least two columns") {
		t.Errorf("one column with rows: run: %v", err)
	}
}

// The status rules, the baseline flag, the system under test's lifetime,
// a column's unit and missing text decode; {load} cases may repeat until
// they are planned; a status without a baseline is located.
func TestSuiteStatusBaselineAndLifetime(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`name: s
sut: keep
scenarios:
  - {scenario: builtin:nvsentinel-baseline, case: Baseline, baseline: true}
  - {scenario: builtin:nvsentinel-burst-high, case: "High {load}", duration: 1m}
  - {scenario: builtin:nvsentinel-burst-high, case: "High {load}", duration: 3m}
status:
  kpi: apiserver_latency_seconds.p75
  phase: load
  rules:
    - {word: Degraded, above: 20x}
    - {word: Slower, above: 10}
table:
  rows: run
  columns:
    - {title: Test, value: "@case"}
    - {title: P75, value: apiserver_latency_seconds.p75, unit: ms, missing: no API server}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.SUT != SUTKeep || s.Baseline() != "Baseline" || s.Status.KPI != "apiserver_latency_seconds.p75" || s.Status.Phase != "load" ||
		len(s.Status.Rules) != 2 || s.Status.Rules[0] != (StatusRule{"Degraded", 20}) || s.Status.Rules[1].Above != 10 ||
		s.Status.Otherwise != "Stable" || s.Status.Invalid != "Test invalid" {
		t.Errorf("decoded %+v %+v", s, s.Status)
	}
	if c := s.Table.Columns[1]; c.Unit != "ms" || c.Missing != "no API server" {
		t.Errorf("column %+v", c)
	}
	_, err = Parse("s.yaml", []byte(`name: s
sut: sometimes
scenarios: [builtin:a]
status: {kpi: x, rules: [{word: Slower, above: fast}]}
table: {rows: run, columns: [{title: T, value: "@case"}, {title: P, value: p, unit: furlongs}]}
`))
	for _, want := range []string{`s.yaml:2:6: sut: unknown "sometimes"`, `status.rules[0].above: "fast" is not a ratio`, "mark one entry baseline: true", `unit: unknown "furlongs"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
