// Package markdown renders Results as the tables of the reference load-test
// reports: one row per version of the system under test, a column group per
// test case, a two-row header; with LayoutPhases, one row per phase; with
// LayoutRuns, one row per run and the columns a suite chose.
package markdown

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
)

// Agg says how a column reduces the KPIs of one name in a phase.
type Agg string

// The reductions.
const (
	AggValue     Agg = ""          // the unlabelled KPI
	AggSum       Agg = "sum"       // sum over instances or classes
	AggMax       Agg = "max"       // max over instances
	AggInstances Agg = "instances" // per instance, "225, 178"
)

// Column is one column of a group.
type Column struct {
	Header string // may hold {Item}: "Receiver Accepted {Item}s/sec"
	// KPI names the KPI shown, or one of the run's own values (Values):
	// "@case", "@duration", "@failure", "@label:cluster"...
	KPI string
	Agg Agg
	// Phase, when set, takes the KPI from the phase of that name rather
	// than from the cell's phase (LayoutRuns: rather than the run's total).
	Phase string
	// Unit, "ms" or "s", converts a KPI in seconds or milliseconds; "/min"
	// a rate per second.
	Unit string
	// Missing is what a cell says when its run has no such KPI (what was
	// not measured and how to get it); "" leaves it blank.
	Missing string
}

// Layout chooses the shape of the table.
type Layout string

// The layouts.
const (
	LayoutVersions Layout = ""       // rows = versions, groups = cases (the kyma reports)
	LayoutPhases   Layout = "phases" // rows = phases, one column group (the nvsentinel reports)
	LayoutRuns     Layout = "runs"   // rows = runs, one column group; the first column labels the row (the eventing report)
)

// Options tunes a table. Zero Columns picks the reference's columns when the
// results hold pipeline KPIs, and a generic set otherwise.
type Options struct {
	Columns []Column
	Layout  Layout
	// Status, when set, words each run against its baseline in columns
	// showing StatusValue (LayoutRuns).
	Status *Status
}

// Reference is the column set of the OpenTelemetry Collector KPI reports.
var Reference = []Column{
	{Header: "Receiver Accepted {Item}s/sec", KPI: "receiver_accepted_rate", Agg: AggSum},
	{Header: "Exporter Exported {Item}s/sec", KPI: "exporter_sent_rate", Agg: AggSum},
	{Header: "Exporter Queue Size", KPI: "exporter_queue_size.max", Agg: AggMax},
	{Header: "Pod Memory Usage(MB)", KPI: "memory_mb", Agg: AggInstances},
	{Header: "Pod CPU Usage", KPI: "cpu_cores", Agg: AggInstances},
}

// Generic is the column set for runs without pipeline observations.
var Generic = []Column{
	{Header: "Sent {Item}s/sec", KPI: "sent_rate", Agg: AggValue},
	{Header: "Accepted/sec", KPI: "accepted_rate", Agg: AggValue},
	{Header: "Delivered/sec", KPI: "delivered_rate", Agg: AggValue},
	{Header: "P99 (ms)", KPI: "latency.p99", Agg: AggValue},
	{Header: "E2E P99 (ms)", KPI: "e2e_latency.p99", Agg: AggValue},
	{Header: "Lost", KPI: "lost", Agg: AggValue},
	{Header: "Errors", KPI: "errors", Agg: AggSum},
}

// Blast is the column set of closed-model blasts, in the shape of the
// queue-depth reference: "Time to Complete | Peak Queue | Avg Rate".
var Blast = []Column{
	{Header: "Sent {Item}s", KPI: "sent", Agg: AggValue},
	{Header: "Time to Complete (s)", KPI: "time_to_complete", Agg: AggValue},
	{Header: "Peak Queue", KPI: "peak_backlog", Agg: AggValue},
	{Header: "Avg Rate ({Item}s/sec)", KPI: "completion_rate", Agg: AggValue},
	{Header: "Lost", KPI: "lost", Agg: AggValue},
	{Header: "Errors", KPI: "errors", Agg: AggSum},
}

// Grid is a built table: row labels, column groups, and cells[row][group][col].
type Grid struct {
	Corner  string
	Rows    []string
	Groups  []string
	Columns []Column
	Item    string
	Cells   [][][]string
	// Notes are footnotes printed below the table ("[^1]: ..."): why the
	// cells of a run marked INVALID (or ABORTED, RUNNING) do not count.
	Notes []string
	// sources[row][group] is the run the cells came from.
	sources [][]*pipebench.Result
}

// New returns the reporter for one Result: its phases as column groups,
// one row labelled with the version.
func New(o Options) pipebench.Reporter {
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error {
		switch o.Layout {
		case LayoutPhases:
			return Render(w, BuildPhases(r, o))
		case LayoutRuns:
			return Render(w, BuildRuns([]*pipebench.Result{r}, o))
		}
		g := Build([]*pipebench.Result{r}, o)
		if err := Render(w, g); err != nil {
			return err
		}
		return RenderStagesAfter(w, r)
	})
}

// Build makes the versions × cases grid of several results. Groups are the
// results' cases, split by phase when a case has more than one phase; the
// latest result wins when several share a version and a case.
func Build(results []*pipebench.Result, o Options) *Grid {
	g := &Grid{Corner: "Version/Test", Columns: columns(results, o)}
	type cell struct {
		row     string
		group   int
		r       *pipebench.Result
		p       *pipebench.PhaseResult
		started int64
	}
	seenRow, groupIdx := map[string]bool{}, map[string]int{}
	var cells []cell
	for _, r := range results {
		if g.Item == "" {
			g.Item = r.Manifest.Item
		}
		ver := r.Manifest.Version
		if ver == "" {
			ver = r.Manifest.Scenario
		}
		if !seenRow[ver] {
			seenRow[ver] = true
			g.Rows = append(g.Rows, ver)
		}
		caseName := r.Manifest.Case
		if caseName == "" {
			caseName = r.Manifest.Scenario
		}
		for i := range r.Phases {
			name := caseName
			if len(r.Phases) > 1 {
				if len(results) == 1 {
					name = r.Phases[i].Name
				} else {
					name = caseName + " / " + r.Phases[i].Name
				}
			}
			if _, ok := groupIdx[name]; !ok {
				groupIdx[name] = len(g.Groups)
				g.Groups = append(g.Groups, name)
			}
			cells = append(cells, cell{ver, groupIdx[name], r, &r.Phases[i], r.Manifest.Started.UnixNano()})
		}
	}
	sort.SliceStable(g.Rows, func(i, j int) bool { return VersionLess(g.Rows[i], g.Rows[j]) })
	rowIdx := map[string]int{}
	for i, r := range g.Rows {
		rowIdx[r] = i
	}
	g.Cells = make([][][]string, len(g.Rows))
	latest := make([][]int64, len(g.Rows))
	for i := range g.Cells {
		g.Cells[i] = make([][]string, len(g.Groups))
		latest[i] = make([]int64, len(g.Groups))
		for j := range latest[i] {
			latest[i][j] = math.MinInt64
		}
	}
	for _, c := range cells {
		row := rowIdx[c.row]
		if c.started < latest[row][c.group] {
			continue
		}
		latest[row][c.group] = c.started
		vals := make([]string, len(g.Columns))
		for j, col := range g.Columns {
			vals[j] = value(c.r, c.p, col)
		}
		g.Cells[row][c.group] = vals
		g.source(row, c.group, c.r)
	}
	g.markUnusable(false)
	return g
}

// VersionLess orders version labels by their numbers: 0.9 before 0.10.
func VersionLess(a, b string) bool {
	pa, pb := strings.FieldsFunc(a, splitVersion), strings.FieldsFunc(b, splitVersion)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			if na != nb {
				return na < nb
			}
			continue
		}
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func splitVersion(r rune) bool { return r == '.' || r == '-' || r == ' ' || r == 'v' }

// BuildPhases makes the one-result, one-row-per-phase table.
func BuildPhases(r *pipebench.Result, o Options) *Grid {
	g := &Grid{Corner: "Test", Columns: columns([]*pipebench.Result{r}, o), Item: r.Manifest.Item, Groups: []string{""}}
	for i := range r.Phases {
		g.Rows = append(g.Rows, r.Phases[i].Name)
		vals := make([]string, len(g.Columns))
		for j, col := range g.Columns {
			vals[j] = value(r, &r.Phases[i], col)
		}
		g.Cells = append(g.Cells, [][]string{vals})
		g.source(i, 0, r)
	}
	g.markUnusable(true)
	return g
}

// Table builds the table of runs (already in the order their column groups
// or rows should take) in o's layout: a row per version (Build), or with
// LayoutRuns a row per run (BuildRuns), versions in order and the order of
// runs kept within a version.
func Table(runs []*pipebench.Result, o Options) *Grid {
	if o.Layout != LayoutRuns {
		return Build(runs, o)
	}
	byVersion := append([]*pipebench.Result(nil), runs...)
	sort.SliceStable(byVersion, func(i, j int) bool {
		vi, vj := byVersion[i].Manifest.Version, byVersion[j].Manifest.Version
		return vi != vj && VersionLess(vi, vj)
	})
	return BuildRuns(byVersion, o)
}

// BuildRuns makes the one-row-per-run table, rows in the order given, the
// latest run kept when several share a version and a case. The first column
// labels the rows; values come from each run's total row unless a column
// names its phase. Without columns, the rows are labelled by case and the
// columns picked as Build picks them.
func BuildRuns(results []*pipebench.Result, o Options) *Grid {
	cols := o.Columns
	if len(cols) == 0 {
		cols = append([]Column{{Header: "Test", KPI: "@case"}}, columns(results, o)...)
	}
	cols = runColumns(cols, results)
	g := &Grid{Corner: cols[0].Header, Columns: cols[1:], Groups: []string{""}}
	base := o.Status.baselines(results)
	cell := func(r *pipebench.Result, p *pipebench.PhaseResult, c Column) string {
		if c.KPI == StatusValue {
			if o.Status == nil {
				return ""
			}
			return o.Status.word(r, base[r.Manifest.Version])
		}
		return value(r, p, c)
	}
	type key struct{ version, kase string }
	latest := map[key]*pipebench.Result{}
	for _, r := range results {
		k := key{r.Manifest.Version, caseOf(r)}
		if prev, ok := latest[k]; !ok || !r.Manifest.Started.Before(prev.Manifest.Started) {
			latest[k] = r
		}
	}
	for _, r := range results {
		if latest[key{r.Manifest.Version, caseOf(r)}] != r {
			continue
		}
		if g.Item == "" {
			g.Item = r.Manifest.Item
		}
		total := r.Total
		if total == nil && len(r.Phases) == 1 {
			total = &r.Phases[0]
		}
		g.Rows = append(g.Rows, cell(r, total, cols[0]))
		vals := make([]string, len(g.Columns))
		for j, col := range g.Columns {
			vals[j] = cell(r, total, col)
		}
		g.Cells = append(g.Cells, [][]string{vals})
		g.source(len(g.Rows)-1, 0, r)
	}
	g.markUnusable(true)
	return g
}

func caseOf(r *pipebench.Result) string {
	if r.Manifest.Case != "" {
		return r.Manifest.Case
	}
	return r.Manifest.Scenario
}

// value is one cell: a run's own value ("@..."), or a KPI of the column's
// phase when it names one, else of p.
func value(r *pipebench.Result, p *pipebench.PhaseResult, c Column) string {
	if strings.HasPrefix(c.KPI, "@") {
		return runValue(r, c.KPI)
	}
	if c.Phase != "" {
		p = nil
		for i := range r.Phases {
			if r.Phases[i].Name == c.Phase {
				p = &r.Phases[i]
				break
			}
		}
	}
	return explained(r, p, c)
}

func columns(results []*pipebench.Result, o Options) []Column {
	if len(o.Columns) > 0 {
		return o.Columns
	}
	blasts, phases := 0, 0
	for _, r := range results {
		for _, p := range r.Phases {
			if len(p.All("receiver_accepted_rate")) > 0 || len(p.All("exporter_sent_rate")) > 0 {
				return Reference
			}
			phases++
			if len(p.All("time_to_complete")) > 0 {
				blasts++
			}
		}
	}
	if blasts > 0 && blasts == phases {
		return Blast
	}
	return Generic
}

func cellValue(p *pipebench.PhaseResult, c Column) string {
	ks := p.All(c.KPI)
	if len(ks) == 0 {
		return ""
	}
	switch c.Agg {
	case AggSum:
		v, _ := report.Sum(p, c.KPI)
		return plain(v)
	case AggMax:
		m := math.Inf(-1)
		for _, k := range ks {
			m = math.Max(m, k.Value)
		}
		return plain(m)
	case AggInstances:
		sort.Slice(ks, func(i, j int) bool { return ks[i].Labels["instance"] < ks[j].Labels["instance"] })
		parts := make([]string, len(ks))
		for i, k := range ks {
			parts[i] = plain(k.Value)
		}
		return strings.Join(parts, ", ")
	}
	for _, k := range ks {
		if len(k.Labels) == 0 {
			return plain(k.Value)
		}
	}
	return plain(ks[0].Value)
}

// plain prints numbers as the reference tables do: whole numbers without
// separators, small values with one decimal.
func plain(v float64) string {
	switch {
	case math.Abs(v) >= 10 || v == math.Trunc(v):
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case math.Abs(v) >= 0.1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// Render writes a grid as a markdown table with the reference's two-row
// header: group names (spanning their columns) above column names.
func Render(w io.Writer, g *Grid) error {
	item := report.Title(g.Item)
	headers := make([]string, len(g.Columns))
	for i, c := range g.Columns {
		headers[i] = strings.ReplaceAll(c.Header, "{Item}", item)
	}
	var b strings.Builder
	single := len(g.Groups) == 1 && g.Groups[0] == ""
	line := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	if single {
		line(append([]string{g.Corner}, headers...))
		seps := []string{"---:"}
		for range headers {
			seps = append(seps, ":---:")
		}
		line(seps)
	} else {
		top := []string{g.Corner}
		seps := []string{"---:"}
		second := []string{""}
		for _, grp := range g.Groups {
			for i := range g.Columns {
				if i == 0 {
					top = append(top, grp)
				} else {
					top = append(top, "")
				}
				seps = append(seps, ":---:")
			}
			second = append(second, headers...)
		}
		line(top)
		line(seps)
		line(second)
	}
	for i, row := range g.Rows {
		cells := []string{row}
		for j := range g.Groups {
			vals := g.Cells[i][j]
			if vals == nil {
				vals = make([]string, len(g.Columns))
			}
			cells = append(cells, vals...)
		}
		line(cells)
	}
	renderNotes(&b, g)
	_, err := fmt.Fprint(w, b.String())
	return err
}
