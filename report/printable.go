package report

import (
	"io"
	"strings"
	"unicode"
)

// Printable returns s with every control character (escape sequences'
// ESC among them; C0 and C1, and DEL) but newline and tab replaced by
// "?": names and labels come from the scenario, and a terminal would act
// on such characters (move the cursor, rewrite the title, hide text).
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if unsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafe(r) {
			return '?'
		}
		return r
	}, s)
}

func unsafe(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.IsControl(r) || r == 0x7f)
}

// PrintableWriter writes through to w with Printable applied to what is
// written: for the reports meant for a terminal.
func PrintableWriter(w io.Writer) io.Writer { return printable{w} }

type printable struct{ w io.Writer }

func (p printable) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, Printable(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}
