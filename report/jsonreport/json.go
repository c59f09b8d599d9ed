// Package jsonreport writes the Result itself as indented JSON: the
// canonical record every other report can be rebuilt from.
package jsonreport

import (
	"encoding/json"
	"io"

	"github.com/pipebench/pipebench"
)

// New returns the JSON reporter.
func New() pipebench.Reporter {
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
}
