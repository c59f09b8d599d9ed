package scenario

import (
	"encoding/json"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/pipebench/pipebench"
)

// Schema returns the JSON Schema (draft 2020-12) of scenario files: the
// common keys written here, each plug-in section generated from its
// configuration's Go type, one alternative per registered plug-in.
func Schema(reg *pipebench.Registry) ([]byte, error) {
	rate := map[string]any{"type": []string{"string", "number"}, "description": "items per second: 500/s, 30000/min, 2/ms", "pattern": `^\s*[0-9.]+\s*(/\s*(s|sec|second|ms|us|min|m|minute|h|hour))?\s*$`}
	dur := map[string]any{"type": "string", "description": "90s, 10m, 48h, 2d", "pattern": `^[0-9.]+(ns|us|µs|ms|s|m|h|d)([0-9.]+(ns|us|µs|ms|s|m|h))*$`}
	size := map[string]any{"oneOf": []any{map[string]any{"type": "integer", "minimum": 1024}, map[string]any{"type": "string", "description": "bytes, or a number with a unit: 512MiB, 2GB", "pattern": `^ *[0-9.]+ *(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)? *$`}}}
	faults := obj(map[string]any{
		"error_ratio":  map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		"error_status": map[string]any{"enum": pipebench.ErrorStatuses},
		"latency": map[string]any{"oneOf": []any{dur, obj(map[string]any{
			"kind":  map[string]any{"enum": pipebench.LatencyKindNames},
			"fixed": dur, "min": dur, "max": dur, "mean": dur, "stddev": dur,
		})}},
		"rate_limit":       rate,
		"rate_limit_burst": dur,
		"outages":          map[string]any{"type": "array", "items": obj(map[string]any{"start": dur, "duration": dur}, "duration")},
		"pipeline": map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_./-]{1,64}$`,
			"description": "the one pipeline of the system under test the faults hit (p1, p2, ... with the embedded collector); the otlp sink tells pipelines apart by the x-pipebench-pipeline header"},
	})
	phase := obj(map[string]any{
		"name": map[string]any{"type": "string"}, "duration": dur, "rate": rate,
		"ramp":  obj(map[string]any{"from": rate, "to": rate}, "from", "to"),
		"steps": map[string]any{"type": "array", "minItems": 1, "items": obj(map[string]any{"rate": rate, "duration": dur}, "rate", "duration")},
		"burst": obj(map[string]any{"rate": rate, "for": dur, "every": dur}, "rate", "for", "every"),
		"blast": obj(map[string]any{"count": map[string]any{"type": "integer", "minimum": 1}, "workers": map[string]any{"type": "integer", "minimum": 1}}, "count"),
		"producers": obj(map[string]any{"count": map[string]any{"type": "integer", "minimum": 1, "maximum": pipebench.MaxProducers, "description": "how many producers (services, agents), each sending one batch every interval"},
			"every": dur, "align": map[string]any{"enum": pipebench.Alignments, "description": "when each sends within every: all at once, evenly spread, or each at a moment of its own (default staggered)"}}, "count", "every"),
		"stagger":             dur,
		"max_in_flight":       map[string]any{"type": "integer", "minimum": 1},
		"max_in_flight_bytes": size,
		"faults":              faults,
	}, "name")
	threshold := map[string]any{"oneOf": []any{
		map[string]any{"type": "string"},
		obj(map[string]any{"expr": map[string]any{"type": "string"}, "phase": map[string]any{"type": "string"}}, "expr"),
	}}
	top := obj(map[string]any{
		"name":        map[string]any{"type": "string", "pattern": `^[A-Za-z0-9._-]+$`},
		"version":     map[string]any{"type": "string"},
		"case":        map[string]any{"type": "string"},
		"description": map[string]any{"type": "string"},
		"labels":      map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"target":      plugins(reg.Drivers, "driver", nil),
		"workload":    plugins(reg.Generators, "generator", map[string]any{"batch": map[string]any{"type": "integer", "minimum": 1}}),
		"sink":        plugins(reg.Sinks, "type", nil),
		"sut":         plugins(reg.SUTs, "type", nil),
		"observers":   map[string]any{"type": "array", "items": plugins(reg.Observers, "type", map[string]any{"name": map[string]any{"type": "string"}, "interval": dur})},
		"interval":    dur,
		"drain":       dur,
		"defaults":    obj(map[string]any{"max_in_flight": map[string]any{"type": "integer", "minimum": 1}, "max_in_flight_bytes": size, "stagger": dur, "faults": faults}),
		"phases":      map[string]any{"type": "array", "minItems": 1, "items": phase},
		"thresholds":  map[string]any{"type": "array", "items": threshold},
	}, "name", "target", "phases")
	top["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	top["title"] = "pipebench scenario"
	return json.MarshalIndent(top, "", "  ")
}

func obj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// plugins builds one alternative per registered plug-in: the type key fixed
// to its name, plus the properties of its configuration.
func plugins[T any](c *pipebench.Catalog[T], typeKey string, common map[string]any) map[string]any {
	var alts []any
	for _, name := range c.Names() {
		f, _ := c.Lookup(name)
		props := map[string]any{typeKey: map[string]any{"const": name}}
		for k, v := range common {
			props[k] = v
		}
		if f.NewConfig != nil {
			// Every key of a plug-in section has a default: only a
			// `jsonschema:"required"` tag makes one required, so that an
			// editor does not flag a partial section (tls, batch, labels)
			// that the decoder accepts.
			r := &jsonschema.Reflector{FieldNameTag: "yaml", DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: false, RequiredFromJSONSchemaTags: true, Mapper: mapUnits}
			s := r.ReflectFromType(reflect.TypeOf(f.NewConfig()))
			if s != nil && s.Properties != nil {
				for p := s.Properties.Oldest(); p != nil; p = p.Next() {
					props[p.Key] = p.Value
				}
			}
		}
		alt := obj(props, typeKey)
		if f.Doc != "" {
			alt["description"] = f.Doc
		}
		alts = append(alts, alt)
	}
	if len(alts) == 0 {
		return map[string]any{"type": "object"}
	}
	return map[string]any{"oneOf": alts}
}

// mapUnits gives pipebench's text types their written form in the schema.
func mapUnits(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeOf(pipebench.Duration(0)):
		return &jsonschema.Schema{Type: "string", Description: "a duration: 90s, 10m, 48h"}
	case reflect.TypeOf(pipebench.Rate(0)):
		return &jsonschema.Schema{Description: "a rate: 500/s, 30000/min, 2/ms"}
	case reflect.TypeOf(pipebench.Secret("")):
		return &jsonschema.Schema{Type: "string", Description: "a secret: never printed"}
	}
	return nil
}
