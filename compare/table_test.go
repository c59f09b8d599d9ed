package compare

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

// The gate's decision from a report: a regression exits 99 naming how
// many, a side without a valid run exits 98 with the counts, versions that
// share no case are a usage error, and no regression passes.
func TestGateDecision(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1010, 10.5), run("1", 990, 9.5)}
	worse := []*pipebench.Result{run("2", 1000, 14), run("2", 995, 14.2), run("2", 1005, 13.8)}
	same := []*pipebench.Result{run("2", 1000, 10), run("2", 1005, 10.4), run("2", 995, 9.6)}
	code := func(err error) int {
		var pe *pipebench.Error
		if err == nil {
			return 0
		}
		if errors.As(err, &pe) {
			return pe.Code
		}
		return -1
	}
	err := diff(t, base, worse, Options{Tolerance: 0.05}).Gate("1", "2", 3, 3, false)
	if code(err) != pipebench.ExitThresholds || !strings.Contains(err.Error(), "1 KPI(s) regressed") {
		t.Errorf("regression: %v", err)
	}
	if err := diff(t, base, same, Options{Tolerance: 0.05}).Gate("1", "2", 3, 3, false); code(err) != pipebench.ExitUndecided {
		t.Errorf("no regression, but replicates spread 5%% against a tolerance of 5%%: %v", err)
	}
	// Three clean replicates a side decide: every KPI the same, it passes.
	clean := []*pipebench.Result{run("1", 1000, 10), run("1", 1002, 10.05), run("1", 998, 9.95)}
	sameClean := []*pipebench.Result{run("2", 1001, 10.02), run("2", 999, 9.98), run("2", 1000, 10)}
	if err := diff(t, clean, sameClean, Options{Tolerance: 0.05}).Gate("1", "2", 3, 3, false); err != nil {
		t.Errorf("no regression, clean replicates: %v", err)
	}
	invalid := []*pipebench.Result{run("2", 10, 900)}
	invalid[0].Manifest.Status = pipebench.StatusInvalid
	err = diff(t, base, invalid, Options{}).Gate("1", "2", 3, 1, false)
	if code(err) != pipebench.ExitInvalid || !strings.Contains(err.Error(), `candidate "2" has 0 of 1`) {
		t.Errorf("no valid candidate: %v", err)
	}
	// Fail closed: a KPI seven times worse with one run a side is not
	// decided, and the gate does not pass (unless told to).
	one, oneWorse := base[:1], []*pipebench.Result{run("2", 1000, 70)}
	err = diff(t, one, oneWorse, Options{Tolerance: 0.10}).Gate("1", "2", 1, 1, false)
	if code(err) != pipebench.ExitUndecided || !strings.Contains(err.Error(), "not every KPI was decided") || !strings.Contains(err.Error(), "too few runs") {
		t.Errorf("one run a side: %v", err)
	}
	if err := diff(t, one, oneWorse, Options{Tolerance: 0.10}).Gate("1", "2", 1, 1, true); err != nil {
		t.Errorf("one run a side, undecided allowed: %v", err)
	}
	// One baseline replicate an outlier: too erratic to decide.
	outlier := []*pipebench.Result{run("1", 1000, 10), run("1", 1010, 10.2), run("1", 990, 70)}
	worse7 := []*pipebench.Result{run("2", 1000, 69), run("2", 995, 70), run("2", 1005, 71)}
	rep := diff(t, outlier, worse7, Options{Tolerance: 0.10})
	if err := rep.Gate("1", "2", 3, 3, false); code(err) != pipebench.ExitUndecided && code(err) != pipebench.ExitThresholds {
		t.Errorf("an outlier replicate: %v (%s)", err, rep.Undecided())
	}
	other := []*pipebench.Result{run("2", 1000, 10)}
	other[0].Manifest.Case = "another"
	err = diff(t, base, other, Options{}).Gate("1", "2", 3, 1, false)
	if code(err) != pipebench.ExitUsage || !strings.Contains(err.Error(), "share no scenario and case") {
		t.Errorf("nothing shared: %v", err)
	}
}

// The written report puts regressions first and ends with its notes.
func TestReportWrite(t *testing.T) {
	base := []*pipebench.Result{run("1", 1000, 10), run("1", 1010, 10.5), run("1", 990, 9.5)}
	cand := []*pipebench.Result{run("2", 1000, 14), run("2", 995, 14.2), run("2", 1005, 13.8)}
	bad := run("2", 10, 1)
	bad.Manifest.Status, bad.Manifest.RunID = pipebench.StatusInvalid, "x1"
	var out bytes.Buffer
	if err := diff(t, base, append(cand, bad), Options{Tolerance: 0.05}).Write(&out, "1", "2"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "2 against 1: 90% intervals") || !strings.HasPrefix(lines[1], "CASE") ||
		!strings.Contains(lines[2], "latency.p99") || !strings.Contains(lines[2], "worse") {
		t.Errorf("report:\n%s", out.String())
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "note: ") || !strings.Contains(out.String(), "run x1: invalid") {
		t.Errorf("notes:\n%s", out.String())
	}
}
