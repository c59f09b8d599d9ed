package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/scenario"
	"github.com/pipebench/pipebench/schema/internal/fielddoc"
	"github.com/pipebench/pipebench/suite"
)

func registry(t *testing.T) *pipebench.Registry { return suitetest.Registry(t) }

// The committed files are what go generate ./schema writes now: the field
// documentation compiled into the scenario package, and the schemas.
func TestCommittedFilesAreUpToDate(t *testing.T) {
	const hint = "go generate ./schema rewrites it"
	docs, err := fielddoc.Extract("..")
	if err != nil {
		t.Fatal(err)
	}
	src, err := fielddoc.Source(docs)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("../scenario/fielddocs.go"); err != nil || !bytes.Equal(got, src) {
		t.Errorf("scenario/fielddocs.go is out of date (%v): %s", err, hint)
	}
	files, err := Files(registry(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, want) {
			t.Errorf("schema/%s is out of date (%v): %s", name, err, hint)
		}
	}
}

// compile compiles a committed schema (see Compile); an error fails the
// test.
func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// asJSON reads a YAML file as an editor's YAML language server does (see
// Instance); an error fails the test.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	doc, err := Instance(data)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// noEnv is the environment the corpus is read in: no variable is set, so
// that ${VAR:-default} takes its default, as an editor sees the file.
func noEnv(string) (string, bool) { return "", false }

// corpusCase is one file of the corpus and what the decoder and the schema
// made of it.
type corpusCase struct {
	file           string
	wantValid      bool
	decoderErr     error
	schemaErr      error
	decoderOK, ok2 bool
}

// runCorpus reads every file of dirs through the decoder and the schema.
func runCorpus(t *testing.T, s *jsonschema.Schema, decode func(file string, data []byte) error, dirs map[string]bool) []corpusCase {
	t.Helper()
	var out []corpusCase
	for dir, valid := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if len(files) == 0 {
			t.Fatalf("no files in %s", dir)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c := corpusCase{file: f, wantValid: valid}
			c.decoderErr = decode(f, data)
			c.schemaErr = s.Validate(asJSON(t, data))
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].file < out[j].file })
	return out
}

// check fails the test on every file the decoder and the schema disagree
// on, and on every file either judges otherwise than its folder says.
func check(t *testing.T, cases []corpusCase) {
	t.Helper()
	agree := 0
	for _, c := range cases {
		dec, sch := c.decoderErr == nil, c.schemaErr == nil
		switch {
		case dec != sch:
			t.Errorf("%s: the decoder says %s, the schema says %s", c.file, verdict(c.decoderErr), verdict(c.schemaErr))
		case dec != c.wantValid:
			t.Errorf("%s: both say %s, the corpus says %s", c.file, verdict(c.decoderErr), map[bool]string{true: "valid", false: "invalid"}[c.wantValid])
		default:
			agree++
		}
	}
	t.Logf("%d files, %d agreements", len(cases), agree)
}

func verdict(err error) string {
	if err == nil {
		return "valid"
	}
	return "invalid (" + strings.ReplaceAll(err.Error(), "\n", " | ") + ")"
}

// The scenario schema and the decoder agree on every file of the corpus:
// the examples and the valid files are valid for both, each invalid file
// (one mistake a user makes) is refused by both.
func TestScenarioCorpus(t *testing.T) {
	s := compile(t, "scenario.json")
	reg := registry(t)
	decode := func(file string, data []byte) error {
		_, err := scenario.Parse(file, data, scenario.Params{Registry: reg, Env: noEnv})
		return err
	}
	check(t, runCorpus(t, s, decode, map[string]bool{
		"../examples":                      true,
		"testdata/scenarios/valid":         true,
		"testdata/scenarios/invalid":       false,
		"../command/testdata/schema/valid": true,
	}))
}

// The suite schema and the suite decoder agree on every file of theirs.
func TestSuiteCorpus(t *testing.T) {
	s := compile(t, "suite.json")
	decode := func(file string, data []byte) error {
		_, err := suite.Parse(file, data)
		return err
	}
	check(t, runCorpus(t, s, decode, map[string]bool{
		"../examples/suites":      true,
		"testdata/suites/valid":   true,
		"testdata/suites/invalid": false,
	}))
	// Every built-in suite points editors at the suite schema.
	const first = "# yaml-language-server: $schema=../../schema/suite.json"
	files, _ := filepath.Glob("../examples/suites/*.yaml")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if line, _, _ := strings.Cut(string(data), "\n"); line != first {
			t.Errorf("%s: the first line is %q, want %q", f, line, first)
		}
	}
}

// An unknown driver's error names every driver, in the decoder's message
// and in the schema's.
func TestUnknownDriverListsEveryDriver(t *testing.T) {
	reg := registry(t)
	data := []byte("name: x\ntarget: {driver: htp}\nphases: [{name: a, duration: 1s, rate: 1/s}]\n")
	_, err := scenario.Parse("x.yaml", data, scenario.Params{Registry: reg, Env: noEnv})
	schemaErr := compile(t, "scenario.json").Validate(asJSON(t, data))
	var ve *jsonschema.ValidationError
	if !errors.As(schemaErr, &ve) {
		t.Fatalf("the schema took an unknown driver: %v", schemaErr)
	}
	raw, _ := os.ReadFile("scenario.json")
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	driver := doc["properties"].(map[string]any)["target"].(map[string]any)["properties"].(map[string]any)["driver"].(map[string]any)
	enum := driver["anyOf"].([]any)[0].(map[string]any)["enum"].([]any)
	names := reg.Drivers.Names()
	if len(enum) != len(names) {
		t.Errorf("the schema lists %d drivers, the registry has %d", len(enum), len(names))
	}
	for _, name := range names {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("the decoder's message does not name %s: %v", name, err)
		}
	}
	if !strings.Contains(err.Error(), `did you mean "http"`) {
		t.Errorf("no did-you-mean: %v", err)
	}
}

// Every key of both schemas has a description: the doc comment of its
// field. The plug-in keys whose fields have none yet are listed in
// testdata/undocumented.txt, for their packages' owners to document; the
// list may only shrink (a key documented since must leave it, a new key
// must be documented).
func TestEveryKeyHasADescription(t *testing.T) {
	files, err := Files(registry(t))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/undocumented.txt")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			allowed[line] = true
		}
	}
	still := map[string]bool{}
	for _, name := range []string{"scenario.json", "suite.json"} {
		var doc any
		if err := json.Unmarshal(files[name], &doc); err != nil {
			t.Fatal(err)
		}
		var missing []string
		keys := walkKeys(doc, "", func(path string, s map[string]any) {
			if _, ok := s["description"]; ok {
				return
			}
			if _, isConst := s["const"]; isConst {
				return
			}
			if allowed[path] {
				still[path] = true
				return
			}
			missing = append(missing, path)
		})
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s: %d of %d keys have no description (write a doc comment on their field, then go generate ./schema):\n  %s", name, len(missing), keys, strings.Join(missing, "\n  "))
		}
	}
	for k := range allowed {
		if !still[k] {
			t.Errorf("testdata/undocumented.txt lists %s, which has a description now (or is gone): remove the line", k)
		}
	}
}

// walkKeys calls f with every property schema under n, by its path (a
// plug-in's keys under its name: .target(http).tls.ca_file), and returns
// how many there were.
func walkKeys(n any, path string, f func(path string, s map[string]any)) int {
	m, ok := n.(map[string]any)
	if !ok {
		return 0
	}
	count := 0
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			if s, ok := v.(map[string]any); ok {
				count++
				f(path+"."+k, s)
			}
			count += walkKeys(v, path+"."+k, f)
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		count += walkKeys(m[k], path, f)
	}
	for _, k := range []string{"anyOf", "allOf", "oneOf"} {
		list, _ := m[k].([]any)
		for _, x := range list {
			branch, _ := x.(map[string]any)
			if name := pluginName(branch); name != "" {
				count += walkKeys(branch["then"], path+"("+name+")", func(p string, s map[string]any) {
					// The type key and the common keys are the section's
					// own, described there.
					if !strings.Contains(strings.TrimPrefix(p, path+"("+name+")."), ".") && props(m)[strings.TrimPrefix(p, path+"("+name+").")] {
						return
					}
					f(p, s)
				})
				continue
			}
			count += walkKeys(x, path, f)
		}
	}
	if then, ok := m["then"].(map[string]any); ok && pluginName(m) == "" {
		count += walkKeys(then, path, f)
	}
	return count
}

// pluginName is the plug-in an if/then branch is about, or "".
func pluginName(branch map[string]any) string {
	cond, _ := branch["if"].(map[string]any)
	ps, _ := cond["properties"].(map[string]any)
	for _, v := range ps {
		if c, ok := v.(map[string]any)["const"].(string); ok {
			return c
		}
	}
	return ""
}

// props reports which keys a schema's properties name.
func props(m map[string]any) map[string]bool {
	out := map[string]bool{}
	ps, _ := m["properties"].(map[string]any)
	for k := range ps {
		out[k] = true
	}
	return out
}
