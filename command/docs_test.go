package command

// The documentation held to the code: README.md, ARCHITECTURE.md and
// docs/*.md name commands, flags, files, built-in scenarios and plug-ins,
// and link to each other. These tests fail when one of them names
// something that does not exist, so that a renamed flag or a moved file
// fails here instead of misleading a reader.

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/docs"
)

// repoRoot is the repository's root, from this package's folder.
const repoRoot = ".."

// docFiles reads README.md, ARCHITECTURE.md and every docs/*.md.
func docFiles(t *testing.T) []*docs.Page {
	t.Helper()
	ps, err := docs.Read(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// shellCommand is one simple command of a shell code block.
type shellCommand struct {
	words []string
	line  int
}

// shellCommands cuts shell text into simple commands: words with their
// quotes removed (a $(...) or <(...) kept whole, as one word's text),
// comments dropped, lines ended by a backslash joined, a new command at
// a line's end and at |, ||, &, && and ;, and redirections dropped with
// their targets. It is no shell: it reads what the documentation writes.
func shellCommands(text string, firstLine int) []shellCommand {
	var (
		cmds     []shellCommand
		cur      shellCommand
		word     strings.Builder
		inWord   bool
		skipNext bool // the next word is a redirection's target
		line     = firstLine
		rs       = []rune(text)
	)
	endWord := func() {
		if !inWord {
			return
		}
		if skipNext {
			skipNext = false
		} else {
			if len(cur.words) == 0 {
				cur.line = line
			}
			cur.words = append(cur.words, word.String())
		}
		word.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		if len(cur.words) > 0 {
			cmds = append(cmds, cur)
		}
		cur = shellCommand{}
		skipNext = false
	}
	// group copies a $(...) or <(...) whole, from the rune at i (the
	// opening parenthesis), and returns the index past its end.
	group := func(i int) int {
		depth := 0
		for ; i < len(rs); i++ {
			word.WriteRune(rs[i])
			switch rs[i] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return i + 1
				}
			case '\n':
				line++
			}
		}
		return i
	}
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case r == '\\' && i+1 < len(rs):
			if rs[i+1] == '\n' {
				line++
				i += 2
				continue
			}
			word.WriteRune(rs[i+1])
			inWord = true
			i += 2
		case r == '\n':
			endCmd()
			line++
			i++
		case r == ' ' || r == '\t':
			endWord()
			i++
		case r == '#' && !inWord:
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '\'':
			inWord = true
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				word.WriteRune(rs[i])
			}
			i++
		case r == '"':
			inWord = true
			for i++; i < len(rs) && rs[i] != '"'; {
				if rs[i] == '\\' && i+1 < len(rs) {
					word.WriteRune(rs[i+1])
					i += 2
					continue
				}
				if rs[i] == '$' && i+1 < len(rs) && rs[i+1] == '(' {
					word.WriteRune('$')
					i = group(i + 1)
					continue
				}
				word.WriteRune(rs[i])
				i++
			}
			i++
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			inWord = true
			word.WriteRune('$')
			i = group(i + 1)
		case r == '<' && i+1 < len(rs) && rs[i+1] == '(':
			inWord = true
			word.WriteRune('<')
			i = group(i + 1)
		case r == '|' || r == ';' || r == '&':
			endCmd()
			for i < len(rs) && (rs[i] == '|' || rs[i] == '&' || rs[i] == ';') {
				i++
			}
		case r == '>' || r == '<':
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset() // 2> and the like: the descriptor is no word
				inWord = false
			}
			endWord()
			for i < len(rs) && (rs[i] == '>' || rs[i] == '<' || rs[i] == '&') {
				i++
			}
			skipNext = true
		default:
			word.WriteRune(r)
			inWord = true
			i++
		}
	}
	endCmd()
	return cmds
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// pipebenchArgs returns the arguments of a command that runs pipebench
// (`pipebench ...`, `PATH/pipebench ...`, `go run ./cmd/pipebench ...`,
// after any VAR=value), and whether it is one.
func pipebenchArgs(words []string) ([]string, bool) {
	for len(words) > 0 && assignment.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil, false
	}
	if path.Base(words[0]) == "pipebench" {
		return words[1:], true
	}
	if len(words) > 2 && words[0] == "go" && words[1] == "run" {
		for i, w := range words[2:] {
			if strings.HasSuffix(path.Clean(w), "cmd/pipebench") {
				return words[3+i:], true
			}
		}
	}
	return nil, false
}

// newTree builds the command tree the CLI builds, writing nowhere.
func newTree(t *testing.T) *cobra.Command {
	t.Helper()
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	a := &app{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, reg: reg}
	return a.rootCommand()
}

// placeholder reports whether a file argument stands for the reader's own
// file rather than one of the repository: a name in capitals
// (FILE, SUITE.yaml, RESULT.json), or scenario.yaml, the name the
// commands' own usage lines give a scenario file.
func placeholder(arg string) bool {
	base := path.Base(arg)
	stem := strings.TrimSuffix(base, path.Ext(base))
	return strings.ToUpper(stem) == stem || base == "scenario.yaml" || base == "suite.yaml"
}

// docCommand is a pipebench command shown in the documentation.
type docCommand struct {
	where string
	args  []string
}

// docCommands returns every pipebench command of the documentation's
// shell code blocks (sh, bash, shell, console) and of the strings of its
// YAML code blocks (CI recipes). A block without a language that holds a
// line starting with "pipebench " is an error: it must say whether it is
// a command (sh) or output (text).
func docCommands(t *testing.T, files []*docs.Page) []docCommand {
	t.Helper()
	var out []docCommand
	add := func(f *docs.Page, text string, line int, yamlValue bool) {
		for _, c := range shellCommands(text, line) {
			// A YAML value "pipebench" alone is a name (an artifact's,
			// a limit's owner), not a command.
			if args, ok := pipebenchArgs(c.words); ok && (len(args) > 0 || !yamlValue) {
				out = append(out, docCommand{where: f.Where(c.line), args: args})
			}
		}
	}
	for _, f := range files {
		for _, b := range f.Blocks {
			switch b.Lang {
			case "sh", "bash", "shell", "console":
				add(f, b.Text, b.Line, false)
			case "yaml", "yml":
				for _, s := range yamlStrings(t, f.Where(b.Line), b.Text) {
					add(f, s, b.Line, true)
				}
			case "":
				for i, l := range strings.Split(b.Text, "\n") {
					if strings.HasPrefix(l, "pipebench ") {
						t.Errorf("%s: a code block without a language holds %q: write ```sh for commands, ```text for output", f.Where(b.Line+i), l)
					}
				}
			}
		}
	}
	return out
}

// yamlStrings returns every string of a YAML document, or nothing when
// the block is not a whole document (a fragment).
func yamlStrings(t *testing.T, where, text string) []string {
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	return out
}

// cheap reports whether a command is run for real: it sends nothing and
// takes a fraction of a second.
func cheap(cmd *cobra.Command) bool {
	switch cmd.CommandPath() {
	case "pipebench plan", "pipebench validate", "pipebench schema", "pipebench version", "pipebench suite list", "pipebench suite validate":
		return true
	}
	return false
}

// TestDocsCommandsParse: every pipebench command of a code block names a
// command of the real tree, with flags it has and values they take and
// the arguments it takes; plan, validate, schema, version, suite list and
// suite validate, and any --help, run for real and exit 0; every scenario
// or suite file a command names exists and validates.
func TestDocsCommandsParse(t *testing.T) {
	files := docFiles(t)
	cmds := docCommands(t, files)
	if len(cmds) < 40 {
		t.Fatalf("only %d pipebench commands found in the documentation: is the parser broken?", len(cmds))
	}
	refs := map[string]string{} // a scenario or suite named, by its first place
	suites := map[string]bool{}
	ran := 0
	for _, c := range cmds {
		root := newTree(t)
		cmd, rest, err := root.Find(c.args) // cobra's own lookup, as Execute does
		if err != nil {
			t.Errorf("%s: pipebench %s: %v", c.where, strings.Join(c.args, " "), err)
			continue
		}
		cmd.InitDefaultHelpFlag() // as cobra does before it parses
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: pipebench %s: %v", c.where, strings.Join(c.args, " "), err)
			continue
		}
		help, _ := cmd.Flags().GetBool("help")
		if !cmd.Runnable() && !help {
			t.Errorf("%s: pipebench %s names %q, a group of commands, not one", c.where, strings.Join(c.args, " "), cmd.CommandPath())
			continue
		}
		args := cmd.Flags().Args()
		if !help {
			for _, check := range []func() error{func() error { return cmd.ValidateArgs(args) }, cmd.ValidateRequiredFlags, cmd.ValidateFlagGroups} {
				if err := check(); err != nil {
					t.Errorf("%s: pipebench %s: %v", c.where, strings.Join(c.args, " "), err)
				}
			}
		}
		own := false
		files := map[string]bool{} // the arguments that are files of the repository
		use := strings.ToLower(cmd.Use)
		takesSuite, takesScenario := strings.Contains(use, "suite.yaml"), strings.Contains(use, "scenario.yaml")
		if !help && (takesSuite || takesScenario) {
			for _, a := range args {
				switch {
				case strings.HasPrefix(a, "builtin:"):
					if _, ok := refs[a]; !ok {
						refs[a] = c.where
					}
					suites[a] = suites[a] || takesSuite
				case placeholder(a):
					own = true
				default:
					if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(a))); err != nil {
						t.Errorf("%s: pipebench %s: %s is no file of the repository (a reader's own file is named in capitals, or scenario.yaml)", c.where, strings.Join(c.args, " "), a)
						continue
					}
					files[a] = true
					if _, ok := refs[a]; !ok {
						refs[a] = c.where
					}
					suites[a] = suites[a] || takesSuite
				}
			}
		}
		if (help || cheap(cmd)) && !own {
			real := append([]string(nil), c.args...)
			for i, a := range real {
				if files[a] {
					real[i] = filepath.Join(repoRoot, filepath.FromSlash(a))
				}
			}
			ran++
			if stdout, stderr, code := cli(t, real...); code != 0 {
				t.Errorf("%s: pipebench %s exited %d\nstdout:\n%s\nstderr:\n%s", c.where, strings.Join(c.args, " "), code, stdout, stderr)
			}
		}
	}
	checkRefsValidate(t, refs, suites)
	t.Logf("%d pipebench commands parsed, %d of them run; %d scenarios and suites they name validated", len(cmds), ran, len(refs))
}

// checkRefsValidate validates each scenario or suite named (suite
// validate plans every scenario of a suite).
func checkRefsValidate(t *testing.T, refs map[string]string, suites map[string]bool) {
	t.Helper()
	names := make([]string, 0, len(refs))
	for r := range refs {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		arg := r
		if !strings.HasPrefix(r, "builtin:") {
			arg = filepath.Join(repoRoot, filepath.FromSlash(r))
		}
		args := []string{"validate", arg}
		if suites[r] {
			args = []string{"suite", "validate", arg}
		}
		if stdout, stderr, code := cli(t, args...); code != 0 {
			t.Errorf("%s: %s does not validate (exit %d):\n%s%s", refs[r], r, code, stdout, stderr)
		}
	}
}

var (
	builtinRef = regexp.MustCompile(`builtin:([A-Za-z0-9][A-Za-z0-9_-]*)`)
	flagName   = regexp.MustCompile(`(?:^|[\s(\[|])(--[a-z][a-z0-9-]*)`)
)

// foreignFlags are flags of other programs the documentation names, each
// with the program it belongs to.
var foreignFlags = map[string]string{
	"--enable-feature": "prometheus",
	"--creds":          "nats bench",
	"--nkey":           "nats bench",
	"--describe":       "kafka-consumer-groups",
	"--config":         "an OpenTelemetry Collector binary",
	"--token":          "an example of a flag named like a secret",
}

// allFlags returns every flag of the tree (long names), hidden commands
// included.
func allFlags(root *cobra.Command) map[string]bool {
	out := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { out["--"+f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { out["--"+f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	out["--help"] = true // cobra adds it to each command as it runs
	return out
}

// commandOfSpan finds the command inline code names: the longest run of
// subcommand names from the root ("run", "k8s run" after "pipebench").
func commandOfSpan(root *cobra.Command, words []string) *cobra.Command {
	cmd := root
	for _, w := range words {
		next := (*cobra.Command)(nil)
		for _, s := range cmd.Commands() {
			if s.Name() == w || slices.Contains(s.Aliases, w) {
				next = s
			}
		}
		if next == nil {
			break
		}
		cmd = next
	}
	return cmd
}

// flagOf reports whether cmd has the flag --name (its own, or inherited).
func flagOf(cmd *cobra.Command, name string) bool {
	return cmd.Flag(strings.TrimPrefix(name, "--")) != nil || (name == "--help")
}

// TestDocsNameOnlyFlagsThatExist: every --flag written in the
// documentation's inline code is a flag of pipebench (or of the program
// foreignFlags names); one in a `pipebench COMMAND ...` span, or in the row
// of a table whose first cell names `pipebench COMMAND`, is a flag of that
// command; and every `pipebench ...` span names a command that exists.
func TestDocsNameOnlyFlagsThatExist(t *testing.T) {
	root := newTree(t)
	flags := allFlags(root)
	for _, f := range docFiles(t) {
		for _, l := range f.Prose {
			var rowCmds []*cobra.Command
			cells := strings.Split(l.Text, " | ")
			if strings.HasPrefix(l.Text, "| ") && len(cells) > 1 {
				for _, s := range docs.Spans(cells[0]) {
					if w := strings.Fields(s); len(w) > 1 && w[0] == "pipebench" {
						rowCmds = append(rowCmds, commandOfSpan(root, w[1:]))
					}
				}
			}
			for _, s := range docs.Spans(l.Text) {
				words := strings.Fields(s)
				var cmd *cobra.Command
				switch {
				case len(words) > 1 && words[0] == "pipebench":
					cmd = commandOfSpan(root, words[1:])
					if !strings.HasPrefix(words[1], "-") && cmd == root && !strings.ContainsAny(words[1], "[]|.") && strings.ToLower(words[1]) == words[1] {
						t.Errorf("%s: `%s`: pipebench has no command %q", f.Where(l.Line), s, words[1])
					}
				case len(words) > 1 && commandOfSpan(root, words[:1]) != root:
					// `run --shard I/N`, `report --help`: a command named
					// without "pipebench"
					cmd = commandOfSpan(root, words)
				}
				for _, m := range flagName.FindAllStringSubmatch(s, -1) {
					name := m[1]
					if _, ok := foreignFlags[name]; ok {
						continue
					}
					switch {
					case cmd != nil:
						if !flagOf(cmd, name) {
							t.Errorf("%s: `%s`: %s has no flag %s", f.Where(l.Line), s, cmd.CommandPath(), name)
						}
					case len(rowCmds) > 0:
						ok := false
						for _, c := range rowCmds {
							ok = ok || flagOf(c, name)
						}
						if !ok {
							t.Errorf("%s: %s is no flag of %s, the row's command", f.Where(l.Line), name, rowCmds[0].CommandPath())
						}
					case !flags[name]:
						t.Errorf("%s: `%s`: no command of pipebench has a flag %s", f.Where(l.Line), s, name)
					}
				}
			}
		}
	}
}

// repoPath returns the repository path a word of the documentation names,
// if it names one: a relative path whose first element is an entry of the
// repository's root (examples/..., ./driver/grpc, .ci/run), with a
// trailing /... or / dropped; "" for anything else (a URL, a media type, a
// label, a placeholder with <...>, a glob).
func repoPath(word string, top map[string]bool) string {
	w := strings.TrimRight(strings.TrimSpace(word), ".,;:)")
	w = strings.TrimPrefix(w, "./")
	if w == "" || strings.ContainsAny(w, "<>*…${}:@=?") || !strings.Contains(w, "/") || strings.HasPrefix(w, "/") || strings.HasPrefix(w, "~") {
		return ""
	}
	w = strings.TrimSuffix(strings.TrimSuffix(w, "/..."), "/")
	first, _, _ := strings.Cut(w, "/")
	if !top[first] {
		return ""
	}
	return w
}

// TestDocsNameOnlyFilesThatExist: every path of the repository the
// documentation writes in inline code or in a shell code block exists (a
// Go name after a package's path, as in `internal/residency.Collector`,
// is allowed), and every builtin:NAME is a built-in scenario or suite
// that validates.
func TestDocsNameOnlyFilesThatExist(t *testing.T) {
	entries, err := os.ReadDir(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		top[e.Name()] = true
	}
	exists := func(p string) bool {
		if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p))); err == nil {
			return true
		}
		// a Go name after a package's path: internal/residency.Collector
		if i := strings.LastIndex(p, "."); i > strings.LastIndex(p, "/") {
			if st, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p[:i]))); err == nil && st.IsDir() {
				return true
			}
		}
		return false
	}
	scenarios, suites := map[string]bool{}, map[string]bool{}
	for _, n := range builtins.ScenarioNames() {
		scenarios[strings.TrimPrefix(n, "builtin:")] = true
	}
	for _, n := range builtins.SuiteNames() {
		suites[strings.TrimPrefix(n, "builtin:")] = true
	}
	refs, isSuite := map[string]string{}, map[string]bool{}
	checked := 0
	for _, f := range docFiles(t) {
		var words []docs.Line
		for _, l := range f.Prose {
			for _, s := range docs.Spans(l.Text) {
				for _, w := range strings.Fields(s) {
					words = append(words, docs.Line{Text: w, Line: l.Line})
				}
			}
			for _, m := range builtinRef.FindAllStringSubmatch(l.Text, -1) {
				words = append(words, docs.Line{Text: m[0], Line: l.Line})
			}
		}
		for _, b := range f.Blocks {
			switch b.Lang {
			case "sh", "bash", "shell", "console":
				for _, c := range shellCommands(b.Text, b.Line) {
					for _, w := range c.words {
						words = append(words, docs.Line{Text: w, Line: c.line})
					}
				}
			}
			for i, l := range strings.Split(b.Text, "\n") {
				for _, m := range builtinRef.FindAllStringSubmatch(l, -1) {
					words = append(words, docs.Line{Text: m[0], Line: b.Line + i})
				}
			}
		}
		for _, w := range words {
			if m := builtinRef.FindStringSubmatch(w.Text); m != nil && strings.HasPrefix(w.Text, "builtin:") {
				name := m[1]
				switch {
				case name == "NAME":
				case scenarios[name] || suites[name]:
					if _, ok := refs["builtin:"+name]; !ok {
						refs["builtin:"+name] = f.Where(w.Line)
					}
					isSuite["builtin:"+name] = !scenarios[name]
				default:
					t.Errorf("%s: builtin:%s is no built-in scenario or suite", f.Where(w.Line), name)
				}
				continue
			}
			if p := repoPath(w.Text, top); p != "" {
				checked++
				if !exists(p) {
					t.Errorf("%s: %s: no such file or folder in the repository", f.Where(w.Line), w.Text)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d paths checked: is the parser broken?", checked)
	}
	checkRefsValidate(t, refs, isSuite)
	t.Logf("%d paths of the repository found; %d built-in scenarios and suites named, each validated", checked, len(refs))
}

// TestDocsScenarioExamplesValidate: a YAML code block of the
// documentation that is a whole scenario (it has phases:) validates, and
// one that is a whole suite (name: and scenarios:) passes suite validate.
func TestDocsScenarioExamplesValidate(t *testing.T) {
	n := 0
	for _, f := range docFiles(t) {
		for _, b := range f.Blocks {
			if b.Lang != "yaml" {
				continue
			}
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(b.Text), &doc); err != nil {
				continue
			}
			_, phases := doc["phases"]
			_, cases := doc["scenarios"]
			_, name := doc["name"]
			var args []string
			file := filepath.Join(t.TempDir(), "example.yaml")
			switch {
			case phases:
				args = []string{"validate", file}
			case cases && name:
				args = []string{"suite", "validate", file}
			default:
				continue
			}
			n++
			if err := os.WriteFile(file, []byte(b.Text), 0o600); err != nil {
				t.Fatal(err)
			}
			if stdout, stderr, code := cli(t, args...); code != 0 {
				t.Errorf("%s: the example does not pass `pipebench %s` (exit %d):\n%s%s", f.Where(b.Line), args[0], code, stdout, stderr)
			}
		}
	}
	if n < 2 {
		t.Errorf("only %d whole scenarios or suites found in the documentation's YAML blocks", n)
	}
}
