package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/compare"
	"github.com/pipebench/pipebench/report/markdown"
)

// The JSON every listing command prints with --format json (history,
// validate, compare, gate, suite list, suite validate): one object with
// "kind" naming the command and "format": 1; fields are only ever added
// under format 1. A number that is not finite (an interval that could not
// be computed) is null. show and plan print the Result and the Plan, as
// report --format json and plan --json do. docs/commands.md's "Output
// formats" describes each shape.
const jsonFormat = 1

// formatFlag adds --format text|json to a command that prints a table,
// with its completion.
func formatFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVar(format, "format", "text", "output: text (a table for people) or json (one JSON object, its shape documented and stable)")
	cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// checkFormat refuses a --format other than text or json.
func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return pipebench.UsageError(fmt.Sprintf("unknown --format %q", format), "valid formats: text, json", nil)
	}
	return nil
}

// writeJSON prints v indented, with a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// num is a float that prints null when it is not finite.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

type historyJSON struct {
	Kind   string       `json:"kind"`
	Format int          `json:"format"`
	Runs   []historyRun `json:"runs"`
}

type historyRun struct {
	ID       string    `json:"id"`
	Scenario string    `json:"scenario"`
	Version  string    `json:"version"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started"`
	Seconds  num       `json:"duration_s"`
}

type validateJSON struct {
	Kind      string              `json:"kind"`
	Format    int                 `json:"format"`
	Scenarios []validatedScenario `json:"scenarios"`
}

type validatedScenario struct {
	Ref    string `json:"ref"`
	OK     bool   `json:"ok"`
	Name   string `json:"name,omitempty"`
	Phases int    `json:"phases,omitempty"`
	Error  string `json:"error,omitempty"`
	Hint   string `json:"hint,omitempty"`
}

// errorParts is an error's message and hint, as printError prints them.
func errorParts(err error) (msg, hint string) {
	var pe *pipebench.Error
	if errors.As(err, &pe) {
		hint = pipebench.RedactText(pe.Hint)
	}
	return pipebench.RedactText(err.Error()), hint
}

type suitesJSON struct {
	Kind   string      `json:"kind"`
	Format int         `json:"format"`
	Suites []namedItem `json:"suites"`
}

type namedItem struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type suiteValidateJSON struct {
	Kind   string      `json:"kind"`
	Format int         `json:"format"`
	Suite  string      `json:"suite"`
	Cases  []suiteCase `json:"cases"`
}

type suiteCase struct {
	Case     string `json:"case"`
	Scenario string `json:"scenario"`
	Version  string `json:"version"`
	Seconds  num    `json:"duration_s"`
}

// tableJSON is a comparison's table: rows (versions or runs), column
// groups (cases or phases), columns, and cells[row][group][column].
type tableJSON struct {
	Corner  string       `json:"corner"`
	Rows    []string     `json:"rows"`
	Groups  []string     `json:"groups"`
	Columns []string     `json:"columns"`
	Cells   [][][]string `json:"cells"`
	Notes   []string     `json:"notes,omitempty"`
}

func tableOf(g *markdown.Grid) tableJSON {
	t := tableJSON{Corner: g.Corner, Rows: g.Rows, Groups: g.Groups, Cells: g.Cells, Notes: g.Notes}
	for _, c := range g.Columns {
		t.Columns = append(t.Columns, c.Header)
	}
	return t
}

type verdictJSON struct {
	KPI        string `json:"kpi"`
	Scenario   string `json:"scenario"`
	Case       string `json:"case,omitempty"`
	Phase      string `json:"phase,omitempty"`
	Baseline   num    `json:"baseline"`
	Candidate  num    `json:"candidate"`
	Change     num    `json:"change"`
	Low        num    `json:"low"`
	High       num    `json:"high"`
	Confidence num    `json:"confidence"`
	Tolerance  num    `json:"tolerance"`
	CV         [2]num `json:"cv"`
	Runs       [2]int `json:"runs"`
	Judgement  string `json:"judgement"`
	Reason     string `json:"reason,omitempty"`
}

type excludedJSON struct {
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	Version  string `json:"version"`
	Case     string `json:"case,omitempty"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
}

// diffJSON is one comparison: the versions, the runs used and left out,
// and a verdict per KPI.
type diffJSON struct {
	Baseline  string         `json:"baseline"`
	Candidate string         `json:"candidate"`
	Usable    [2]int         `json:"usable_runs"`
	Verdicts  []verdictJSON  `json:"verdicts"`
	Excluded  []excludedJSON `json:"excluded"`
}

func diffOf(rep *compare.Report, base, cand string) *diffJSON {
	d := &diffJSON{Baseline: base, Candidate: cand, Usable: rep.Usable, Verdicts: []verdictJSON{}, Excluded: []excludedJSON{}}
	for _, v := range rep.Verdicts {
		d.Verdicts = append(d.Verdicts, verdictJSON{KPI: v.KPI, Scenario: v.Scenario, Case: v.Case, Phase: v.Phase, Baseline: num(v.Baseline),
			Candidate: num(v.Candidate), Change: num(v.Change), Low: num(v.Low), High: num(v.High), Confidence: num(v.Confidence),
			Tolerance: num(v.Tolerance), CV: [2]num{num(v.CV[0]), num(v.CV[1])}, Runs: v.Runs, Judgement: string(v.Judgement), Reason: v.Reason})
	}
	for _, e := range rep.Excluded {
		d.Excluded = append(d.Excluded, excludedJSON{RunID: e.RunID, Scenario: e.Scenario, Version: e.Version, Case: e.Case, Status: string(e.Status), Reason: e.Reason})
	}
	return d
}

type compareJSON struct {
	Kind   string         `json:"kind"`
	Format int            `json:"format"`
	Groups []compareGroup `json:"groups"`
}

// compareGroup is one table: a scenario's runs (or a suite's), and the
// comparison of its candidate with its baseline (null with one version).
type compareGroup struct {
	Scenario string    `json:"scenario,omitempty"`
	Table    tableJSON `json:"table"`
	Diff     *diffJSON `json:"diff"`
}

type gateJSON struct {
	Kind      string `json:"kind"`
	Format    int    `json:"format"`
	Passed    bool   `json:"passed"`
	ExitCode  int    `json:"exit_code"`
	Message   string `json:"message,omitempty"`
	Undecided string `json:"undecided,omitempty"`
	*diffJSON
}
