// Package jsonreport writes the whole Result as indented JSON: the form
// `run --out` writes and `report` reads back.
package jsonreport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/pipebench/pipebench"
)

// New returns the reporter of the whole Result as indented JSON.
func New() pipebench.Reporter {
	return pipebench.ReporterFunc(Write)
}

// placeholder stands for the series while the rest of the Result is
// encoded: its name cannot be a series' name.
const placeholder = "\x00pipebench-series\x00"

// Write writes r as json.Encoder with an indent of two spaces writes it,
// byte for byte, but with the series (most of a long run's Result)
// encoded one at a time: what it holds in memory is the Result without its
// series and one series, not the whole document twice over (the encoder
// encodes all of it, then indents all of it, before writing).
func Write(w io.Writer, r *pipebench.Result) error {
	if len(r.Series) == 0 {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	rest := *r
	rest.Series = []pipebench.Series{{Name: placeholder}}
	doc, err := json.MarshalIndent(&rest, "", "  ")
	if err != nil {
		return err
	}
	// The series list stands alone between these two lines of the
	// document: `  "series": [` and `  ]`.
	open := []byte("\n  \"series\": [\n")
	i := bytes.Index(doc, open)
	j := bytes.Index(doc, []byte("\n  ]"))
	for j >= 0 && j < i {
		k := bytes.Index(doc[j+1:], []byte("\n  ]"))
		if k < 0 {
			j = -1
			break
		}
		j += 1 + k
	}
	if i < 0 || j < 0 {
		// Not the shape this writer knows: the encoder's own way.
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.Write(doc[:i+len(open)])
	for n, s := range r.Series {
		b, err := json.MarshalIndent(s, "    ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("    ")
		bw.Write(b)
		if n < len(r.Series)-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.Write(doc[j+1:])
	bw.WriteByte('\n')
	return bw.Flush()
}
