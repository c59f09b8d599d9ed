// Package markdown renders Results as the tables of the reference load-test
// reports: one row per version of the system under test, a column group per
// test case, a two-row header; or, with LayoutPhases, one row per phase.
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
	KPI    string
	Agg    Agg
}

// Layout chooses the shape of the table.
type Layout string

// The layouts.
const (
	LayoutVersions Layout = ""       // rows = versions, groups = cases (the kyma reports)
	LayoutPhases   Layout = "phases" // rows = phases, one column group (the nvsentinel reports)
)

// Options tunes a table. Zero Columns picks the reference's columns when the
// results hold pipeline KPIs, and a generic set otherwise.
type Options struct {
	Columns []Column
	Layout  Layout
}

// Reference is the column set of the OpenTelemetry Collector KPI reports.
var Reference = []Column{
	{"Receiver Accepted {Item}s/sec", "receiver_accepted_rate", AggSum},
	{"Exporter Exported {Item}s/sec", "exporter_sent_rate", AggSum},
	{"Exporter Queue Size", "exporter_queue_size.max", AggMax},
	{"Pod Memory Usage(MB)", "memory_mb", AggInstances},
	{"Pod CPU Usage", "cpu_cores", AggInstances},
}

// Generic is the column set for runs without pipeline observations.
var Generic = []Column{
	{"Sent {Item}s/sec", "sent_rate", AggValue},
	{"Accepted/sec", "accepted_rate", AggValue},
	{"Delivered/sec", "delivered_rate", AggValue},
	{"P99 (ms)", "latency.p99", AggValue},
	{"E2E P99 (ms)", "e2e_latency.p99", AggValue},
	{"Lost", "lost", AggValue},
	{"Errors", "errors", AggSum},
}

// Blast is the column set of closed-model blasts, in the shape of the
// queue-depth reference: "Time to Complete | Peak Queue | Avg Rate".
var Blast = []Column{
	{"Sent {Item}s", "sent", AggValue},
	{"Time to Complete (s)", "time_to_complete", AggValue},
	{"Peak Queue", "peak_backlog", AggValue},
	{"Avg Rate ({Item}s/sec)", "completion_rate", AggValue},
	{"Lost", "lost", AggValue},
	{"Errors", "errors", AggSum},
}

// Grid is a built table: row labels, column groups, and cells[row][group][col].
type Grid struct {
	Corner  string
	Rows    []string
	Groups  []string
	Columns []Column
	Item    string
	Cells   [][][]string
}

// New returns the reporter for one Result: its phases as column groups,
// one row labelled with the version.
func New(o Options) pipebench.Reporter {
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error {
		if o.Layout == LayoutPhases {
			return Render(w, BuildPhases(r, o))
		}
		g := Build([]*pipebench.Result{r}, o)
		return Render(w, g)
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
			cells = append(cells, cell{ver, groupIdx[name], &r.Phases[i], r.Manifest.Started.UnixNano()})
		}
	}
	sort.SliceStable(g.Rows, func(i, j int) bool { return versionLess(g.Rows[i], g.Rows[j]) })
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
			vals[j] = cellValue(c.p, col)
		}
		g.Cells[row][c.group] = vals
	}
	return g
}

func versionLess(a, b string) bool {
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
			vals[j] = cellValue(&r.Phases[i], col)
		}
		g.Cells = append(g.Cells, [][]string{vals})
	}
	return g
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
	_, err := fmt.Fprint(w, b.String())
	return err
}
