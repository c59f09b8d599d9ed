package suite

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/store"
)

// PlanParams says how a suite's scenarios become plans.
type PlanParams struct {
	// Version labels every run; "" the suite's own version (and, without
	// one, each scenario's).
	Version string
	// Duration, when DurationSet, scales every scenario to last this long,
	// over the entries' own durations.
	Duration    time.Duration
	DurationSet bool
	// Compile reads the scenario ref (a file or builtin:NAME) and compiles
	// it, scaled to total when scale is true and labelled version when it
	// is not "".
	Compile func(ref string, total time.Duration, scale bool, version string) (pipebench.Plan, error)
	// Values are the run values ("@case") a table column may name, for
	// CheckTable; nil skips the check.
	Values []string
	// KPI, when set, says why a table column's KPI is one no run ever
	// has (a name of a family pipebench computes that it never computes,
	// like e2e_latency.p42), nil when it may be.
	KPI func(name string) error
	// Builds, when not empty, replace the suite's own builds (the command
	// line's --build VERSION=COMMAND).
	Builds []Build
	// Note, if set, is told what planning decided that a person should
	// know (a case that runs once because --duration made two entries
	// one).
	Note func(string)
}

// Plans compiles every scenario the suite names, so that a mistake in the
// fourth is found before the first runs. Each plan carries the suite's
// version, its case (the entry's, else the scenario's case, else its name:
// unique within the suite) and the label suite=NAME.
func (s *Suite) Plans(p PlanParams) ([]pipebench.Plan, error) {
	if err := s.CheckTable(p.Values); err != nil {
		return nil, err
	}
	if err := s.CheckKPIs(p.KPI); err != nil {
		return nil, err
	}
	builds := p.Builds
	if len(builds) == 0 {
		builds = s.Builds
	}
	if len(builds) == 0 {
		version := p.Version
		if version == "" {
			version = s.Version
		}
		return s.plansOf(p, version, nil)
	}
	if s.SUT == SUTKeep {
		return nil, pipebench.UsageError("sut: keep runs one system under test for every case; builds each need their own", "leave out sut: keep, or the builds", nil)
	}
	if p.Version != "" {
		return nil, pipebench.UsageError("--sut-version and the builds both label the versions", "leave out --sut-version: each build's version labels its runs", nil)
	}
	var plans []pipebench.Plan
	for i := range builds {
		ps, err := s.plansOf(p, builds[i].Version, &builds[i])
		if err != nil {
			return nil, err
		}
		plans = append(plans, ps...)
	}
	return plans, nil
}

// plansOf compiles every scenario under version, its system under test
// running build's command when build is not nil.
func (s *Suite) plansOf(p PlanParams, version string, build *Build) ([]pipebench.Plan, error) {
	var plans []pipebench.Plan
	caseAt := map[string]int{}
	for i, e := range s.Entries {
		where := fmt.Sprintf("%s:%d: scenarios[%d]", s.File, e.Line, i)
		total, set := e.Duration.D(), e.Duration > 0
		if p.DurationSet {
			total, set = p.Duration, true
		}
		plan, err := p.Compile(e.Scenario, total, set, version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if build != nil {
			if err := setCommand(&plan, build); err != nil {
				return nil, pipebench.UsageError(fmt.Sprintf("%s: build %s: %v", where, build.Version, err),
					"builds run a system under test that has a command: key (otelcol, with config_file) in every scenario", nil)
			}
		}
		if e.Case != "" {
			plan.Case = CaseName(e.Case, plan)
		}
		if plan.Case == "" {
			plan.Case = plan.Scenario
		}
		if prev, dup := caseAt[plan.Case]; dup && s.Entries[prev].Scenario == e.Scenario && e.Case != plan.Case {
			// --duration made two entries one case ("... {load}"): run it once.
			if p.Note != nil {
				p.Note(fmt.Sprintf("%s: case %q runs once (scenarios[%d] is the same at this duration)", where, plan.Case, prev))
			}
			continue
		}
		if prev, dup := caseAt[plan.Case]; dup {
			return nil, pipebench.UsageError(fmt.Sprintf("%s: case %q is also the case of scenarios[%d]", where, plan.Case, prev),
				"give each entry its own case: label, so that each is its own column group", nil)
		}
		caseAt[plan.Case] = i
		labels := map[string]string{}
		for k, v := range plan.Labels {
			labels[k] = v
		}
		labels[LabelKey] = s.Name
		plan.Labels = labels
		plans = append(plans, plan)
		if e.Expect != nil {
			if s.expects == nil {
				s.expects = map[string]*Expect{}
			}
			s.expects[plan.Case] = e.Expect
		}
	}
	return plans, nil
}

// setCommand makes plan's system under test run build's command.
func setCommand(plan *pipebench.Plan, build *Build) error {
	if plan.SUT == nil {
		return fmt.Errorf("the scenario has no system under test to run the build")
	}
	cs, ok := plan.SUT.Config.(pipebench.CommandSetter)
	if !ok {
		return fmt.Errorf("its system under test (%s) runs no program of yours", plan.SUT.Type)
	}
	return cs.SetCommand(build.Command)
}

// VersionsOf says which versions plans run: `version "X"`, or `versions
// "X", "Y"` in the order they run.
func VersionsOf(plans []pipebench.Plan) string {
	var vs []string
	for _, p := range plans {
		if !slices.Contains(vs, strconv.Quote(p.Version)) {
			vs = append(vs, strconv.Quote(p.Version))
		}
	}
	if len(vs) == 1 {
		return "version " + vs[0]
	}
	return "versions " + strings.Join(vs, ", ")
}

// ParseBuild reads a build from the command line: VERSION=COMMAND.
func ParseBuild(s string) (Build, error) {
	v, c, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(v) == "" || strings.TrimSpace(c) == "" {
		return Build{}, pipebench.UsageError(fmt.Sprintf("--build %q is not VERSION=COMMAND", s), "like --build otelcol-0.161.0=./otelcol-0.161.0", nil)
	}
	return Build{Version: v, Command: c}, nil
}

// LabelValue starts a table column's value that takes a run label:
// @label:KEY.
const LabelValue = "@label:"

// InfoValue is the prefix of a column showing a label of an info series
// (@info:SERIES:LABEL, like @info:nats_server_info:version).
const InfoValue = "@info:"

// CheckTable refuses a table column whose run value ("@...") is not one
// of values (nor @label:KEY, @info:SERIES:LABEL), pointing at it; KPI names are not checked,
// as a KPI may come from any observer. nil values: no check.
func (s *Suite) CheckTable(values []string) error {
	if s.Table == nil || values == nil {
		return nil
	}
	known := map[string]bool{}
	for _, v := range values {
		known[v] = true
	}
	for i, c := range s.Table.Columns {
		if strings.HasPrefix(c.Value, "@") && !known[c.Value] && !strings.HasPrefix(c.Value, LabelValue) && !strings.HasPrefix(c.Value, InfoValue) {
			names := append([]string(nil), values...)
			sort.Strings(names)
			return pipebench.UsageError(fmt.Sprintf("%s:%d:%d: table.columns[%d].value: unknown run value %q", s.File, c.Line, c.Col, i, c.Value),
				"a run value is one of "+strings.Join(names, ", ")+", "+LabelValue+"KEY or "+InfoValue+"SERIES:LABEL; anything without @ is a KPI name", nil)
		}
	}
	return nil
}

// CheckKPIs refuses a table column (or the status: rule's KPI) naming a
// KPI that check says no run ever has, pointing at it. nil check: no
// check.
func (s *Suite) CheckKPIs(check func(string) error) error {
	if check == nil {
		return nil
	}
	if s.Table != nil {
		for i, c := range s.Table.Columns {
			if strings.HasPrefix(c.Value, "@") {
				continue
			}
			if err := check(c.Value); err != nil {
				return pipebench.UsageError(fmt.Sprintf("%s:%d:%d: table.columns[%d].value (%s): %v", s.File, c.Line, c.Col, i, c.Title, err),
					"name a KPI a run has (pipebench show RESULT lists them), or remove the column", nil)
			}
		}
	}
	if s.Status != nil {
		if err := check(s.Status.KPI); err != nil {
			return pipebench.UsageError(fmt.Sprintf("%s:%d:%d: status.kpi: %v", s.File, s.Status.Line, s.Status.Col, err), "name a KPI a run has", nil)
		}
	}
	return nil
}

// History reads the runs of the suite called name from st (those labelled
// suite=NAME), oldest first, leaving out runs that did not run their
// course (cut short by a signal, or checkpoints of runs still going).
// scenarios, when given, narrows the reading to those scenarios' runs.
func History(ctx context.Context, st pipebench.Store, name string, scenarios []string) ([]*pipebench.Result, error) {
	if len(scenarios) == 0 {
		scenarios = []string{""}
	}
	seen := map[string]bool{}
	var out []*pipebench.Result
	for _, sc := range scenarios {
		if seen[sc] {
			continue
		}
		seen[sc] = true
		runs, err := st.Runs(ctx, pipebench.RunFilter{Scenario: sc})
		if err != nil {
			return nil, err
		}
		for _, sum := range runs {
			if sum.Labels != nil && sum.Labels[LabelKey] != name {
				continue // another suite's, or none's: not read
			}
			r, err := store.ReadRun(ctx, st, sum) // a damaged row stands as store.Damaged
			if err != nil {
				return nil, err
			}
			if r.Manifest.Labels[LabelKey] == name {
				out = append(out, r)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Manifest.Started.Before(out[j].Manifest.Started) })
	return Finished(out), nil
}

// Finished leaves out runs that did not run their course: cut short by a
// signal, or still going. A partial case would stand in a table as if it
// had run its whole course. (Invalid runs stay: a table marks them.)
func Finished(runs []*pipebench.Result) []*pipebench.Result {
	var out []*pipebench.Result
	for _, r := range runs {
		if st := r.Manifest.Status; st != pipebench.StatusAborted && st != pipebench.StatusRunning {
			out = append(out, r)
		}
	}
	return out
}

// Order sorts runs by their case's place among plans (cases the suite no
// longer has last), then by start: tables make column groups in the order
// they first meet them.
func Order(runs []*pipebench.Result, plans []pipebench.Plan) []*pipebench.Result {
	at := map[string]int{}
	for i, p := range plans {
		at[p.Case] = i
	}
	rank := func(r *pipebench.Result) int {
		c := r.Manifest.Case
		if c == "" {
			c = r.Manifest.Scenario
		}
		if i, ok := at[c]; ok {
			return i
		}
		return len(plans)
	}
	out := append([]*pipebench.Result(nil), runs...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri < rj
		}
		return out[i].Manifest.Started.Before(out[j].Manifest.Started)
	})
	return out
}

// Latest returns the latest run of each case among runs (in their order)
// that is of version: what a suite prints its per-case tables of.
func Latest(runs []*pipebench.Result, version string) []*pipebench.Result {
	latest := map[string]*pipebench.Result{}
	var cases []string
	for _, r := range runs {
		if r.Manifest.Version != version {
			continue
		}
		if _, ok := latest[r.Manifest.Case]; !ok {
			cases = append(cases, r.Manifest.Case)
		}
		latest[r.Manifest.Case] = r
	}
	out := make([]*pipebench.Result, len(cases))
	for i, c := range cases {
		out[i] = latest[c]
	}
	return out
}
