package scenario

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Bounds every input must stay within. Memory is what Parse allocates in
// total (runtime.MemStats.TotalAlloc), a figure that does not depend on the
// machine's load; the time bound here only catches a hang on a loaded
// machine, BenchmarkHostile prints the real figures (well under 1 s).
const (
	maxAlloc = 100 << 20
	maxTime  = 10 * time.Second
)

// hostile are inputs of at most MaxSize bytes shaped to make a YAML parser
// work hard.
func hostile() map[string]string {
	fill := func(prefix, unit, suffix string) string {
		n := (MaxSize - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	return map[string]string{
		"open brackets":     fill("", "[", ""),
		"open braces":       fill("a: ", "{a: ", ""),
		"compact sequences": fill("a:\n", "- ", "x\n"),
		"indented mappings": "a:\n" + func() string {
			var b strings.Builder
			for i := 1; b.Len()+i+4 < MaxSize-10; i++ {
				b.WriteString(strings.Repeat(" ", i) + "b:\n")
			}
			return b.String()
		}(),
		"flat flow list":     fill("phases: [", "1,", "1]\n"),
		"flat flow mapping":  fill("labels: {", "a: 1, ", "}\n"),
		"many lines":         fill("", "k: v\n", ""),
		"many list items":    fill("phases:\n", "- {name: a, duration: 1s, rate: 1/s}\n", ""),
		"nested then flat":   fill("a: "+strings.Repeat("[", MaxDepth-2), "1,", strings.Repeat("]", MaxDepth-2)),
		"anchors":            fill("", "- &a x\n", ""),
		"aliases":            fill("a: &a [x]\nb: [", "*a,", "]\n"),
		"unterminated quote": fill("name: \"", "x", ""),
		"long scalar":        fill("name: ", "x", "\n"),
		"env references":     fill("name: \"", "${A}", "\"\n"),
		"comments":           fill("", "# [[[[{{{{\n", "name: x\n"),
		"tabs and CRs":       fill("", "\t\r\n", ""),
		"block scalar":       fill("description: |\n", "  [[[[ - - - &a *a\n", "name: x\n"),
	}
}

// parseBounded parses in and fails the test when it takes more than the
// bounds.
func parseBounded(t testing.TB, name, in string) error {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := Parse(name, []byte(in), Params{Registry: testRegistry(), Env: func(string) (string, bool) { return "v", true }})
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxAlloc {
		t.Errorf("%s (%d bytes): allocated %d MB, more than %d MB", name, len(in), alloc>>20, maxAlloc>>20)
	}
	if took > maxTime {
		t.Errorf("%s (%d bytes): took %v", name, len(in), took)
	}
	return err
}

func TestHostileInputsStayBounded(t *testing.T) {
	for name, in := range hostile() {
		if len(in) > MaxSize {
			t.Fatalf("%s: %d bytes, more than MaxSize", name, len(in))
		}
		err := parseBounded(t, name, in)
		var errs *Errors
		if err != nil && !errors.As(err, &errs) {
			t.Errorf("%s: %T %v: not a located problem", name, err, err)
		}
		if err != nil && pipebench.ExitCode(err) != pipebench.ExitUsage {
			t.Errorf("%s: exit code %d", name, pipebench.ExitCode(err))
		}
	}
}

func BenchmarkHostile(b *testing.B) {
	for name, in := range hostile() {
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				Parse(name, []byte(in), Params{Registry: testRegistry()})
			}
		})
	}
}

func TestTooBigIsRefusedUnread(t *testing.T) {
	in := "name: x\n" + strings.Repeat("# padding\n", 2<<20/10)
	err := parseBounded(t, "big.yaml", in)
	want := "scenario big.yaml is not valid (1 problem):\n  big.yaml: the file is 2.0 MiB; a scenario may be at most 64 KiB: is it the right file?"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	// The 200 KB of '[' that took 45 s and 15 GB before the limits.
	if err := parseBounded(t, "brackets.yaml", strings.Repeat("[", 200<<10)); err == nil || !strings.Contains(err.Error(), "at most 64 KiB") {
		t.Errorf("200 KB of '[': %v", err)
	}
}

func TestByteOrderMarkIsText(t *testing.T) {
	in := "\uFEFFname: x\ntarget: {driver: http}\nphases: [{name: a, duration: 1s, rate: 1/s}]\n"
	if _, err := Parse("bom.yaml", []byte(in), params()); err != nil {
		t.Fatal(err)
	}
}

// secret_headers, durations and every other value decoded through
// UnmarshalText get ${VAR} too; before, the YAML library read them from the
// source text and the literal ${PB_TOKEN} went on the wire.
func TestEnvReachesTextUnmarshalers(t *testing.T) {
	type cfg struct {
		Secrets map[string]pipebench.Secret `yaml:"secret_headers"`
		Headers map[string]string           `yaml:"headers"`
		Timeout pipebench.Duration          `yaml:"timeout"`
		Token   pipebench.Secret            `yaml:"token"`
	}
	reg := testRegistry()
	reg.Drivers.Register(pipebench.Factory[pipebench.Driver]{Name: "x", NewConfig: func() any { return &cfg{} },
		New: func(any, pipebench.Env) (pipebench.Driver, error) { return nil, nil }})
	const tricky = `to"k\en -x: #y`
	src := `name: s
target:
  driver: x
  timeout: ${T}
  token: ${TOK}
  headers: {A: "x ${TOK}"}
  secret_headers: {Authorization: "Bearer ${TOK}", B: '${TOK}'}
phases: [{name: a, duration: 1s, rate: 1/s}]
`
	env := map[string]string{"TOK": tricky, "T": "3s"}
	sc, err := Parse("s.yaml", []byte(src), Params{Registry: reg, Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Target.Config.(*cfg)
	if got := c.Secrets["Authorization"].Reveal(); got != "Bearer "+tricky {
		t.Errorf("secret header %q", got)
	}
	if got := c.Secrets["B"].Reveal(); got != tricky {
		t.Errorf("single-quoted secret header %q", got)
	}
	if c.Token.Reveal() != tricky || c.Headers["A"] != "x "+tricky || c.Timeout.D() != 3*time.Second {
		t.Errorf("token %q headers %q timeout %v", c.Token.Reveal(), c.Headers, c.Timeout)
	}
}

// hostileSeeds are FuzzParse's seeds besides testdata: the hostile shapes
// and small odd inputs.
func hostileSeeds() [][]byte {
	var out [][]byte
	for _, in := range hostile() {
		out = append(out, []byte(in))
	}
	for _, in := range []string{
		"name: x\x00\n", "\xff\xfe", "a: &a [*a]\n", "- - - - [{[{\n", "name: \"${A:-}\"\n", "---\n---\n", "? [a]\n: b\n",
		"description: |\n  * not an alias\n", "\uFEFF", "a: !!binary aGVsbG8=\n", "{a: 1, a: 2}",
	} {
		out = append(out, []byte(in))
	}
	return out
}
