// Package csvreport writes a Result as CSV: one row per phase and KPI.
package csvreport

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
)

// New returns the CSV reporter. Columns: run_id, scenario, version, case,
// phase, kpi, labels, value, unit.
func New() pipebench.Reporter {
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error {
		cw := csv.NewWriter(w)
		cw.Write([]string{"run_id", "scenario", "version", "case", "phase", "kpi", "labels", "value", "unit"})
		m := r.Manifest
		for _, p := range report.Phases(r) {
			for _, k := range p.KPIs {
				labels := ""
				if len(k.Labels) > 0 {
					labels = pipebench.KeyOf("", k.Labels)
				}
				cw.Write([]string{m.RunID, m.Scenario, m.Version, m.Case, p.Name, k.Name, labels,
					strconv.FormatFloat(k.Value, 'g', -1, 64), string(k.Unit)})
			}
		}
		cw.Flush()
		return cw.Error()
	})
}
