package schema

import (
	"fmt"
	"strings"

	"github.com/pipebench/pipebench/suite"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"
)

// VocabularyURL identifies the one keyword pipebench's schemas add to
// draft 2020-12.
const VocabularyURL = "https://pipebench.dev/schema/vocab/unique-keys"

// Vocabulary returns the vocabulary of the keyword "uniqueKeys": on a
// list, "uniqueKeys": "name" refuses two items with the same value of key
// name (two phases of one name, two suite entries of one case), which no
// keyword of draft 2020-12 can say. Editors skip a keyword they do not
// know, and `pipebench validate` checks it all the same; a Go program
// validating with github.com/santhosh-tekuri/jsonschema/v6 registers this
// vocabulary (Compiler.RegisterVocabulary, with AssertVocabs) to apply it.
func Vocabulary() (*jsonschema.Vocabulary, error) {
	meta, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"properties": {"uniqueKeys": {"type": "string"}}}`))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(VocabularyURL, meta); err != nil {
		return nil, err
	}
	sch, err := c.Compile(VocabularyURL)
	if err != nil {
		return nil, err
	}
	return &jsonschema.Vocabulary{URL: VocabularyURL, Schema: sch, Compile: compileUniqueKeys}, nil
}

func compileUniqueKeys(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	key, ok := obj["uniqueKeys"].(string)
	if !ok {
		return nil, nil
	}
	return uniqueKeys(key), nil
}

// uniqueKeys is the compiled keyword: the key whose values must differ.
type uniqueKeys string

// Validate reports the first two items of the list v that share a value
// of the key, compared as the decoders compare them: as text.
func (k uniqueKeys) Validate(ctx *jsonschema.ValidatorContext, v any) {
	items, ok := v.([]any)
	if !ok {
		return
	}
	seen := map[string]int{}
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			continue
		}
		val, ok := obj[string(k)]
		if !ok {
			continue
		}
		text := fmt.Sprint(val)
		if strings.Contains(text, suite.LoadPlaceholder) {
			// Named by the load that runs ({load}): entries alike here may
			// differ once expanded, as the suite decoder knows.
			continue
		}
		if j, dup := seen[text]; dup {
			ctx.AddError(&duplicateKey{key: string(k), value: text, first: j, second: i})
			return
		}
		seen[text] = i
	}
}

// duplicateKey is the error of uniqueKeys.
type duplicateKey struct {
	key, value    string
	first, second int
}

// KeywordPath implements jsonschema.ErrorKind.
func (*duplicateKey) KeywordPath() []string { return []string{"uniqueKeys"} }

// LocalizedString implements jsonschema.ErrorKind.
func (d *duplicateKey) LocalizedString(p *message.Printer) string {
	return p.Sprintf("items %d and %d have the same %s %q", d.first, d.second, d.key, d.value)
}
