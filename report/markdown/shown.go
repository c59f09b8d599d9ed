package markdown

import (
	"strings"

	"github.com/pipebench/pipebench"
)

// TotalRow is the Phase of a Shown KPI taken from each run's total row
// (the one phase of a run without one), as a row-per-run table reads a
// column that names no phase.
const TotalRow = "total"

// Shown is one KPI a table shows: its name, the phase its cells come from
// ("" for each phase the table has as a column group or row; TotalRow for
// each run's total) and how it reduces several instances (AggValue, AggSum,
// AggMax, AggInstances).
type Shown struct {
	KPI   string
	Phase string
	Agg   Agg
}

// ShownKPIs returns the KPIs the table of these results shows with these
// options, in column order, without the run's own values (@case,
// @status...): what a comparison of the same runs should judge. The
// columns are the options' or, without them, those Build picks for the
// results (the reference's, a blast's or the generic set).
func ShownKPIs(results []*pipebench.Result, o Options) []Shown {
	var out []Shown
	for _, c := range columns(results, o) {
		if strings.HasPrefix(c.KPI, "@") {
			continue
		}
		phase := c.Phase
		if phase == "" && o.Layout == LayoutRuns {
			phase = TotalRow
		}
		out = append(out, Shown{KPI: c.KPI, Phase: phase, Agg: c.Agg})
	}
	return out
}
