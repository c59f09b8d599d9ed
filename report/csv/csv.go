// Package csvreport writes a Result as CSV: one row per phase and KPI.
package csvreport

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

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
				cw.Write([]string{Cell(m.RunID), Cell(m.Scenario), Cell(m.Version), Cell(m.Case), Cell(p.Name), Cell(k.Name), Cell(labels),
					strconv.FormatFloat(k.Value, 'g', -1, 64), string(k.Unit)})
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// Cell makes a text cell safe to open in a spreadsheet: text that a
// spreadsheet would run as a formula (starting with =, +, -, @, a tab or a
// carriage return: names and labels come from the scenario) gets a
// leading apostrophe, which spreadsheets show as text.
func Cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
