// Package examples holds one scenario file per feature. They are also the
// built-in scenarios: `pipebench run builtin:NAME` runs NAME.yaml from here.
package examples

import (
	"embed"
	"io/fs"
	"strings"
)

// FS holds the example scenarios, the .proto files they use, and the
// built-in suites under suites/.
//
//go:embed *.yaml *.proto suites/*.yaml
var FS embed.FS

// Names lists the built-in scenarios (file names without .yaml).
func Names() []string { return yamlNames(".") }

// SuiteNames lists the built-in suites (file names in suites/ without
// .yaml): `pipebench suite run builtin:NAME` runs suites/NAME.yaml.
func SuiteNames() []string { return yamlNames("suites") }

// yamlNames lists the .yaml files in dir of FS, without .yaml.
func yamlNames(dir string) []string {
	entries, _ := fs.ReadDir(FS, dir)
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, name)
		}
	}
	return out
}
