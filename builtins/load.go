package builtins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/examples"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/report/markdown"
	"github.com/pipebench/pipebench/scenario"
	"github.com/pipebench/pipebench/suite"
)

// Prefix marks a built-in scenario or suite: builtin:NAME.
const Prefix = "builtin:"

// DefaultScenario is what `pipebench run` runs with no argument.
const DefaultScenario = Prefix + "quickstart"

// Scenario reads a scenario from a file, "-" (stdin) or builtin:NAME,
// strictly, with the plug-ins of reg.
func Scenario(ref string, reg *pipebench.Registry) (*scenario.Scenario, error) {
	return ScenarioWith(ref, scenario.Params{Registry: reg})
}

// ScenarioWith is Scenario with every parameter of the decoder: the
// plug-ins and where ${VAR} is looked up.
func ScenarioWith(ref string, p scenario.Params) (*scenario.Scenario, error) {
	if name, ok := strings.CutPrefix(ref, Prefix); ok {
		data, err := fs.ReadFile(examples.FS, name+".yaml")
		if err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("there is no built-in scenario %q%s", name, pipebench.DidYouMean(name, examples.Names())),
				"list them with: pipebench run --list", nil)
		}
		return scenario.Parse(ref, data, p)
	}
	if err := otherExtension(ref); err != nil {
		return nil, err
	}
	return scenario.Load(ref, p)
}

// otherExtension says, for a file that does not exist, which file of the
// same name with another YAML extension does (x.yml for x.yaml), or which
// built-in its name is (quickstart for builtin:quickstart).
func otherExtension(ref string) error {
	if _, err := os.Stat(ref); err == nil || ref == "-" {
		return nil
	}
	base := strings.TrimSuffix(strings.TrimSuffix(ref, ".yaml"), ".yml")
	for _, ext := range []string{".yaml", ".yml"} {
		if alt := base + ext; alt != ref {
			if _, err := os.Stat(alt); err == nil {
				return pipebench.UsageError(fmt.Sprintf("scenario file %s does not exist (did you mean %s?)", ref, alt), "", nil)
			}
		}
	}
	if !strings.ContainsRune(ref, os.PathSeparator) {
		if m := pipebench.Suggest(base, examples.Names()); m != "" {
			return pipebench.UsageError(fmt.Sprintf("scenario file %s does not exist (did you mean builtin:%s?)", ref, m), "built-in scenarios are named builtin:NAME: pipebench run --list", nil)
		}
	}
	return nil
}

// ScenarioBytes parses a scenario held in memory; file names it in
// messages.
func ScenarioBytes(file string, data []byte, reg *pipebench.Registry) (*scenario.Scenario, error) {
	return scenario.Parse(file, data, scenario.Params{Registry: reg})
}

// ScenarioSource returns a scenario's text and the file name it goes by
// (NAME.yaml for builtin:NAME), for a run that ships the scenario elsewhere
// (a Kubernetes ConfigMap); a file's read stops when ctx is done.
func ScenarioSource(ctx context.Context, ref string) (data []byte, file string, err error) {
	if name, ok := strings.CutPrefix(ref, Prefix); ok {
		data, err = fs.ReadFile(examples.FS, name+".yaml")
		file = name + ".yaml"
	} else {
		data, err = pipebench.ReadInput(ctx, pipebench.Input{Path: ref, What: "scenario file", Limit: pipebench.MaxScenarioSize})
		file = ref
	}
	if pe := (*pipebench.Error)(nil); errors.As(err, &pe) {
		return nil, "", err
	}
	if err != nil {
		return nil, "", pipebench.UsageError(fmt.Sprintf("cannot read the scenario %s", ref), "give a scenario file or builtin:NAME", err)
	}
	return data, file, nil
}

// Suite reads a suite from a file or builtin:NAME.
func Suite(ref string) (*suite.Suite, error) { return SuiteContext(context.Background(), ref) }

// SuiteContext is Suite, whose read of a file stops when ctx is done (a
// signal), even a FIFO's that no one writes.
func SuiteContext(ctx context.Context, ref string) (*suite.Suite, error) {
	if name, ok := strings.CutPrefix(ref, Prefix); ok {
		data, err := fs.ReadFile(examples.FS, "suites/"+name+".yaml")
		if err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("there is no built-in suite %q%s", name, pipebench.DidYouMean(name, examples.SuiteNames())),
				"list them with: pipebench suite list", nil)
		}
		return suite.Parse(ref, data)
	}
	data, err := pipebench.ReadInput(ctx, pipebench.Input{Path: ref, What: "suite file", Limit: pipebench.MaxScenarioSize})
	if pe := (*pipebench.Error)(nil); errors.As(err, &pe) {
		return nil, err
	}
	if err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("cannot read the suite %s", ref), "give a suite file or builtin:NAME (pipebench suite list)", err)
	}
	return suite.Parse(ref, data)
}

// ScenarioNames lists the built-in scenarios, as builtin:NAME.
func ScenarioNames() []string { return prefixed(examples.Names()) }

// SuiteNames lists the built-in suites, as builtin:NAME.
func SuiteNames() []string { return prefixed(examples.SuiteNames()) }

func prefixed(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Prefix + n
	}
	return out
}

// Described is a built-in scenario or suite with the first line of its
// description.
type Described struct{ Name, Description string }

// DescribeScenarios lists the built-in scenarios (builtin:NAME, sorted)
// with the first line of each one's description, read with reg.
func DescribeScenarios(reg *pipebench.Registry) []Described {
	var out []Described
	for _, n := range ScenarioNames() {
		d := Described{Name: n}
		if sc, err := Scenario(n, reg); err == nil {
			d.Description = firstLine(sc.Description)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DescribeSuites lists the built-in suites (builtin:NAME) with the first
// line of each one's description.
func DescribeSuites() []Described {
	var out []Described
	for _, n := range SuiteNames() {
		d := Described{Name: n}
		if s, err := Suite(n); err == nil {
			d.Description = firstLine(s.Description)
		}
		out = append(out, d)
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// SuitePlans loads the suite ref (a file or builtin:NAME) and compiles
// every scenario it names with p (the registry, ${VAR} lookups), each
// overridden by o: o.Version and o.Duration over the suite's and its
// entries', o.Rate on every plan (o.Shard and o.StartAt are not for
// suites). note, if set, is told what planning decided that a person
// should know.
func SuitePlans(ref string, p scenario.Params, o scenario.Overrides, note func(string)) (*suite.Suite, []pipebench.Plan, error) {
	return SuiteBuildPlans(ref, p, o, nil, note)
}

// SuiteBuildPlans is SuitePlans with builds of the system under test
// that replace the suite's own (suite run --build VERSION=COMMAND): every
// case once per build, labelled with its version.
func SuiteBuildPlans(ref string, p scenario.Params, o scenario.Overrides, builds []suite.Build, note func(string)) (*suite.Suite, []pipebench.Plan, error) {
	s, err := SuiteContext(p.Context, ref)
	if err != nil {
		return nil, nil, err
	}
	values := make([]string, 0, len(markdown.Values))
	for v := range markdown.Values {
		values = append(values, v)
	}
	plans, err := s.Plans(suite.PlanParams{Version: o.Version, Duration: o.Duration, DurationSet: o.DurationSet, Values: values, Note: note, KPI: kpi.CheckName, Builds: builds,
		Compile: func(ref string, total time.Duration, scale bool, version string) (pipebench.Plan, error) {
			sc, err := ScenarioWith(ref, p)
			if err != nil {
				return pipebench.Plan{}, err
			}
			return scenario.CompileWith(sc, scenario.Overrides{Version: version, Duration: total, DurationSet: scale, Rate: o.Rate}, time.Now())
		}})
	return s, plans, err
}
