package command

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pipebench/pipebench/schema"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite schema/scenario.json from `pipebench schema`")

// schemaFile is the committed schema that examples point editors at.
const schemaFile = "../schema/scenario.json"

// schemaComment is the first line of every example: the path of the
// committed schema, relative to examples/.
const schemaComment = "# yaml-language-server: $schema=../schema/scenario.json"

// The committed schema is what `pipebench schema` prints now.
func TestCommittedSchemaIsUpToDate(t *testing.T) {
	stdout, stderr, code := cli(t, "schema")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if *updateSchema {
		if err := os.WriteFile(schemaFile, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (go test ./command -run TestCommittedSchema -update-schema writes it)", err)
	}
	if string(committed) != stdout {
		t.Errorf("schema/scenario.json is out of date: go test ./command -run TestCommittedSchema -update-schema")
	}
}

// compileSchema compiles the committed schema as a validator should read
// it (schema.Compile).
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile("scenario.json", data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlToJSON reads a scenario as an editor's YAML language server does
// (schema.Instance).
func yamlToJSON(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := schema.Instance(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// Every example, and every minimal file the decoder accepts, validates
// against the schema: an editor flags nothing that `validate` accepts.
func TestValidFilesMatchSchema(t *testing.T) {
	s := compileSchema(t)
	examples, _ := filepath.Glob("../examples/*.yaml")
	valid, _ := filepath.Glob("testdata/schema/valid/*.yaml")
	if len(examples) == 0 || len(valid) == 0 {
		t.Fatalf("no files: %d examples, %d valid", len(examples), len(valid))
	}
	for _, path := range append(examples, valid...) {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			if _, stderr, code := cli(t, "validate", path); code != 0 {
				t.Fatalf("the decoder refuses it: %s", stderr)
			}
			if err := s.Validate(yamlToJSON(t, path)); err != nil {
				t.Errorf("valid for the decoder, refused by the schema:\n%v", err)
			}
		})
	}
	for _, path := range examples {
		data, _ := os.ReadFile(path)
		first, _, _ := strings.Cut(string(data), "\n")
		if first != schemaComment {
			t.Errorf("%s: the first line is %q, want %q", path, first, schemaComment)
		}
	}
}

// Files the decoder refuses for a reason a schema can express are refused
// by the schema too.
func TestInvalidFilesFailSchema(t *testing.T) {
	s := compileSchema(t)
	invalid, _ := filepath.Glob("testdata/schema/invalid/*.yaml")
	if len(invalid) == 0 {
		t.Fatal("no invalid files")
	}
	for _, path := range invalid {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, _, code := cli(t, "validate", path); code == 0 {
				t.Fatalf("the decoder accepts it: it is no invalid example")
			}
			if err := s.Validate(yamlToJSON(t, path)); err == nil {
				t.Errorf("refused by the decoder, accepted by the schema")
			}
		})
	}
}
