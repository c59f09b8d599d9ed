package jsonreport

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
)

// Write writes what json.Encoder with an indent of two spaces writes,
// byte for byte: with series, without, with text to escape in and around
// them.
func TestWriteIsTheEncodersOutput(t *testing.T) {
	withSeries := resulttest.Pipeline("1.0", "c <&> \"quoted\"", 20000)
	withSeries.Series = append(withSeries.Series, pipebench.Series{Name: "x", Labels: map[string]string{"a": "<b>", "\u2028": "]"},
		Points: []pipebench.TimeValue{{T: time.Unix(1, 0), V: 1.5}}})
	noSeries := resulttest.Pipeline("1.0", "c", 20000)
	noSeries.Series = nil
	oneEmpty := resulttest.Pipeline("1.0", "c", 20000)
	oneEmpty.Series = []pipebench.Series{{Name: "empty"}}
	for name, r := range map[string]*pipebench.Result{"series": withSeries, "none": noSeries, "an empty series": oneEmpty} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if err := Write(&got, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Errorf("%s: differs from the encoder's output:\n%s\nwant:\n%s", name, got.String(), want.String())
		}
	}
}
