package csvreport_test

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/pipebench/pipebench"
	csvreport "github.com/pipebench/pipebench/report/csv"
)

// Names and labels come from the scenario: a cell a spreadsheet would run
// as a formula is written as text; numbers (negative ones too) stay
// numbers.
func TestFormulaCellsAreText(t *testing.T) {
	p := pipebench.PhaseResult{Name: "=HYPERLINK(\"http://x\")"}
	p.Set(pipebench.KPI{Name: "sent", Value: 10, Unit: pipebench.UnitCount, Labels: map[string]string{"instance": "@SUM(A1)"}})
	p.Set(pipebench.KPI{Name: "drift", Value: -0.5})
	res := &pipebench.Result{Manifest: pipebench.Manifest{RunID: "r", Scenario: "+cmd|' /C calc'!A0", Version: "-1+1", Case: "\tx"}, Phases: []pipebench.PhaseResult{p}}
	var b bytes.Buffer
	if err := csvreport.New().Report(&b, res); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows[1:] {
		for i, cell := range row {
			if i == 7 { // the value column: a number
				continue
			}
			if cell != "" && bytes.ContainsRune([]byte("=+-@\t\r"), rune(cell[0])) {
				t.Errorf("cell %d %q would run as a formula", i, cell)
			}
		}
	}
	if rows[2][7] != "-0.5" {
		t.Errorf("a negative number became %q", rows[2][7])
	}
}
