package suite

import (
	"strings"
	"testing"
	"time"
)

// A suite file nested past any suite's need, or with YAML aliases, is
// refused before the YAML parser reads it: at once, naming where (a 64 KB
// suite of nesting took the parser 19 s and 1.5 GB).
func TestNestingAndAliasesRefused(t *testing.T) {
	deep := "name: x\nscenarios: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + "\n"
	indented := "name: x\nscenarios:\n"
	for i := 0; i < 100; i++ {
		indented += strings.Repeat("  ", i) + "- \n"
	}
	for name, text := range map[string]string{
		"flow":    deep,
		"block":   indented,
		"aliases": "name: &n x\nscenarios: [{scenario: *n}]\n",
	} {
		start := time.Now()
		_, err := Parse(name+".yaml", []byte(text))
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: %s to refuse", name, took)
		}
		want := "nests more than 64 levels deep; a suite needs far fewer"
		if name == "aliases" {
			want = "YAML anchor &n is not supported"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
