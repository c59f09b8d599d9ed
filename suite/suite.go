// Package suite reads suite files: a named list of scenarios run one after
// the other under one version label, whose results line up as the reference
// reports' tables (one row per version, a column group per case).
//
// A suite file:
//
//	name: kyma-traces
//	description: the collector KPI limit test, traces
//	version: otelcol-0.162.0        # optional; run --sut-version overrides it
//	builds:                         # optional: every case once per build of the system under test
//	  - {version: otelcol-0.161.0, command: ./otelcol-0.161.0}   # its version label and binary
//	  - {version: otelcol-0.165.0, command: ./otelcol-0.165.0}
//	scenarios:
//	  - scenario: builtin:kyma-traces-single   # a file (relative to the suite file) or builtin:NAME
//	    case: Single Pipeline                  # optional; default: the scenario's case
//	    duration: 2m                           # optional; scales the scenario as run --duration does
//	    baseline: true                         # optional: the case status rules compare with
//	sut: keep                                  # optional: one system under test for every case (default fresh)
//	status: {kpi: ..., rules: [...]}           # optional: Stable/Slower/Degraded against the baseline (Status)
//	table:                                     # optional; default: a row per version, a column group per case
//	  rows: run                                # run: a row per case run; version (default)
//	  columns:
//	    - {title: Test, value: "@case"}        # a run's own value (@case, @version, @duration, @failure...)
//	    - {title: Proxy rps, value: eventproxy_accepted_rate, phase: soak, agg: sum}   # a KPI
package suite

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
)

// MaxSize is the largest suite file accepted, in bytes.
const MaxSize = 64 << 10

// LabelKey is the Result label that names the suite a run belonged to;
// compare --suite and gate --suite select runs by it.
const LabelKey = "suite"

// Suite is a decoded suite file.
type Suite struct {
	Name        string
	Description string
	// Version labels every run of the suite; "" keeps each scenario's own.
	Version string
	// File is where the suite came from ("builtin:NAME" for built-ins).
	File    string
	Entries []Entry
	// Table, when not nil, is the table the suite asks for.
	Table *Table
	// Status, when not nil, words each case against the baseline entry.
	Status *Status
	// SUT is the system under test's lifetime: SUTFresh ("" too) or
	// SUTKeep.
	SUT string
	// expects are the entries' expectations by the case of the plan
	// Plans made of each.
	expects map[string]*Expect
	// met and unmet are the cases of the last Run that did and did not
	// do what they expect.
	met, unmet []string
	// Builds, when not empty, runs every case once per build of the
	// system under test, each labelled with its version: the table's
	// row per version from one suite run.
	Builds []Build
}

// Build is one build of the system under test a suite runs every case
// on: its version label and its program (the system under test's command,
// such as a collector binary).
type Build struct {
	Version string
	// Command is a path (a relative one was made relative to the suite
	// file's folder) or a name looked up in PATH.
	Command string
	// Line is where the build is in the suite file (0: from the command
	// line).
	Line int
}

// The row layouts of a suite's table.
const (
	RowsVersion = "version" // a row per version, a column group per case
	RowsRun     = "run"     // a row per case run, one column group
)

// Table is the shape of a suite's table.
type Table struct {
	Rows    string // RowsVersion or RowsRun
	Columns []Column
}

// Column is one column of a suite's table.
type Column struct {
	Title string
	// Value is a KPI name or one of the run's own values ("@case").
	Value string
	// Phase takes the KPI from the phase of that name (default: the run's
	// total with rows: run, each case's phase with rows: version).
	Phase string
	// Agg reduces a KPI with several instances: sum, max, instances.
	Agg string
	// Unit converts the KPI in the cell: ms or s (a time, from its own
	// unit), /min (a rate per second).
	Unit string
	// Missing is what the cell says when the run has no such KPI (which
	// part was not measured and how to get it), instead of a blank.
	Missing string
	// Line and Col are where the column's value is, for messages.
	Line, Col int
}

// Entry is one scenario of a suite.
type Entry struct {
	// Scenario is a file path or builtin:NAME. A relative path was made
	// relative to the suite file's folder by Parse.
	Scenario string
	// Case labels the entry's column group; "" keeps the scenario's case.
	Case string
	// Duration, when not 0, scales the scenario to last this long.
	Duration pipebench.Duration
	// Baseline marks the case the suite's status rules compare with (the
	// same system without load).
	Baseline bool
	// Expect, when not nil, is the outcome the case is meant to have
	// (a failure it provokes); nil: a valid run whose thresholds held.
	Expect *Expect
	// Line is where the entry starts in the suite file, for messages.
	Line int
}

// Problem is one thing wrong in a suite file, with where it is.
type Problem = yamlnode.Problem

// Errors are every problem found in one suite file, in file order. It
// unwraps to a usage error (exit code 2).
type Errors []Problem

// Error prints a heading and one problem per line.
func (e *Errors) Error() string { return yamlnode.Format("suite", *e) }

// Unwrap returns the usage error that carries the exit code and a hint.
func (e *Errors) Unwrap() error {
	return &pipebench.Error{Code: pipebench.ExitUsage, Hint: "a suite has name, optional version and description, optional builds: a list of {version, command}, scenarios: a list of {scenario, case, duration}, and an optional table: {rows, columns}; see examples/suites/"}
}

var (
	topKeys    = []string{"name", "description", "version", "builds", "sut", "scenarios", "table", "status"}
	buildKeys  = []string{"version", "command"}
	entryKeys  = []string{"scenario", "case", "duration", "baseline", "expect"}
	tableKeys  = []string{"rows", "columns"}
	columnKeys = []string{"title", "value", "phase", "agg", "unit", "missing"}
	units      = []string{"", "ms", "s", "/min"}
	aggs       = []string{"", "sum", "max", "instances"}
)

type decoder struct {
	file string
	errs Errors
}

func (d *decoder) add(n ast.Node, path, format string, args ...any) {
	d.errs = append(d.errs, yamlnode.At(d.file, n, path, fmt.Sprintf(format, args...)))
}

// Parse decodes a suite file strictly: unknown or repeated keys, values of
// the wrong kind, a missing name or scenario list, and bad durations are
// reported with their line and column, all at once, as *Errors. file names
// the source in messages; relative scenario paths are resolved against its
// folder unless it starts with "builtin:".
func Parse(file string, data []byte) (*Suite, error) {
	d := &decoder{file: file}
	s := d.decode(data)
	if s != nil {
		d.checkBaseline(s)
	}
	if len(d.errs) > 0 {
		yamlnode.Sort(d.errs)
		errs := d.errs
		return nil, &errs
	}
	return s, nil
}

func (d *decoder) decode(data []byte) *Suite {
	if len(data) > MaxSize {
		d.add(nil, "", "the file is %d bytes; a suite may be at most %d KiB: is it the right file?", len(data), MaxSize>>10)
		return nil
	}
	if !utf8.Valid(data) || strings.ContainsRune(string(data), 0) {
		d.add(nil, "", "the file is not UTF-8 text; a suite is a YAML file")
		return nil
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	if strings.TrimSpace(text) == "" {
		d.add(nil, "", "the file is empty: a suite needs at least name and scenarios")
		return nil
	}
	// Nesting and aliases first: the parser's cost grows far faster than
	// the text for deeply nested text.
	tks, p := yamlnode.Tokens(d.file, "suite", text)
	if p != nil {
		d.errs = append(d.errs, *p)
		return nil
	}
	f, err := parser.Parse(tks, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			line, col := 0, 0
			if tk := ye.GetToken(); tk != nil {
				line, col = tk.Position.Line, tk.Position.Column
			}
			d.errs = append(d.errs, Problem{File: d.file, Line: line, Column: col, Msg: ye.GetMessage()})
		} else {
			d.add(nil, "", "%v", err)
		}
		return nil
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		d.add(nil, "", "the file holds no YAML document")
		return nil
	}
	if len(f.Docs) > 1 {
		d.add(f.Docs[1].Body, "", "the file holds %d YAML documents; a suite is one", len(f.Docs))
	}
	s := &Suite{File: d.file}
	top, ok := d.fields(f.Docs[0].Body, "", topKeys)
	if !ok {
		return nil
	}
	var list ast.Node
	for _, fl := range top {
		switch fl.key {
		case "name":
			var ok bool
			if s.Name, ok = d.scalar(fl.val, fl.key, "a string"); ok && strings.TrimSpace(s.Name) == "" {
				d.add(fl.val, "name", "must not be empty")
			}
		case "description":
			s.Description, _ = d.scalar(fl.val, fl.key, "a string")
		case "version":
			s.Version, _ = d.scalar(fl.val, fl.key, "a string")
		case "scenarios":
			list = fl.val
			if list == nil {
				list = fl.kn
			}
		case "table":
			s.Table = d.table(fl.val)
		case "status":
			s.Status = d.status(fl.val)
		case "sut":
			s.SUT = d.sutLifetime(fl.val)
		case "builds":
			s.Builds = d.builds(fl.val)
		}
	}
	// A missing key is reported at the top of the file.
	if !d.has(top, "name") {
		d.errs = append(d.errs, Problem{File: d.file, Line: 1, Column: 1, Path: "name", Msg: "missing: name the suite (its runs are found by it in the history)"})
	}
	if list == nil {
		d.errs = append(d.errs, Problem{File: d.file, Line: 1, Column: 1, Path: "scenarios", Msg: "missing: list the scenarios to run, like - scenario: builtin:quickstart"})
		return s
	}
	seq, ok := yamlnode.Unwrap(list).(*ast.SequenceNode)
	if !ok {
		d.add(list, "scenarios", "expected a list of {scenario, case, duration}, got %s", yamlnode.KindOf(yamlnode.Unwrap(list)))
		return s
	}
	if len(seq.Values) == 0 {
		d.add(list, "scenarios", "the list is empty: a suite runs at least one scenario")
	}
	cases := map[string]int{}
	for i, item := range seq.Values {
		path := fmt.Sprintf("scenarios[%d]", i)
		e := Entry{}
		if tk := item.GetToken(); tk != nil {
			e.Line = tk.Position.Line
		}
		item = yamlnode.Unwrap(item)
		if sn, ok := item.(*ast.StringNode); ok {
			// The short form: - builtin:NAME
			e.Scenario = sn.Value
		} else {
			fs, ok := d.fields(item, path, entryKeys)
			if !ok {
				continue
			}
			for _, fl := range fs {
				p := path + "." + fl.key
				switch fl.key {
				case "scenario":
					e.Scenario, _ = d.scalar(fl.val, p, "a file path or builtin:NAME")
				case "case":
					e.Case, _ = d.scalar(fl.val, p, "a string")
					// A case naming its duration ({load}) is told apart
					// once planned: see CaseName.
					if e.Case != "" && !strings.Contains(e.Case, LoadPlaceholder) {
						if prev, dup := cases[e.Case]; dup {
							d.add(fl.val, p, "case %q is already used by scenarios[%d]: each entry is its own column group", e.Case, prev)
						}
						cases[e.Case] = i
					}
				case "expect":
					e.Expect = d.expect(fl.val, p)
				case "baseline":
					v, ok := d.scalar(fl.val, p, "true or false")
					if ok && v != "true" && v != "false" {
						d.add(fl.val, p, "expected true or false, got %q", v)
					}
					e.Baseline = v == "true"
				case "duration":
					v, ok := d.scalar(fl.val, p, "a duration like 2m")
					if !ok {
						break
					}
					dur, err := pipebench.ParseDuration(v)
					if err != nil {
						d.add(fl.val, p, "%v", err)
					} else if dur <= 0 {
						d.add(fl.val, p, "must be more than 0, like 2m")
					} else {
						e.Duration = dur
					}
				}
			}
			if !d.has(fs, "scenario") {
				d.add(item, path+".scenario", "missing: a scenario file or builtin:NAME")
				continue
			}
		}
		if strings.TrimSpace(e.Scenario) == "" {
			d.add(item, path+".scenario", "must not be empty: a scenario file or builtin:NAME")
			continue
		}
		e.Scenario = resolve(d.file, e.Scenario)
		s.Entries = append(s.Entries, e)
	}
	return s
}

// builds decodes a suite's builds: each a version label and a command.
func (d *decoder) builds(n ast.Node) []Build {
	seq, ok := yamlnode.Unwrap(n).(*ast.SequenceNode)
	if !ok || len(seq.Values) == 0 {
		d.add(n, "builds", "expected a list of {version, command}: the builds of the system under test every case runs on")
		return nil
	}
	var out []Build
	seen := map[string]int{}
	for i, item := range seq.Values {
		path := fmt.Sprintf("builds[%d]", i)
		fs, ok := d.fields(item, path, buildKeys)
		if !ok {
			continue
		}
		b := Build{}
		if tk := item.GetToken(); tk != nil {
			b.Line = tk.Position.Line
		}
		for _, fl := range fs {
			p := path + "." + fl.key
			switch fl.key {
			case "version":
				b.Version, _ = d.scalar(fl.val, p, "a version label")
				if prev, dup := seen[b.Version]; dup && b.Version != "" {
					d.add(fl.val, p, "version %q is also builds[%d]'s: each build is its own row", b.Version, prev)
				}
				seen[b.Version] = i
			case "command":
				b.Command, _ = d.scalar(fl.val, p, "a path or a program's name")
			}
		}
		for _, k := range buildKeys {
			if v := map[string]string{"version": b.Version, "command": b.Command}[k]; strings.TrimSpace(v) == "" {
				at := d.node(fs, k)
				if at == nil {
					at = item
				}
				d.add(at, path+"."+k, "missing: a build needs its version label and its command (the system under test's program)")
			}
		}
		if strings.ContainsRune(b.Command, filepath.Separator) {
			b.Command = resolve(d.file, b.Command)
		}
		out = append(out, b)
	}
	return out
}

// table decodes a suite's table: its rows and columns.
func (d *decoder) table(n ast.Node) *Table {
	fs, ok := d.fields(n, "table", tableKeys)
	if !ok {
		return nil
	}
	t := &Table{Rows: RowsVersion}
	for _, fl := range fs {
		switch fl.key {
		case "rows":
			v, ok := d.scalar(fl.val, "table.rows", "run or version")
			if !ok {
				break
			}
			if v != RowsRun && v != RowsVersion {
				d.add(fl.val, "table.rows", "unknown layout %q: run (a row per case run) or version (a row per version, a column group per case)", v)
				break
			}
			t.Rows = v
		case "columns":
			seq, ok := yamlnode.Unwrap(fl.val).(*ast.SequenceNode)
			if !ok || len(seq.Values) == 0 {
				d.add(fl.val, "table.columns", "expected a list of {title, value, phase, agg}")
				break
			}
			for i, item := range seq.Values {
				if c, ok := d.column(item, fmt.Sprintf("table.columns[%d]", i)); ok {
					t.Columns = append(t.Columns, c)
				}
			}
		}
	}
	if t.Rows == RowsRun && len(t.Columns) < 2 {
		at := d.node(fs, "columns")
		if at == nil {
			at = n
		}
		d.add(at, "table.columns", "rows: run needs at least two columns: the first labels each row (like {title: Test, value: \"@case\"})")
	}
	return t
}

func (d *decoder) column(n ast.Node, path string) (Column, bool) {
	fs, ok := d.fields(n, path, columnKeys)
	if !ok {
		return Column{}, false
	}
	var c Column
	for _, fl := range fs {
		p := path + "." + fl.key
		switch fl.key {
		case "title":
			c.Title, _ = d.scalar(fl.val, p, "a string")
		case "value":
			c.Value, _ = d.scalar(fl.val, p, "a KPI name or a run value like \"@case\"")
			if tk := fl.val.GetToken(); tk != nil {
				c.Line, c.Col = tk.Position.Line, tk.Position.Column
			}
		case "phase":
			c.Phase, _ = d.scalar(fl.val, p, "a phase name")
		case "agg":
			c.Agg, _ = d.scalar(fl.val, p, "sum, max or instances")
			if !yamlnode.Contains(aggs, c.Agg) {
				d.add(fl.val, p, "unknown %q: sum, max or instances (or leave it out)", c.Agg)
			}
		case "unit":
			c.Unit, _ = d.scalar(fl.val, p, "ms, s or /min")
			if !yamlnode.Contains(units, c.Unit) {
				d.add(fl.val, p, "unknown %q: ms or s (a time converted from its own unit), /min (a rate per second times 60), or leave it out", c.Unit)
			}
		case "missing":
			c.Missing, _ = d.scalar(fl.val, p, "what the cell says when the KPI was not measured")
		}
	}
	ok = true
	for _, k := range []string{"title", "value"} {
		if !d.has(fs, k) {
			d.add(n, path+"."+k, "missing: a column needs a title and a value")
			ok = false
		}
	}
	if c.Value != "" && strings.TrimSpace(c.Value) == "" {
		d.add(d.node(fs, "value"), path+".value", "must not be empty")
		ok = false
	}
	return c, ok
}

// resolve makes a relative scenario path relative to the suite file's
// folder; builtin: references and absolute paths are kept.
func resolve(file, ref string) string {
	if strings.HasPrefix(ref, "builtin:") || filepath.IsAbs(ref) || ref == "-" {
		return ref
	}
	if strings.HasPrefix(file, "builtin:") || file == "" || file == "-" {
		return ref
	}
	return filepath.Join(filepath.Dir(file), ref)
}

type field struct {
	key string
	kn  ast.Node
	val ast.Node
}

func (d *decoder) has(fs []field, key string) bool { return d.node(fs, key) != nil }

func (d *decoder) node(fs []field, key string) ast.Node {
	for _, f := range fs {
		if f.key == key {
			if f.val != nil {
				return f.val
			}
			return f.kn
		}
	}
	return nil
}

func (d *decoder) fields(n ast.Node, path string, known []string) ([]field, bool) {
	n = yamlnode.Unwrap(n)
	var pairs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		pairs = v.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{v}
	default:
		d.add(n, path, "expected a mapping (key: value lines), got %s", yamlnode.KindOf(n))
		return nil, false
	}
	seen := map[string]bool{}
	var out []field
	for _, p := range pairs {
		key := strings.TrimSpace(p.Key.String())
		if k, ok := p.Key.(*ast.StringNode); ok {
			key = k.Value
		}
		at := key
		if path != "" {
			at = path + "." + key
		}
		if seen[key] {
			d.add(p.Key, at, "key %q appears twice", key)
			continue
		}
		seen[key] = true
		if !yamlnode.Contains(known, key) {
			d.add(p.Key, at, "unknown key %q; a %s has %s", key, noun(path), strings.Join(known, ", "))
			continue
		}
		out = append(out, field{key: key, kn: p.Key, val: yamlnode.Unwrap(p.Value)})
	}
	return out, true
}

// noun names what the mapping at path is, for messages.
func noun(path string) string {
	switch {
	case path == "":
		return "suite"
	case path == "table":
		return "table"
	case strings.HasPrefix(path, "table.columns"):
		return "table column"
	}
	return "scenario entry"
}

func (d *decoder) scalar(n ast.Node, path, want string) (string, bool) {
	if v, ok := yamlnode.Scalar(n); ok {
		return v, true
	}
	d.add(n, path, "expected %s, got %s", want, yamlnode.KindOf(n))
	return "", false
}
