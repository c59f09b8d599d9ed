package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/pipebench/pipebench"
)

// clean reports whether no problem was found at path or under it: a
// section is checked against its rules only once it decoded cleanly, so
// that one mistake is not reported again as its consequences.
func (d *decoder) clean(path string) bool { return !d.bad[path] }

// phases turns the decoded phases into Phases: the defaults put under each
// phase's own settings, the profile and duration resolved, and every rule
// checked (pipebench.PhaseSpec.Validate for the phase's shape,
// pipebench.PlanPhase.Validate for the phase as it will be paced, with the
// scenario's batch size), each problem located at its key, in the phase or
// in defaults when the value came from there.
func (d *decoder) phases(body ast.Node, top file, batch int) []Phase {
	var defaults pipebench.PhaseSettings
	defNode := child(body, "defaults")
	if top.Defaults != nil {
		defaults = *top.Defaults
		if d.clean("defaults") {
			d.report(defaults.Validate(), defNode, "defaults")
		}
	}
	seen := map[string]bool{}
	out := make([]Phase, len(top.Phases))
	items, _ := child(body, "phases").(*ast.SequenceNode)
	for i, spec := range top.Phases {
		path := fmt.Sprintf("phases[%d]", i)
		if !d.clean(path) {
			continue // its problems are reported; the rest would follow from them
		}
		n := unwrap(items.Values[i])
		if spec.Name != "" && seen[spec.Name] {
			d.add(locate(n, "name"), join(path, "name"), "phase name %q is used twice: names must be unique", spec.Name)
			continue
		}
		seen[spec.Name] = true
		merged := defaults.Over(spec.PhaseSettings)
		if !d.clean("defaults") {
			merged = spec.PhaseSettings // what is wrong there is reported
		}
		ph := resolve(spec, merged)
		out[i] = ph
		if err := spec.Validate(); err != nil {
			d.report(err, n, path)
			d.report(spec.PhaseSettings.Validate(), n, path)
		} else {
			pp := pipebench.PlanPhase{Name: ph.Name, Profile: ph.Profile, Duration: ph.Duration, Stagger: ph.Stagger,
				MaxInFlight: ph.MaxInFlight, MaxInFlightBytes: ph.MaxInFlightBytes, Tick: ph.Tick, BatchSize: batch, Faults: ph.Faults}
			// The settings' own rules see what was written (an explicit
			// 0), the phase's what it makes; a problem both see is
			// reported once (Errors.dedupe).
			d.reportPhase(errors.Join(merged.Validate(), pp.Validate()), n, path, spec.PhaseSettings, defNode)
		}
	}
	return out
}

// resolve makes a Phase of a phase as written and its settings (defaults
// applied).
func resolve(spec pipebench.PhaseSpec, set pipebench.PhaseSettings) Phase {
	prof, dur := spec.Profile()
	ph := Phase{Name: spec.Name, Duration: dur, Profile: prof, MaxInFlight: DefaultMaxInFlight}
	if set.Stagger != nil {
		ph.Stagger = *set.Stagger
	}
	if set.MaxInFlight != nil {
		ph.MaxInFlight = *set.MaxInFlight
	}
	if set.MaxInFlightBytes != nil {
		ph.MaxInFlightBytes = int64(*set.MaxInFlightBytes)
	}
	if set.Tick != nil {
		ph.Tick = *set.Tick
	}
	if set.Faults != nil {
		ph.Faults = set.Faults.Defaulted()
	}
	return ph
}

// reportPhase reports the problems of a phase (node n at path) as report
// does, except that a problem with a setting the phase takes from defaults
// is put at defaults, and says so.
func (d *decoder) reportPhase(err error, n ast.Node, path string, own pipebench.PhaseSettings, defNode ast.Node) {
	if err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		key, msg := pipebench.SplitKey(line)
		first, _, _ := strings.Cut(key, ".")
		first, _, _ = strings.Cut(first, "[")
		if key != "" && child(n, first) == nil && defNode != nil && child(defNode, first) != nil {
			d.add(locate(defNode, key), join(path, key)+" (from defaults."+key+")", "%s", msg)
			continue
		}
		d.report(fmt.Errorf("%s", line), n, path)
	}
}

// pipelineSinks are the sinks that tell the pipelines of the system under
// test apart (by the x-pipebench-pipeline header), so that a fault policy
// can hit one of them.
var pipelineSinks = map[string]bool{"otlp": true}

// pipelineNamer is what a system under test's configuration says of its
// pipelines: the names its exporters send in x-pipebench-pipeline (the
// embedded collector's p1, p2, ...; none with a single pipeline), and
// whether it knows them (a collector run from your own file does not).
type pipelineNamer interface {
	PipelineNames() (names []string, known bool)
}

// checkPipelineFaults checks each phase's faults.pipeline against the
// sink, which must tell pipelines apart, and against the system under
// test, whose pipelines it must name when it says what they are.
func (d *decoder) checkPipelineFaults(body ast.Node, sc *Scenario) {
	defNode := child(body, "defaults")
	for i, ph := range sc.Phases {
		name := ph.Faults.Pipeline
		if name == "" || !pipebench.ValidPipelineName(name) {
			continue
		}
		path := fmt.Sprintf("phases[%d].faults.pipeline", i)
		at := child(child(locate(body, fmt.Sprintf("phases[%d]", i)), "faults"), "pipeline")
		if at == nil {
			at, path = locate(defNode, "faults.pipeline"), "defaults.faults.pipeline"
		}
		if sc.Sink == nil || !pipelineSinks[sc.Sink.Type] {
			sink := "no sink"
			if sc.Sink != nil {
				sink = "the " + sc.Sink.Type + " sink"
			}
			d.add(at, path, "%q: only the otlp sink tells pipelines apart (by the x-pipebench-pipeline header), and this scenario has %s", name, sink)
			continue
		}
		if sc.SUT == nil {
			continue
		}
		pn, ok := sc.SUT.Config.(pipelineNamer)
		if !ok {
			continue
		}
		names, known := pn.PipelineNames()
		if known && !slices.Contains(names, name) {
			if len(names) == 0 {
				d.add(at, path, "%q: the %s system under test has one pipeline, which sends no pipeline name: drop pipeline, or give it pipelines: 2 or more", name, sc.SUT.Type)
			} else {
				d.add(at, path, "%q is not a pipeline of the %s system under test: use one of %s", name, sc.SUT.Type, strings.Join(names, ", "))
			}
		}
	}
}

// thresholds parses the decoded thresholds, once, and checks the phases
// they name.
func (d *decoder) thresholds(body ast.Node, ts []threshold, phases []Phase) []pipebench.Threshold {
	var names []string
	for _, ph := range phases {
		names = append(names, ph.Name)
	}
	var out []pipebench.Threshold
	for i, t := range ts {
		path := fmt.Sprintf("thresholds[%d]", i)
		n := locate(body, path)
		if !d.clean(path) {
			continue
		}
		if t.Phase != "" && !slices.Contains(names, t.Phase) {
			d.add(locate(n, "phase"), join(path, "phase"), "no phase is named %q%s", t.Phase, didYouMean(t.Phase, names))
		}
		parsed, err := d.p.ParseThreshold(t.Expr)
		if err != nil {
			at := n
			if e := child(n, "expr"); e != nil {
				at = e
			}
			d.add(at, path, "%v", err)
			continue
		}
		parsed.Phase = t.Phase
		out = append(out, parsed)
	}
	return out
}
