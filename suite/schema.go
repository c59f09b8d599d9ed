package suite

import "encoding/json"

// Schema returns the JSON Schema (draft 2020-12) of suite files: what
// Parse takes, key by key, each with a description. That no two entries
// share a case is said with the keyword uniqueKeys (see package schema:
// editors skip it); that a scenario file exists is left to `pipebench
// suite validate`.
func Schema() ([]byte, error) {
	str := func(desc string) map[string]any {
		// Any scalar is read as text where a string goes.
		return map[string]any{"type": []any{"string", "number", "boolean"}, "description": desc}
	}
	nonEmpty := func(desc string) map[string]any {
		s := str(desc)
		s["pattern"] = `\S`
		return s
	}
	duration := map[string]any{
		"type": "string", "description": "scales the scenario to last this long, as run --duration does: 2m, 90s",
		"allOf": []any{
			map[string]any{"pattern": `^\s*\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+\s*$|^\s*\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?d\s*$`},
			map[string]any{"pattern": `[1-9]`},
		},
	}
	entry := map[string]any{"anyOf": []any{
		map[string]any{"type": "string", "pattern": `\S`, "description": "the short form: a scenario file (relative to the suite file) or builtin:NAME"},
		map[string]any{
			"type": "object", "additionalProperties": false, "required": []any{"scenario"},
			"properties": map[string]any{
				"scenario": nonEmpty("a scenario file, relative to the suite file, or builtin:NAME"),
				"case":     str("labels the entry's column group in the table (the scenario's case when not given); no two entries share one"),
				"duration": duration,
			},
		},
	}}
	column := map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"title", "value"},
		"properties": map[string]any{
			"title": str("the column's heading"),
			"value": map[string]any{"type": []any{"string", "number", "boolean"}, "pattern": `^$|\S`,
				"description": `a KPI of the run (sent_rate, latency.p99, a pipeline KPI) or one of the run's own values: "@case", "@version", "@duration", "@failure", "@crashed", "@label:NAME"`},
			"phase": str("takes the KPI from the phase of that name (the run's total with rows: run, each case's phase with rows: version, when not given)"),
			"agg": map[string]any{"enum": []any{"", "sum", "max", "instances"},
				"description": "reduces a KPI with several instances: sum, max, or instances (how many)"},
		},
	}
	table := map[string]any{
		"type": "object", "additionalProperties": false,
		"description": "the table the suite prints; the default is a row per version of the suite in the history, a column group per case",
		"properties": map[string]any{
			"rows": map[string]any{"enum": []any{"version", "run"},
				"description": "version: a row per version, a column group per case (the default); run: a row per case run"},
			"columns": map[string]any{"type": "array", "minItems": 1, "items": column,
				"description": "the columns, in order; with rows: run the first labels each row"},
		},
		"if": map[string]any{"properties": map[string]any{"rows": map[string]any{"const": "run"}}, "required": []any{"rows"}},
		"then": map[string]any{"properties": map[string]any{"columns": map[string]any{"minItems": 2,
			"description": "with rows: run, at least two columns: the first labels each row"}}},
	}
	top := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "pipebench suite",
		"description":          "A pipebench suite: scenarios run one after the other under one version label, whose results line up as a reference report's table. `pipebench suite validate FILE` checks one as this schema does, and more.",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"name", "scenarios"},
		"properties": map[string]any{
			"name":        nonEmpty("names the suite: its runs are found by it in the history (label suite=NAME)"),
			"description": str("says in a line what the suite compares"),
			"version":     str("labels every run of the suite (a row of the table); run --sut-version overrides it, and each scenario keeps its own when not given"),
			"scenarios": map[string]any{"type": "array", "minItems": 1, "items": entry, "uniqueKeys": "case",
				"description": "the scenarios to run, in order: a file or builtin:NAME, or {scenario, case, duration}"},
			"table": table,
		},
	}
	return json.MarshalIndent(top, "", "  ")
}
