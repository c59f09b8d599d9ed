package scenario

import (
	"fmt"
	"strings"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/yamlnode"
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

// suggest returns the nearest of valid to s (edit distance <= 2, or a
// prefix), or "".
func suggest(s string, valid []string) string {
	best, bestD := "", 3
	for _, v := range valid {
		d := distance(strings.ToLower(s), strings.ToLower(v))
		if d < bestD {
			best, bestD = v, d
		}
	}
	if best == "" && len(s) >= 3 {
		for _, v := range valid {
			if strings.HasPrefix(v, s) || strings.HasPrefix(s, v) {
				return v
			}
		}
	}
	return best
}

// distance is the Damerau-Levenshtein (optimal string alignment) distance.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// didYouMean formats a suggestion, or "".
func didYouMean(s string, valid []string) string {
	if m := suggest(s, valid); m != "" {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
}
