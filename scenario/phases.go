package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/pipebench/pipebench"
)

type phaseDefaults struct {
	maxInFlight int
	stagger     pipebench.Duration
	faults      pipebench.FaultPolicy
	// maxInFlightBytes: 0 when not set.
	maxInFlightBytes int64
}

var phaseKeys = []string{"name", "duration", "rate", "ramp", "steps", "burst", "blast", "producers", "stagger", "max_in_flight", "max_in_flight_bytes", "faults"}

// profileKeys are the keys that choose a phase's profile; `rate` with
// `burst` is the burst profile.
var profileKeys = []string{"rate", "ramp", "steps", "blast", "producers"}

func (d *decoder) defaults(n ast.Node) phaseDefaults {
	df := phaseDefaults{maxInFlight: DefaultMaxInFlight}
	fs, _ := d.fields(n, "defaults", []string{"max_in_flight", "max_in_flight_bytes", "stagger", "faults"})
	for _, f := range fs {
		switch f.key {
		case "max_in_flight":
			if v, ok := d.integer(f, "defaults"); ok {
				if v < 1 {
					d.add(f.val, "defaults.max_in_flight", "must be at least 1")
				}
				df.maxInFlight = v
			}
		case "max_in_flight_bytes":
			df.maxInFlightBytes, _ = d.byteSize(f, "defaults")
		case "stagger":
			df.stagger, _ = d.duration(f.val, "defaults.stagger")
		case "faults":
			df.faults = d.faults(f.val, "defaults.faults", 0)
		}
	}
	return df
}

func (d *decoder) phases(n ast.Node, df phaseDefaults) []Phase {
	items, ok := d.list(n, "phases")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.add(n, "phases", "is empty: add at least one phase")
		return nil
	}
	names := map[string]bool{}
	var out []Phase
	for i, it := range items {
		path := fmt.Sprintf("phases[%d]", i)
		fs, ok := d.fields(it, path, phaseKeys)
		if !ok {
			continue
		}
		ph := Phase{MaxInFlight: df.maxInFlight, MaxInFlightBytes: df.maxInFlightBytes, Stagger: df.stagger, Faults: df.faults}
		byKey := map[string]field{}
		for _, f := range fs {
			byKey[f.key] = f
		}
		if f, ok := byKey["name"]; ok {
			ph.Name = d.str(f, path)
			if names[ph.Name] {
				d.add(f.val, join(path, "name"), "phase name %q is used twice: names must be unique", ph.Name)
			}
			names[ph.Name] = true
		} else {
			d.add(it, join(path, "name"), "missing: every phase needs a name")
		}
		var chosen []string
		for _, k := range profileKeys {
			if _, ok := byKey[k]; ok {
				chosen = append(chosen, k)
			}
		}
		_, hasBurst := byKey["burst"]
		switch {
		case len(chosen) == 0 && hasBurst:
			d.add(it, path, "has \"burst\" without \"rate\": burst spikes rise above a base rate")
		case len(chosen) == 0:
			d.add(it, path, "has no load profile: give one of rate, ramp, steps, blast or producers")
		case len(chosen) > 1:
			d.add(it, path, "has both %q and %q: give one profile per phase", chosen[0], chosen[1])
		}
		if hasBurst && len(chosen) == 1 && chosen[0] != "rate" {
			d.add(byKey["burst"].kn, join(path, "burst"), "burst goes with rate, not with %s", chosen[0])
		}
		for _, f := range fs {
			p := join(path, f.key)
			switch f.key {
			case "duration":
				var ok bool
				if ph.Duration, ok = d.duration(f.val, p); ok && ph.Duration <= 0 {
					d.add(f.val, p, "must be more than 0")
				}
			case "rate":
				ph.Profile.Kind = pipebench.ProfileConstant
				ph.Profile.Rate, _ = d.rate(f.val, p)
			case "ramp":
				ph.Profile.Kind = pipebench.ProfileRamp
				rf, _ := d.fields(f.val, p, []string{"from", "to"})
				got := map[string]bool{}
				for _, r := range rf {
					got[r.key] = true
					v, _ := d.rate(r.val, join(p, r.key))
					if r.key == "from" {
						ph.Profile.From = v
					} else {
						ph.Profile.To = v
					}
				}
				for _, k := range []string{"from", "to"} {
					if !got[k] {
						d.add(f.val, join(p, k), "missing: a ramp needs from and to, like {from: 100/s, to: 1000/s}")
					}
				}
			case "steps":
				ph.Profile.Kind = pipebench.ProfileSteps
				steps, _ := d.list(f.val, p)
				if len(steps) == 0 {
					d.add(f.val, p, "is empty: give a list of {rate, duration}")
				}
				for j, s := range steps {
					sp := fmt.Sprintf("%s[%d]", p, j)
					sf, _ := d.fields(s, sp, []string{"rate", "duration"})
					var st pipebench.Step
					got := map[string]bool{}
					for _, x := range sf {
						got[x.key] = true
						if x.key == "rate" {
							st.Rate, _ = d.rate(x.val, join(sp, "rate"))
						} else {
							var ok bool
							if st.Duration, ok = d.duration(x.val, join(sp, "duration")); ok && st.Duration <= 0 {
								d.add(x.val, join(sp, "duration"), "must be more than 0")
							}
						}
					}
					for _, k := range []string{"rate", "duration"} {
						if !got[k] {
							d.add(s, join(sp, k), "missing: each step needs a rate and a duration")
						}
					}
					ph.Profile.Steps = append(ph.Profile.Steps, st)
				}
			case "burst":
				bf, _ := d.fields(f.val, p, []string{"rate", "for", "every"})
				b := &pipebench.Burst{}
				got := map[string]bool{}
				for _, x := range bf {
					got[x.key] = true
					switch x.key {
					case "rate":
						b.Rate, _ = d.rate(x.val, join(p, "rate"))
					case "for":
						b.For, _ = d.duration(x.val, join(p, "for"))
					case "every":
						b.Every, _ = d.duration(x.val, join(p, "every"))
					}
				}
				for _, k := range []string{"rate", "for", "every"} {
					if !got[k] {
						d.add(f.val, join(p, k), "missing: a burst needs rate, for and every, like {rate: 2000/s, for: 10s, every: 1m}")
					}
				}
				if got["for"] && got["every"] && (b.For <= 0 || b.For >= b.Every) {
					d.add(f.val, p, "for (%s) must be more than 0 and less than every (%s)", b.For, b.Every)
				}
				ph.Profile.Burst = b
			case "blast":
				ph.Profile.Kind = pipebench.ProfileBlast
				bf, _ := d.fields(f.val, p, []string{"count", "workers"})
				ph.Profile.Workers = 50
				for _, x := range bf {
					v, ok := d.integer(x, p)
					if ok && v < 1 {
						d.add(x.val, join(p, x.key), "must be at least 1")
					}
					if x.key == "count" {
						ph.Profile.Count = uint64(max(v, 0))
					} else {
						ph.Profile.Workers = v
					}
				}
				if ph.Profile.Count == 0 {
					d.add(f.val, join(p, "count"), "missing: how many items to send, like {count: 750, workers: 50}")
				}
			case "producers":
				d.producers(f, p, &ph.Profile)
			case "stagger":
				ph.Stagger, _ = d.duration(f.val, p)
			case "max_in_flight":
				if v, ok := d.integer(f, path); ok {
					if v < 1 {
						d.add(f.val, p, "must be at least 1")
					}
					ph.MaxInFlight = v
				}
			case "max_in_flight_bytes":
				ph.MaxInFlightBytes, _ = d.byteSize(f, path)
			}
		}
		if ph.Profile.Kind == pipebench.ProfileConstant && ph.Profile.Burst != nil {
			ph.Profile.Kind = pipebench.ProfileBurst
			if ph.Profile.Burst.Rate <= ph.Profile.Rate {
				d.add(byKey["burst"].val, join(path, "burst.rate"), "%s must be above the base rate %s", ph.Profile.Burst.Rate, ph.Profile.Rate)
			}
		}
		_, hasDur := byKey["duration"]
		switch ph.Profile.Kind {
		case pipebench.ProfileSteps:
			if hasDur {
				d.add(byKey["duration"].kn, join(path, "duration"), "a steps phase lasts as long as its steps: remove duration")
			}
			var sum pipebench.Duration
			for _, s := range ph.Profile.Steps {
				sum += s.Duration
			}
			ph.Duration = sum
		case pipebench.ProfileBlast:
			if !hasDur {
				ph.Duration = DefaultBlastLimit
			}
		case "":
		default:
			if !hasDur {
				d.add(it, join(path, "duration"), "missing: how long the phase lasts, like `duration: 10m`")
			}
		}
		if f, ok := byKey["faults"]; ok {
			ph.Faults = d.faults(f.val, join(path, "faults"), ph.Duration)
		}
		if ph.Profile.Kind == pipebench.ProfileProducers && ph.Stagger > 0 {
			at, p := it, join(path, "stagger (from defaults)")
			if f, ok := byKey["stagger"]; ok {
				at, p = f.kn, join(path, "stagger")
			}
			d.add(at, p, "does not apply to producers: they have align (aligned, staggered, jittered)")
		} else if ph.Profile.Kind != pipebench.ProfileBlast && ph.Stagger > ph.Duration && ph.Duration > 0 {
			at := it
			if f, ok := byKey["stagger"]; ok {
				at = f.val
			} else {
				path = join(path, "stagger (from defaults)")
			}
			d.add(at, join(path, "stagger"), "%s is longer than the phase (%s): the rate would never reach its target", ph.Stagger, ph.Duration)
		}
		out = append(out, ph)
	}
	return out
}

// producers decodes a producers profile: {count, every, align}.
func (d *decoder) producers(f field, path string, pr *pipebench.Profile) {
	pr.Kind, pr.Align = pipebench.ProfileProducers, pipebench.AlignStaggered
	fs, _ := d.fields(f.val, path, []string{"count", "every", "align"})
	got := map[string]bool{}
	for _, x := range fs {
		got[x.key] = true
		p := join(path, x.key)
		switch x.key {
		case "count":
			if v, ok := d.integer(x, path); ok {
				if v < 1 || v > pipebench.MaxProducers {
					d.add(x.val, p, "%d is outside 1..%d", v, pipebench.MaxProducers)
				}
				pr.Count = uint64(max(v, 0))
			}
		case "every":
			if v, ok := d.duration(x.val, p); ok {
				if v <= 0 {
					d.add(x.val, p, "must be more than 0: how often each producer sends, like 30s")
				}
				pr.Every = v
			}
		case "align":
			pr.Align = d.str(x, path)
			if !slices.Contains(pipebench.Alignments, pr.Align) {
				d.add(x.val, p, "%q is not one of %s%s", pr.Align, strings.Join(pipebench.Alignments, ", "), didYouMean(pr.Align, pipebench.Alignments))
			}
		}
	}
	for _, k := range []string{"count", "every"} {
		if !got[k] {
			d.add(f.val, join(path, k), "missing: producers need a count and an interval, like {count: 18000, every: 30s, align: staggered}")
		}
	}
}

var faultKeys = []string{"error_ratio", "error_status", "latency", "rate_limit", "rate_limit_burst", "outages", "pipeline"}

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

// checkPipelineFaults checks each faults.pipeline against the sink, which
// must tell pipelines apart, and against the system under test, whose
// pipelines it must name when it says what they are.
func (d *decoder) checkPipelineFaults(sc *Scenario) {
	for _, pf := range d.pipelineFaults {
		if sc.Sink == nil || !pipelineSinks[sc.Sink.Type] {
			sink := "no sink"
			if sc.Sink != nil {
				sink = "the " + sc.Sink.Type + " sink"
			}
			d.add(pf.node, pf.path, "%q: only the otlp sink tells pipelines apart (by the x-pipebench-pipeline header), and this scenario has %s", pf.value, sink)
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
		if known && !slices.Contains(names, pf.value) {
			if len(names) == 0 {
				d.add(pf.node, pf.path, "%q: the %s system under test has one pipeline, which sends no pipeline name: drop pipeline, or give it pipelines: 2 or more", pf.value, sc.SUT.Type)
			} else {
				d.add(pf.node, pf.path, "%q is not a pipeline of the %s system under test: use one of %s", pf.value, sc.SUT.Type, strings.Join(names, ", "))
			}
		}
	}
}

// faults decodes a fault policy and checks it with the policy's own
// Validate (phaseDur, when known, bounds the outage windows), pointing each
// problem at the key it is about.
func (d *decoder) faults(n ast.Node, path string, phaseDur pipebench.Duration) pipebench.FaultPolicy {
	var fp pipebench.FaultPolicy
	fs, _ := d.fields(n, path, faultKeys)
	at := map[string]ast.Node{}
	for _, f := range fs {
		p := join(path, f.key)
		at[f.key] = f.val
		switch f.key {
		case "error_ratio":
			fp.ErrorRatio, _ = d.float(f, path)
		case "error_status":
			fp.ErrorStatus, _ = d.integer(f, path)
		case "latency":
			fp.Latency = d.latency(f.val, p)
		case "rate_limit":
			fp.RateLimit, _ = d.rate(f.val, p)
		case "rate_limit_burst":
			fp.RateLimitBurst, _ = d.duration(f.val, p)
		case "pipeline":
			fp.Pipeline = d.str(f, path)
			if pipebench.ValidPipelineName(fp.Pipeline) {
				d.pipelineFaults = append(d.pipelineFaults, located{fp.Pipeline, f.val, p})
			}
		case "outages":
			items, _ := d.list(f.val, p)
			for i, it := range items {
				op := fmt.Sprintf("%s[%d]", p, i)
				at[fmt.Sprintf("outages[%d]", i)] = it
				of, _ := d.fields(it, op, []string{"start", "duration"})
				var w pipebench.Window
				got := map[string]bool{}
				for _, x := range of {
					got[x.key] = true
					v, _ := d.duration(x.val, join(op, x.key))
					if x.key == "start" {
						w.Start = v
					} else {
						w.Duration = v
					}
				}
				if !got["duration"] {
					d.add(it, join(op, "duration"), "missing: an outage needs start and duration, like {start: 10s, duration: 20s}")
					w.Duration = 1 // reported already
				}
				fp.Outages = append(fp.Outages, w)
			}
		}
	}
	if fp.ErrorStatus == 0 && (fp.ErrorRatio > 0 || len(fp.Outages) > 0) {
		fp.ErrorStatus = 503
	}
	lat := fp.Latency
	fp.Latency = nil // decoded and checked by d.latency
	if err := fp.Validate(phaseDur); err != nil {
		d.addLines(err, n, path, at)
	}
	fp.Latency = lat
	return fp
}

// addLines reports each line of err, "key: message", at the node of that
// key when at knows it, else at n.
func (d *decoder) addLines(err error, n ast.Node, path string, at map[string]ast.Node) {
	for _, line := range strings.Split(err.Error(), "\n") {
		key, msg, found := strings.Cut(line, ": ")
		if node, ok := at[key]; found && ok {
			d.add(node, join(path, key), "%s", msg)
			continue
		}
		d.add(n, path, "%s", line)
	}
}

func (d *decoder) latency(n ast.Node, path string) *pipebench.LatencyDist {
	switch n.(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode:
		v, ok := d.duration(n, path)
		if !ok {
			return nil
		}
		return &pipebench.LatencyDist{Kind: "fixed", Fixed: v}
	}
	fs, ok := d.fields(n, path, []string{"kind", "fixed", "min", "max", "mean", "stddev"})
	if !ok {
		return nil
	}
	l := &pipebench.LatencyDist{Kind: "fixed"}
	got := map[string]bool{}
	for _, f := range fs {
		got[f.key] = true
		if f.key == "kind" {
			l.Kind = d.str(f, path)
			continue
		}
		v, _ := d.duration(f.val, join(path, f.key))
		switch f.key {
		case "fixed":
			l.Fixed = v
		case "min":
			l.Min = v
		case "max":
			l.Max = v
		case "mean":
			l.Mean = v
		case "stddev":
			l.StdDev = v
		}
	}
	keys, ok := pipebench.LatencyKinds[l.Kind]
	if !ok {
		d.add(n, join(path, "kind"), "unknown latency kind %q%s: use %s", l.Kind, didYouMean(l.Kind, pipebench.LatencyKindNames), strings.Join(pipebench.LatencyKindNames, ", "))
		return l
	}
	for _, k := range keys {
		if !got[k] {
			d.add(n, join(path, k), "missing: %s latency needs %s", l.Kind, strings.Join(keys, " and "))
		}
	}
	if l.Kind == "uniform" && l.Max < l.Min {
		d.add(n, path, "max (%s) is below min (%s)", l.Max, l.Min)
	}
	return l
}

func (d *decoder) thresholds(n ast.Node, phases []Phase) []pipebench.Threshold {
	items, _ := d.list(n, "thresholds")
	var out []pipebench.Threshold
	for i, it := range items {
		path := fmt.Sprintf("thresholds[%d]", i)
		var t pipebench.Threshold
		at := it
		switch it.(type) {
		case *ast.MappingNode, *ast.MappingValueNode:
			fs, _ := d.fields(it, path, []string{"expr", "phase"})
			for _, f := range fs {
				if f.key == "expr" {
					t.Expr, at = d.str(f, path), f.val
				} else {
					t.Phase = d.str(f, path)
					found := false
					var names []string
					for _, ph := range phases {
						names = append(names, ph.Name)
						found = found || ph.Name == t.Phase
					}
					if !found {
						d.add(f.val, join(path, "phase"), "no phase is named %q%s", t.Phase, didYouMean(t.Phase, names))
					}
				}
			}
			if t.Expr == "" {
				d.add(it, join(path, "expr"), "missing: the condition, like \"latency.p99 < 500ms\"")
				continue
			}
		default:
			s, ok := d.scalar(it, path, "a condition like \"latency.p99 < 500ms\"")
			if !ok {
				continue
			}
			t.Expr = s
		}
		parsed, err := d.p.ParseThreshold(t.Expr)
		if err != nil {
			d.add(at, path, "%v", err)
			continue
		}
		parsed.Phase = t.Phase
		out = append(out, parsed)
	}
	return out
}
