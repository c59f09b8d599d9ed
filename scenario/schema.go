package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// Schema returns the JSON Schema (draft 2020-12) of scenario files,
// reflected from the types the decoder fills by the same rules
// (reflect.go): the top level (file), the phases, defaults and fault
// policies (pipebench.PhaseSpec, PhaseSettings, FaultPolicy) and every
// registered plug-in's configuration, one if/then branch per plug-in on
// its type key so that an editor lists every plug-in and completes the
// keys of the one chosen. The bounds on numbers and durations are found by
// asking each type's Validate (probe.go); a key's description is its
// field's doc comment (fielddocs.go, generated). Wherever a value goes,
// a ${VAR} or ${VAR:-default} reference is taken too, its default held to
// the value's own form.
func Schema(reg *pipebench.Registry) ([]byte, error) {
	g := &schemaGen{reg: reg}
	top := g.object(reflect.TypeFor[file](), "", probeScenario())
	top["allOf"] = []any{sendRateCap()}
	top["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	top["title"] = "pipebench scenario"
	top["description"] = "A pipebench scenario: what to send, where, in which phases, what the sink does, and the thresholds a run passes. `pipebench validate FILE` checks one as this schema does, and more."
	return json.MarshalIndent(top, "", "  ")
}

type schemaGen struct {
	reg *pipebench.Registry
}

// The written forms of pipebench's text types, as the Parse functions of
// the root package read them.
const (
	numRE  = `([0-9]+(\.[0-9]*)?|\.[0-9]+)`
	durRE  = `(0|\+?(` + numRE + `(ns|us|µs|μs|ms|s|m|h))+|\+?` + numRE + `([eE][-+]?[0-9]+)?d)`
	rateRE = `\+?` + numRE + `([eE][-+]?[0-9]+)?\s*(/\s*(s|sec|second|ms|us|µs|min|m|minute|h|hour))?`
	sizeRE = `\+?` + numRE + `([eE][-+]?[0-9]+)?\s*(KiB|MiB|GiB|TiB|KB|MB|GB|TB|B)?`
	// nonZero is a pattern that a written duration, rate or size above
	// 0 matches: a digit other than 0.
	nonZero = `[1-9]`
	// envRE finds a ${VAR} or ${VAR:-default} reference.
	envRE = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`
)

func anchored(re string) string { return `^\s*` + re + `\s*$` }

// withEnv makes s (the schema of a scalar whose written form inner, a
// regular expression, describes; "" when any string goes) also take a
// ${VAR} reference standing for the whole value, its default in the form
// inner says.
func withEnv(s map[string]any, inner string) map[string]any {
	ref := `^\s*\$\{[A-Za-z_][A-Za-z0-9_]*(:-(` + inner + `))?\}\s*$`
	if inner == "" {
		ref = envRE
	}
	env := map[string]any{"type": "string", "pattern": ref}
	desc, _ := s["description"].(string)
	delete(s, "description")
	out := map[string]any{"anyOf": []any{s, env}}
	if desc != "" {
		out["description"] = desc
	}
	return out
}

var (
	secretType    = reflect.TypeFor[pipebench.Secret]()
	sizeType      = reflect.TypeFor[pipebench.ByteSize]()
	latencyType   = reflect.TypeFor[pipebench.LatencyDist]()
	windowType    = reflect.TypeFor[pipebench.Window]()
	thresholdType = reflect.TypeFor[threshold]()
	sectionType   = reflect.TypeFor[section]()
)

// stringRules are the forms of the scenario's own string keys, from the
// same values the decoder checks against.
var stringRules = map[string]map[string]any{
	typeKey(reflect.TypeFor[file](), "Name"):                      {"pattern": validName.String()},
	typeKey(reflect.TypeFor[pipebench.FaultPolicy](), "Pipeline"): {"pattern": `^[A-Za-z0-9_./-]{1,64}$`},
	typeKey(latencyType, "Kind"):                                  {"type": "string", "enum": pipebench.LatencyKindNames},
	typeKey(thresholdType, "Expr"):                                {"type": "string", "pattern": thresholdPattern()},
}

// typeKey names a field for the doc and rule tables: its type's import
// path and name, and the field's name.
func typeKey(t reflect.Type, field string) string { return t.PkgPath() + "." + t.Name() + "." + field }

// object is the schema of a struct type: its keys, the required ones,
// nothing else.
func (g *schemaGen) object(t reflect.Type, path string, ps probeSet) map[string]any {
	props := map[string]any{}
	var required []string
	for _, k := range keysOf(t) {
		p := join(path, k.key)
		owner := ownerOf(t, k.index)
		var s map[string]any
		switch {
		case k.field.Type == sectionType:
			s = g.plugins(k.key, k.field.Tag.Get("plugin"))
		case k.field.Type == reflect.SliceOf(sectionType):
			s = map[string]any{"type": "array", "items": g.plugins(k.key, k.field.Tag.Get("plugin"))}
		default:
			s = g.typ(k.field.Type, p, ps)
			if rules, ok := stringRules[typeKey(owner, k.field.Name)]; ok {
				s = withRules(s, rules)
			}
			for rk, rv := range listRules[typeKey(owner, k.field.Name)] {
				s[rk] = rv
			}
		}
		if doc := describe(owner, k.field.Name, k.key); doc != "" {
			s["description"] = doc
		}
		if ex := k.field.Tag.Get("example"); ex != "" {
			var v any
			if yaml.Unmarshal([]byte(ex), &v) == nil {
				s["examples"] = []any{v}
			}
		}
		props[k.key] = s
		if k.required {
			required = append(required, k.key)
		}
	}
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	if rules := shapeRules[t]; rules != nil {
		o["allOf"] = rules
	}
	return o
}

// shapeRules are the rules of a type that tie its keys together, as JSON
// Schema says them. They are the one place rules are written twice: in Go
// they are the type's Validate, and the corpus test (package schema) holds
// the two to each other.
var shapeRules = map[reflect.Type][]any{
	reflect.TypeFor[pipebench.PhaseSpec](): {
		// One load profile (pipebench.PhaseSpec.Validate).
		map[string]any{"oneOf": []any{req("rate"), req("ramp"), req("steps"), req("blast"), req("producers")}},
		// A burst goes with a rate.
		map[string]any{"dependentRequired": map[string]any{"burst": []string{"rate"}}},
		// A steps phase lasts as long as its steps; rate and ramp need a
		// duration.
		map[string]any{"if": req("steps"), "then": map[string]any{"not": req("duration")}},
		map[string]any{"if": map[string]any{"anyOf": []any{req("rate"), req("ramp")}}, "then": req("duration")},
	},
	reflect.TypeFor[pipebench.FaultPolicy](): {
		// pipebench.FaultPolicy.Validate: a burst goes with a limit, a
		// pipeline with a fault.
		map[string]any{"if": req("rate_limit_burst"), "then": map[string]any{"anyOf": []any{req("rate_limit"), req("request_rate_limit")}}},
		map[string]any{"if": req("pipeline"), "then": map[string]any{"anyOf": []any{req("error_ratio"), req("latency"), req("rate_limit"), req("request_rate_limit"), req("outages")}}},
	},
}

func req(keys ...string) map[string]any { return map[string]any{"required": keys} }

// listRules are rules on lists that no keyword of draft 2020-12 says: the
// uniqueKeys keyword of package schema's vocabulary.
var listRules = map[string]map[string]any{
	typeKey(reflect.TypeFor[file](), "Phases"): {"uniqueKeys": "name"},
}

// ownerOf returns the struct type that declares the field at index.
func ownerOf(t reflect.Type, index []int) reflect.Type {
	for _, i := range index[:len(index)-1] {
		t = t.Field(i).Type
	}
	return t
}

// describe is a field's description: its doc comment, with the Go name it
// starts with written as the key.
func describe(owner reflect.Type, field, key string) string {
	doc := fieldDocs[typeKey(owner, field)]
	if rest, ok := strings.CutPrefix(doc, field+" "); ok {
		doc = key + " " + rest
	} else if rest, ok := strings.CutPrefix(doc, field+", "); ok && rest != "" && rest[0] >= 'a' && rest[0] <= 'z' {
		doc = key + ", " + rest
	}
	return doc
}

// withRules puts the rules of a string key on s, its schema, and takes a
// ${VAR} reference whose default keeps them.
func withRules(s map[string]any, rules map[string]any) map[string]any {
	for k, v := range rules {
		s[k] = v
	}
	inner := ""
	if p, ok := rules["pattern"].(string); ok {
		inner = strings.TrimSuffix(strings.TrimPrefix(p, "^"), "$")
	}
	if e, ok := rules["enum"].([]string); ok {
		q := make([]string, len(e))
		for i, x := range e {
			q[i] = regexp.QuoteMeta(x)
		}
		inner = strings.Join(q, "|")
	}
	return withEnv(s, inner)
}

// typ is the schema of a value of type t at path.
func (g *schemaGen) typ(t reflect.Type, path string, ps probeSet) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	b := ps[path]
	switch t {
	case durationType:
		return durationSchema(b)
	case rateType:
		s := map[string]any{"type": "number", "minimum": 0}
		str := map[string]any{"type": "string", "pattern": anchored(rateRE)}
		if b.positive {
			s = map[string]any{"type": "number", "exclusiveMinimum": 0}
			str = map[string]any{"allOf": []any{str, map[string]any{"pattern": nonZero}}}
		}
		return withEnv(map[string]any{"anyOf": []any{s, str}}, rateRE)
	case sizeType:
		n := map[string]any{"type": "integer", "minimum": 0}
		if b.min != nil {
			n["minimum"] = *b.min
		}
		return withEnv(map[string]any{"anyOf": []any{n, map[string]any{"type": "string", "pattern": anchored(sizeRE)}}}, sizeRE)
	case secretType:
		return withEnv(map[string]any{"type": "string"}, "")
	case latencyType:
		short := `(` + durRE + `|uniform:` + durRE + `:` + durRE + `|normal:` + durRE + `:` + durRE + `|exponential:` + durRE + `)`
		return map[string]any{"anyOf": []any{
			withEnv(map[string]any{"allOf": []any{map[string]any{"type": "string", "pattern": anchored(short)}, map[string]any{"pattern": nonZero}}}, short),
			g.object(t, path, ps),
		}}
	case windowType:
		short := durRE + `\s*:\s*` + durRE
		return map[string]any{"anyOf": []any{
			withEnv(map[string]any{"allOf": []any{map[string]any{"type": "string", "pattern": anchored(short)}, map[string]any{"pattern": `:.*` + nonZero}}}, short),
			g.object(t, path, ps),
		}}
	case thresholdType:
		expr := withRules(map[string]any{}, stringRules[typeKey(t, "Expr")])
		return map[string]any{"anyOf": []any{expr, g.object(t, path, ps)}}
	}
	switch t.Kind() {
	case reflect.Struct:
		return g.object(t, path, ps)
	case reflect.Slice:
		s := map[string]any{"type": "array", "items": g.typ(t.Elem(), path+"[]", ps)}
		if b.nonEmpty {
			s["minItems"] = 1
		}
		return s
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.typ(t.Elem(), path+".*", ps)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.String:
		// Any scalar is read as text where a string goes (version: 1.2).
		return map[string]any{"type": []any{"string", "number", "boolean"}}
	case reflect.Bool:
		return withEnv(map[string]any{"type": "boolean"}, `true|false|True|TRUE|False|FALSE`)
	case reflect.Float32, reflect.Float64:
		s := map[string]any{"type": "number"}
		inner := `[-+]?` + numRE + `([eE][-+]?[0-9]+)?`
		numberBounds(s, b)
		return withEnv(s, inner)
	}
	if t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 {
		s := map[string]any{"type": "integer"}
		inner := `-?[0-9]+`
		if t.Kind() >= reflect.Uint {
			s["minimum"] = 0
			inner = `[0-9]+`
		}
		numberBounds(s, b)
		switch {
		case b.enum != nil:
			var alts []string
			for _, x := range b.enum {
				alts = append(alts, fmt.Sprint(int64(x)))
			}
			inner = strings.Join(alts, "|")
		case b.min != nil && *b.min == 0:
			inner = `[0-9]+`
		case b.min != nil && *b.min == 1:
			inner = `0*[1-9][0-9]*`
		}
		return withEnv(s, inner)
	}
	return map[string]any{}
}

// numberBounds puts the probed bounds on a number's schema.
func numberBounds(s map[string]any, b bounds) {
	if b.enum != nil {
		s["enum"] = b.enumOf()
		return
	}
	if b.min != nil {
		if b.exclMin {
			s["exclusiveMinimum"] = *b.min
		} else {
			s["minimum"] = *b.min
		}
	}
	if b.max != nil {
		s["maximum"] = *b.max
	}
}

// durationSchema is the schema of a duration: its written form, 0 too
// unless it must be more than 0, and its floor when it has one.
func durationSchema(b bounds) map[string]any {
	form := map[string]any{"type": "string", "pattern": anchored(durRE)}
	var s map[string]any
	switch {
	case b.atLeast > 0:
		s = map[string]any{"allOf": []any{form, map[string]any{"pattern": durationAtLeast(b.atLeast)}}}
	case b.positive:
		s = map[string]any{"allOf": []any{form, map[string]any{"pattern": nonZero}}}
	default:
		s = map[string]any{"anyOf": []any{form, map[string]any{"const": 0}}}
	}
	return withEnv(s, durRE)
}

// durationAtLeast is a pattern that a duration of at least min (a power of
// ten of nanoseconds) matches when it is written in one unit (100ms, 0.1s,
// 1m); a duration written in several units (1m30s) passes it.
func durationAtLeast(min pipebench.Duration) string {
	units := []struct {
		name string
		ns   float64
	}{{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"μs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}}
	var alts []string
	for _, u := range units {
		// The smallest power of ten of this unit not above min: looser
		// where min is no power of ten of it (minutes), never stricter.
		e := int(math.Floor(math.Log10(float64(min)/u.ns) + 1e-9))
		var num string
		if e >= 0 {
			num = fmt.Sprintf(`0*[1-9][0-9]{%d,}(\.[0-9]*)?`, e)
		} else {
			num = fmt.Sprintf(`([0-9]*[1-9][0-9]*(\.[0-9]*)?|0*\.0{0,%d}[1-9][0-9]*)`, -e-1)
		}
		alts = append(alts, num+u.name)
	}
	// Several units: the largest decides, and any is taken.
	alts = append(alts, `(`+numRE+`(ns|us|µs|μs|ms|s|m|h)){2,}`)
	return `^\s*\+?(` + strings.Join(alts, "|") + `)\s*$`
}

// sendRateCap is the ceiling of pipebench.MaxSendRate sends a second on
// the rates of a scenario whose workload gives no batch (a batch of 1: a
// rate is then sends a second); with a batch, the ceiling is the batch
// times it, which a schema cannot compute. A rate written with an exponent
// (1e9/s) or as ${VAR} is left to the decoder.
func sendRateCap() map[string]any {
	units := []struct {
		re  string
		sec float64
	}{{`(/\s*(s|sec|second))?`, 1}, {`/\s*ms`, 1e-3}, {`/\s*(us|µs)`, 1e-6}, {`/\s*(min|m|minute)`, 60}, {`/\s*(h|hour)`, 3600}}
	var alts []string
	for _, u := range units {
		alts = append(alts, atMost(uint64(pipebench.MaxSendRate*u.sec))+`\s*`+u.re)
	}
	str := map[string]any{"anyOf": []any{
		map[string]any{"not": map[string]any{"type": "string"}},
		map[string]any{"pattern": `^\s*\+?(` + strings.Join(alts, "|") + `)\s*$`},
		map[string]any{"pattern": `[eE]|\$\{`},
	}}
	num := map[string]any{"anyOf": []any{map[string]any{"not": map[string]any{"type": "number"}}, map[string]any{"maximum": pipebench.MaxSendRate}}}
	capped := map[string]any{"allOf": []any{str, num}}
	phase := map[string]any{"properties": map[string]any{
		"rate":  capped,
		"ramp":  map[string]any{"properties": map[string]any{"from": capped, "to": capped}},
		"steps": map[string]any{"items": map[string]any{"properties": map[string]any{"rate": capped}}},
		"burst": map[string]any{"properties": map[string]any{"rate": capped}},
	}}
	withBatch := map[string]any{"required": []string{"workload"}, "properties": map[string]any{"workload": req("batch")}}
	return map[string]any{"if": withBatch, "else": map[string]any{"properties": map[string]any{"phases": map[string]any{"items": phase}}}}
}

// atMost is a pattern of the decimal numbers from 0 to n (a fraction
// allowed below n).
func atMost(n uint64) string {
	d := fmt.Sprint(n)
	var alts []string
	if len(d) > 1 {
		alts = append(alts, fmt.Sprintf(`[0-9]{1,%d}(\.[0-9]*)?`, len(d)-1))
	} else {
		alts = append(alts, fmt.Sprintf(`[0-%c](\.[0-9]*)?`, d[0]-1))
	}
	// As many digits as n: equal up to position i, then a smaller digit.
	for i := 0; i < len(d); i++ {
		if d[i] == '0' || (i == 0 && d[i] == '1') {
			continue
		}
		lo := byte('0')
		if i == 0 {
			lo = '1'
		}
		alts = append(alts, fmt.Sprintf(`%s[%c-%c][0-9]{%d}(\.[0-9]*)?`, d[:i], lo, d[i]-1, len(d)-i-1))
	}
	alts = append(alts, d+`(\.0*)?`)
	return `0*(` + strings.Join(alts, "|") + `|\.[0-9]+)`
}

// thresholdPattern is the form of a threshold expression as
// kpi.ParseThreshold reads it: a KPI (or a multiple of one, or an
// aggregate of its instances, with labels) compared with a number, a
// duration, a rate or another KPI, a KPI on one side at least. A KPI is a
// known name (kpi.KnownKPIs) or a pipeline KPI (NAME_rate, NAME.max, ...);
// the decoder also refuses a near miss of a known name, which a pattern
// cannot say.
func thresholdPattern() string {
	known := make([]string, len(kpi.KnownKPIs))
	for i, k := range kpi.KnownKPIs {
		known[i] = regexp.QuoteMeta(k)
	}
	sort.Slice(known, func(i, j int) bool { return len(known[i]) > len(known[j]) })
	name := `(` + strings.Join(known, "|") + `|[a-z_][a-z0-9_]*(\.[a-z0-9_]+)?(_rate|\.max|\.total|\.last|\.p50|\.p90|\.p99))`
	label := `[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*"[^"]*"`
	labels := `(\{\s*` + label + `(\s*,\s*` + label + `)*\s*\})?`
	ref := `(` + name + labels + `|(max|min|sum|avg)\(\s*` + name + labels + `\s*\))`
	num := `[-+]?` + numRE + `([eE][-+]?[0-9]+)?`
	dur := `[-+]?(` + numRE + `(ns|us|µs|μs|ms|s|m|h))+`
	rate := numRE + `\s*/\s*(s|sec|second|ms|us|µs|min|m|minute|h|hour)`
	constant := `(` + num + `|` + dur + `|` + rate + `)`
	kpiSide := `(` + num + `\s*\*\s*)?` + ref
	op := `(<=|>=|==|!=|<|>)`
	return `^\s*(` + kpiSide + `\s*` + op + `\s*(` + constant + `|` + kpiSide + `)|` + constant + `\s*` + op + `\s*` + kpiSide + `)\s*$`
}

// plugins is the schema of a plug-in section (key: target, workload, sink,
// sut, observers), typeKey naming the plug-in: the type key takes every
// registered name, and one if/then branch per plug-in gives its keys.
func (g *schemaGen) plugins(key, typeKey string) map[string]any {
	var cat pluginCatalog
	var common reflect.Type
	var commonPS probeSet
	required := true
	switch key {
	case "target":
		cat = catalog(g.reg.Drivers)
	case "workload":
		cat, common, required = catalog(g.reg.Generators), reflect.TypeFor[workloadKeys](), false
	case "sink":
		cat = catalog(g.reg.Sinks)
	case "sut":
		cat = catalog(g.reg.SUTs)
	case "observers":
		cat, common = catalog(g.reg.Observers), reflect.TypeFor[observerKeys]()
	}
	if common != nil {
		ps := probeScenario()
		commonPS = probeSet{}
		prefix := map[string]string{"workload": "workload.", "observers": "observers[]."}[key]
		for k, b := range ps {
			if rest, ok := strings.CutPrefix(k, prefix); ok {
				commonPS[rest] = b
			}
		}
	}
	names := append([]string(nil), cat.names...)
	typeProp := withEnv(map[string]any{"enum": names}, strings.Join(names, "|"))
	typeProp["description"] = fmt.Sprintf("the %s: %s", cat.kind, strings.Join(names, ", "))
	if !required {
		typeProp["description"] = fmt.Sprintf("the %s (%s when not given): %s", cat.kind, DefaultGenerator, strings.Join(names, ", "))
	}
	var branches []any
	for _, name := range names {
		f, _ := cat.config(name)
		props := map[string]any{typeKey: map[string]any{"const": name}}
		if common != nil {
			for k, v := range g.object(common, "", commonPS)["properties"].(map[string]any) {
				props[k] = v
			}
		}
		if f != nil {
			cfg := f()
			t := reflect.TypeOf(cfg).Elem()
			for k, v := range g.object(t, "", probePlugin(f))["properties"].(map[string]any) {
				props[k] = v
			}
		}
		then := map[string]any{"properties": props, "additionalProperties": false}
		if doc := cat.doc(name); doc != "" {
			then["description"] = doc
		}
		cond := map[string]any{"properties": map[string]any{typeKey: map[string]any{"const": name}}}
		if required || name != DefaultGenerator {
			cond["required"] = []string{typeKey}
		}
		branches = append(branches, map[string]any{"if": cond, "then": then})
	}
	s := map[string]any{"type": "object", "properties": map[string]any{typeKey: typeProp}}
	if required {
		s["required"] = []string{typeKey}
	}
	if len(branches) > 0 {
		s["allOf"] = branches
	}
	return s
}
