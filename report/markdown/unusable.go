package markdown

import (
	"fmt"
	"strings"

	"github.com/pipebench/pipebench"
)

// A run whose numbers do not describe the system under test (an invalid
// run: the generator could not hold the plan, or nothing reached the
// target; a run stopped by a signal; a checkpoint of a run still going; a
// run in which pipebench failed) is never shown as if it were valid: its
// KPI cells are struck out (~~5439~~), its status is written where its
// cells start with a footnote reference (INVALID[^1]), and the footnote
// below the table gives its reason.

// unusableWord returns the status written on a run's cells, or "" when
// its numbers describe the system under test (passed, completed, failed).
func unusableWord(r *pipebench.Result) string {
	switch s := r.Manifest.Status; s {
	case pipebench.StatusInvalid, pipebench.StatusAborted, pipebench.StatusRunning, pipebench.StatusError:
		return strings.ToUpper(string(s))
	}
	return ""
}

// source records the run a row's (or a row's group's) cells came from, so
// that markUnusable can mark them in the table's order.
func (g *Grid) source(row, group int, r *pipebench.Result) {
	for len(g.sources) <= row {
		g.sources = append(g.sources, nil)
	}
	for len(g.sources[row]) <= group {
		g.sources[row] = append(g.sources[row], nil)
	}
	g.sources[row][group] = r
}

// markUnusable marks the cells of every unusable run, rows then groups,
// numbering footnotes in that order. labelRows puts the status on the row
// label (a row per run or per phase) rather than on the group's first cell
// (a row per version, a group per case). A run met again (its phases as
// groups or rows) is marked again with the same footnote.
func (g *Grid) markUnusable(labelRows bool) {
	notes := map[*pipebench.Result]string{}
	for i, row := range g.sources {
		for j, r := range row {
			if r == nil || i >= len(g.Cells) || j >= len(g.Cells[i]) {
				continue
			}
			word := unusableWord(r)
			if word == "" {
				continue
			}
			ref, seen := notes[r]
			if !seen {
				ref = fmt.Sprintf("[^%d]", len(notes)+1)
				notes[r] = ref
				g.Notes = append(g.Notes, ref+": "+footnote(r, word))
			}
			vals := g.Cells[i][j]
			for k, col := range g.Columns {
				if k < len(vals) && vals[k] != "" && !strings.HasPrefix(col.KPI, "@") {
					vals[k] = "~~" + vals[k] + "~~"
				}
			}
			switch {
			case labelRows:
				g.Rows[i] = strings.TrimSpace(g.Rows[i] + " " + word + ref)
			case len(vals) > 0:
				vals[0] = strings.TrimSpace(word + ref + " " + vals[0])
			}
		}
	}
}

// footnote says which run a mark stands for and why its numbers do not
// count.
func footnote(r *pipebench.Result, word string) string {
	m := r.Manifest
	who := strings.Join(nonEmpty(m.Version, caseOf(r)), ", ")
	why := "no reason recorded"
	if len(m.Reasons) > 0 {
		why = strings.Join(m.Reasons, "; ")
	}
	id := ""
	if m.RunID != "" {
		id = " (run " + m.RunID + ")"
	}
	return fmt.Sprintf("%s %s%s: %s. Its numbers do not describe the system under test: struck out here, left out of compare and gate.", who, word, id, why)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// renderNotes writes the grid's footnotes below the table.
func renderNotes(b *strings.Builder, g *Grid) {
	if len(g.Notes) == 0 {
		return
	}
	b.WriteString("\n")
	for _, n := range g.Notes {
		b.WriteString(n + "\n")
	}
}
