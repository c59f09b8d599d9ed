package schema

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles one of the schemas (data, the text of the file name) as
// a validator should read it: draft 2020-12 with formats asserted and the
// uniqueKeys vocabulary applied (see Vocabulary).
func Compile(name string, data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", name, err)
	}
	voc, err := Vocabulary()
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.AssertVocabs()
	c.RegisterVocabulary(voc)
	if err := c.AddResource(name, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(name)
	if err != nil {
		return nil, fmt.Errorf("%s does not compile: %w", name, err)
	}
	return s, nil
}

// Instance reads a YAML file (a scenario, a suite) as an editor's YAML
// language server hands it to the schema: its document as JSON values,
// ready for Schema.Validate.
func Instance(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(j))
}
