package scenario

import (
	"fmt"
	"unicode/utf8"

	"github.com/goccy/go-yaml/token"

	"github.com/pipebench/pipebench/internal/format/yamlnode"
)

// Limits on what Parse reads, so that any input, hostile or broken, is
// decoded or rejected within a second and 100 MB. The YAML library's parser
// needs time and memory that grow much faster than the input for deeply
// nested text (200 KB of '[' took 45 s and 15 GB), and about 600 bytes of
// memory per token for any text; scenarios are a few KB.
const (
	// MaxSize is the largest scenario file accepted: 64 KiB, about fifty
	// times the largest example.
	MaxSize = 64 << 10
	// MaxDepth is the deepest nesting of mappings and lists accepted; a
	// scenario needs about six levels.
	MaxDepth = yamlnode.MaxDepth
)

// checkText rejects a file too big to be a scenario, and one that is not
// UTF-8 text (a binary file, a NUL byte), naming the first bad byte's line
// and column. It runs before anything else looks at the file.
func (d *decoder) checkText(data []byte) bool {
	if len(data) > MaxSize {
		d.add(nil, "", "the file is %s; a scenario may be at most %d KiB: is it the right file?", sizeOf(len(data)), MaxSize>>10)
		return false
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' && c != '\r' || c == 0x7f {
				d.add(nil, "", "the file is not text: byte 0x%02x at line %d, column %d; a scenario is a UTF-8 YAML file", c, line, col)
				return false
			}
			i++
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			d.add(nil, "", "the file is not UTF-8 text: byte 0x%02x at line %d, column %d; save it as UTF-8", c, line, col)
			return false
		}
		if r == '\uFEFF' && i > 0 || r >= 0x80 && r < 0xa0 {
			d.add(nil, "", "the file is not text: character U+%04X at line %d, column %d", r, line, col)
			return false
		}
		i += n
		col++
	}
	return true
}

func sizeOf(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// tokens splits the file into YAML tokens and checks them before the
// parser runs (yamlnode.Tokens: nesting, anchors and aliases). It returns
// false after recording the problem.
func (d *decoder) tokens(data []byte) (token.Tokens, bool) {
	tks, p := yamlnode.Tokens(d.file, "scenario", string(data))
	if p != nil {
		d.errs = append(d.errs, *p)
		return nil, false
	}
	return tks, true
}

// addAt records a problem at a token.
func (d *decoder) addAt(tk *token.Token, format string, args ...any) {
	d.errs = append(d.errs, Problem{File: d.file, Line: tk.Position.Line, Column: tk.Position.Column, Msg: fmt.Sprintf(format, args...)})
}
