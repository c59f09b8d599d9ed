// Package schema holds the committed JSON Schemas of pipebench's files,
// for editors (a scenario's first line, `# yaml-language-server:
// $schema=../schema/scenario.json`, points at it): scenario.json, what
// `pipebench schema` prints, and suite.json, for suite files. Both are
// made from the decoders' own types and rules (scenario.Schema,
// suite.Schema); `go generate ./schema` rewrites them, and this package's
// tests fail when they are out of date or when the schema and the decoder
// disagree on a file of the corpus in testdata/.
package schema

//go:generate go run ./internal/gen -docs
//go:generate go run ./internal/gen -json

import (
	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/scenario"
	"github.com/pipebench/pipebench/suite"
)

// Files returns the contents of the schema files by name, for the plug-ins
// of reg: scenario.json and suite.json, each ending in a newline.
func Files(reg *pipebench.Registry) (map[string][]byte, error) {
	sc, err := scenario.Schema(reg)
	if err != nil {
		return nil, err
	}
	su, err := suite.Schema()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"scenario.json": append(sc, '\n'), "suite.json": append(su, '\n')}, nil
}
