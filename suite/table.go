package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report/markdown"
	"github.com/pipebench/pipebench/store"
)

// TableOptions are the markdown options of the suite's own table (its
// table: block); a suite without one gets the default versions × cases
// table. s may be nil.
func (s *Suite) TableOptions() markdown.Options {
	var o markdown.Options
	if s == nil || s.Table == nil {
		return o
	}
	if s.Table.Rows == RowsRun {
		o.Layout = markdown.LayoutRuns
	}
	for _, c := range s.Table.Columns {
		o.Columns = append(o.Columns, markdown.Column{Header: c.Title, KPI: c.Value, Phase: c.Phase, Agg: markdown.Agg(c.Agg), Unit: c.Unit, Missing: c.Missing})
	}
	return o
}

// statusOptions are the markdown options of the suite's status rules (nil
// without a status: block).
func (s *Suite) statusOptions() *markdown.Status {
	if s.Status == nil {
		return nil
	}
	st := &markdown.Status{Baseline: s.Baseline(), KPI: s.Status.KPI, Phase: s.Status.Phase, Otherwise: s.Status.Otherwise, Invalid: s.Status.Invalid, Saturated: s.Status.Saturated}
	for _, r := range s.Status.Rules {
		st.Rules = append(st.Rules, markdown.StatusRule{Word: r.Word, Above: r.Above})
	}
	return st
}

// WriteTable writes the table of a suite's runs under a "## NAME"
// heading: its finished runs in the order of the cases of plans, in the
// shape the suite's table: asks for (default versions × cases) with its
// status rules, then the stage breakdown of the latest run of each case
// of the plans' version.
func (s *Suite) WriteTable(w io.Writer, plans []pipebench.Plan, runs []*pipebench.Result) error {
	runs = Order(Finished(runs), plans)
	if len(runs) == 0 {
		_, err := fmt.Fprintf(w, "suite %s: no finished case to show\n", s.Name)
		return err
	}
	fmt.Fprintf(w, "\n## %s\n\n", s.Name)
	o := s.TableOptions()
	o.Status = s.statusOptions()
	err := markdown.Render(w, markdown.Table(runs, o))
	for _, r := range Latest(runs, plans[0].Version) {
		if err == nil {
			err = markdown.RenderStagesAfter(w, r)
		}
	}
	return err
}

// CaseFiles names each case's Result file in dir, NN-CASE.json ("" for
// every case when dir is ""), making dir if needed (readable by its owner
// only, as the Results are).
func CaseFiles(dir string, plans []pipebench.Plan) ([]string, error) {
	out := make([]string, len(plans))
	if dir == "" {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("cannot make the --out folder %s", dir), "give a folder that can be created and written to", err)
	}
	for i, p := range plans {
		out[i] = filepath.Join(dir, fmt.Sprintf("%02d-%s.json", i+1, slug(p.Case)))
	}
	return out, nil
}

// slug makes a case name a file name: lower case, runs of anything but
// letters and digits turned into one dash.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimSuffix(b.String(), "-")
	if out == "" {
		return "case"
	}
	return out
}

// ReadHistory opens the results history storeRef (see store.Open) and
// reads the runs of the suite called name from it (see History). It reads
// even when ctx is cancelled (a suite stopped by Ctrl-C still prints the
// table of what it kept), for a minute at the most.
func ReadHistory(ctx context.Context, storeRef, name string, scenarios []string) ([]*pipebench.Result, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, storeRef)
	if err != nil {
		return nil, pipebench.UsageError("cannot open the results history", "check --store (a SQLite file path)", err)
	}
	defer st.Close()
	return History(ctx, st, name, scenarios)
}
