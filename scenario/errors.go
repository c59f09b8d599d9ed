package scenario

import (
	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
)

// Problem is one thing wrong with a scenario, located in its file.
type Problem = yamlnode.Problem

// Errors is every problem found in a scenario, in file order. It unwraps to
// a usage error, so pipebench.ExitCode maps it to exit code 2.
type Errors []Problem

// Error prints a heading and one problem per line.
func (e *Errors) Error() string { return yamlnode.Format("scenario", *e) }

// Unwrap returns the usage error that carries the exit code and a hint.
func (e *Errors) Unwrap() error {
	return &pipebench.Error{Code: pipebench.ExitUsage, Hint: "`pipebench schema` prints the whole format; examples/ has a file per feature"}
}

func (e *Errors) sort() { yamlnode.Sort(*e) }

// dedupe drops a problem found again at the same place (a bad default is
// met by every phase that takes it).
func (e *Errors) dedupe() {
	type at struct {
		line, col int
		msg       string
	}
	seen := map[at]bool{}
	out := (*e)[:0]
	for _, p := range *e {
		k := at{p.Line, p.Column, p.Msg}
		if p.Line > 0 && seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, p)
	}
	*e = out
}

// didYouMean formats a suggestion, or "".
func didYouMean(s string, valid []string) string { return pipebench.DidYouMean(s, valid) }
