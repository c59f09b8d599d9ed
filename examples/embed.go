// Package examples holds one scenario file per feature. They are also the
// built-in scenarios: `pipebench run builtin:NAME` runs NAME.yaml from here.
package examples

import (
	"embed"
	"io/fs"
	"strings"
)

// FS holds the example scenarios and the .proto files they use.
//
//go:embed *.yaml *.proto
var FS embed.FS

// Names lists the built-in scenarios (file names without .yaml).
func Names() []string {
	entries, _ := fs.ReadDir(FS, ".")
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, name)
		}
	}
	return out
}
