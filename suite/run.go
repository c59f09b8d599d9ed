package suite

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
)

// RunParams say how a suite's plans run and where what they give goes.
type RunParams struct {
	// Exec are every case's run parameters (execute.Run); Keep.Out is
	// set for each case from Outs, Progress and Show are set from Live.
	Exec execute.Params
	// Outs name each case's Result file (see CaseFiles); nil: none.
	Outs []string
	// Live shows each case as it goes (nil: nothing).
	Live *execute.Live
	// Cut is done at a second signal (see execute.Signals): Live's last
	// scrape is not waited for.
	Cut context.Context
	// Log is told each case's start and end, and why a case or the suite
	// stopped; Problem, each error (nil: written to Log).
	Log     io.Writer
	Problem func(error)
	// Table receives the suite's table at the end (see WriteTable): the
	// runs of this suite in the history (Exec.Keep.Store), every version,
	// or with Exec.Keep.NoStore this call's runs only.
	Table io.Writer
}

// Run runs the suite's plans in turn, each as any run is (execute.Run:
// its Result kept in its file and the history), then writes the table.
// A suite stopped halfway (ctx done) keeps the cases it finished and
// still writes the table of what it kept. It returns the cases' Results
// and the exit code: the highest of the cases', ExitFailure when the
// suite stopped before its end or its table could not be written.
func (s *Suite) Run(ctx context.Context, plans []pipebench.Plan, p RunParams) ([]*pipebench.Result, int) {
	log := p.Log
	if log == nil {
		log = io.Discard
	}
	problem := p.Problem
	if problem == nil {
		problem = func(err error) { fmt.Fprintf(log, "pipebench: %v\n", err) }
	}
	if s.SUT == SUTKeep {
		// One system under test for every case.
		keeper := NewKeeper()
		defer keeper.Close(context.Background())
		p.Exec.Registry = keeper.Wrap(p.Exec.Registry)
	}
	LabelLifetime(s, plans)
	var mine []*pipebench.Result
	code := pipebench.ExitOK
	for i, plan := range plans {
		if ctx.Err() != nil {
			break
		}
		if i > 0 {
			p.Live.Next(plan)
		}
		fmt.Fprintf(log, "\ncase %d/%d: %s (%s, %s)\n", i+1, len(plans), plan.Case, plan.Scenario, pipebench.FormatDuration(plan.Duration()))
		ep := p.Exec
		if i < len(p.Outs) {
			ep.Keep.Out = p.Outs[i]
		}
		ep.Progress = p.Live.Update
		ep.Show = func(res *pipebench.Result) error {
			p.Live.Finish(res)
			fmt.Fprintf(log, "case %d/%d: %s: %s\n", i+1, len(plans), plan.Case, res.Manifest.Status)
			return nil
		}
		out := execute.Run(ctx, plan, ep)
		if out.Result != nil {
			mine = append(mine, out.Result)
		}
		if out.Err != nil {
			problem(fmt.Errorf("case %s: %w", plan.Case, out.Err))
		}
		code = max(code, s.caseCode(plan.Case, out, log))
	}
	p.Live.Close(p.Cut, log)
	s.sayExpected(log)
	if done := len(Finished(mine)); ctx.Err() != nil && done < len(plans) {
		fmt.Fprintf(log, "\nsuite %s stopped: %d of %d case(s) finished and kept\n", s.Name, done, len(plans))
		code = max(code, pipebench.ExitFailure)
	}
	table := Finished(mine)
	if !p.Exec.Keep.NoStore {
		var names []string
		for _, pl := range plans {
			names = append(names, pl.Scenario)
		}
		if hist, err := ReadHistory(ctx, p.Exec.Keep.Store, s.Name, names); err != nil {
			problem(fmt.Errorf("read the suite's earlier runs: %w", err))
		} else {
			table = hist
		}
	}
	if p.Table != nil {
		if err := s.WriteTable(p.Table, plans, table); err != nil {
			problem(err)
			code = max(code, pipebench.ExitFailure)
		}
	}
	return mine, code
}

// caseCode is a case's part of the suite's exit code: its run's, or, for
// a case that states the outcome it expects, 0 when it did what it
// expected and the run's code (ExitThresholds when that is 0) when it did
// not, said on log. A run cut short by a signal keeps its code.
func (s *Suite) caseCode(caseName string, out execute.Outcome, log io.Writer) int {
	e := s.expects[caseName]
	if e == nil || out.Result == nil || out.Code == pipebench.ExitFailure || out.Code == pipebench.ExitCut {
		return out.Code
	}
	unmet := e.Unmet(out.Result)
	if len(unmet) == 0 {
		fmt.Fprintf(log, "case %s: did what it expects (%s)\n", caseName, e)
		s.met = append(s.met, caseName)
		return pipebench.ExitOK
	}
	fmt.Fprintf(log, "case %s: expected %s, but: %s\n", caseName, e, strings.Join(unmet, "; "))
	s.unmet = append(s.unmet, caseName)
	if out.Code == pipebench.ExitOK {
		return pipebench.ExitThresholds
	}
	return out.Code
}

// sayExpected names, at the end of a suite, the cases that did and did
// not do what they expect.
func (s *Suite) sayExpected(log io.Writer) {
	if len(s.met) > 0 {
		fmt.Fprintf(log, "\n%d case(s) did what they expect: %s\n", len(s.met), strings.Join(s.met, ", "))
	}
	if len(s.unmet) > 0 {
		fmt.Fprintf(log, "%d case(s) did not do what they expect: %s\n", len(s.unmet), strings.Join(s.unmet, ", "))
	}
}
