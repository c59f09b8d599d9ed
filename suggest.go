package pipebench

import (
	"fmt"
	"strings"
)

// Suggest returns the nearest of valid to s (edit distance at most 2,
// ignoring case, or a prefix either way when s has 3 letters or more), or
// "" when none is near.
func Suggest(s string, valid []string) string {
	best, bestD := "", 3
	for _, v := range valid {
		if d := distance(strings.ToLower(s), strings.ToLower(v)); d < bestD {
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

// DidYouMean formats Suggest's answer as ` (did you mean "x"?)`, or "".
func DidYouMean(s string, valid []string) string {
	if m := Suggest(s, valid); m != "" {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
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
