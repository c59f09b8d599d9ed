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
				"case":     str("labels the entry's column group in the table (the scenario's case when not given); no two entries share one; {load} stands for the load that ran (rate and duration)"),
				"duration": duration,
				"baseline": map[string]any{"type": "boolean", "description": "marks the case the status rules compare with: the same system under test without load"},
				"expect": map[string]any{
					"type": "object", "additionalProperties": false, "minProperties": 1,
					"description": "the outcome the case is meant to have when it provokes a failure: the suite exits 0 when every case did what it expects, and names each that did not",
					"properties": map[string]any{
						"status": map[string]any{"enum": []any{"passed", "completed", "failed", "invalid"}, "description": "the verdict expected"},
						"failure": map[string]any{"description": "the failures the case must show: one name or a list", "anyOf": []any{nonEmpty("a failure the case must show: a detector's name (shortfall, stall) or a reference report's (F4, F2)"),
							map[string]any{"type": "array", "minItems": 1, "items": nonEmpty("a failure's name")}}},
						"limit": map[string]any{"enum": []any{"system", "pipebench", "none"}, "description": "whose limit the case must hit: system (it held sends back), pipebench (its own: the run invalid) or none"},
					},
				},
			},
		},
	}}
	column := map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"title", "value"},
		"properties": map[string]any{
			"title": str("the column's heading"),
			"value": map[string]any{"type": []any{"string", "number", "boolean"}, "pattern": `^$|\S`,
				"description": `a KPI of the run (sent_rate, latency.p99, a pipeline KPI) or one of the run's own values: "@case", "@version", "@duration", "@failure", "@crashed", "@label:NAME", "@info:SERIES:LABEL" (a label of an info series, like @info:nats_server_info:version)`},
			"phase": str("takes the KPI from the phase of that name (the run's total with rows: run, each case's phase with rows: version, when not given)"),
			"agg": map[string]any{"enum": []any{"", "sum", "max", "instances"},
				"description": "reduces a KPI with several instances: sum, max, or instances (how many)"},
			"unit": map[string]any{"enum": []any{"", "ms", "s", "/min"},
				"description": "converts the KPI for the column: ms or s (a time from its own unit), /min (a rate per second times 60)"},
			"missing": str("what the cell says when the KPI was not measured (instead of a dash), like: no API server (set PIPEBENCH_TEST_KUBE_BIN)"),
		},
	}
	status := map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"kpi"},
		"description": "names each case with a word, as the reference reports do (Stable, Slower, Degraded, Test invalid), from its KPI against the baseline case's",
		"properties": map[string]any{
			"kpi":       nonEmpty("the KPI compared with the baseline case's, like apiserver_latency_seconds.p75"),
			"phase":     str("takes the KPI from the phase of that name (the run's total when not given)"),
			"otherwise": str("the word when no rule holds (Stable)"),
			"invalid":   str("the word of an invalid run, said with its reason (Test invalid)"),
			"saturated": str("the word of a case whose system under test held sends back when no rule named it worse (Saturated): such a case is not Stable"),
			"rules": map[string]any{"type": "array", "minItems": 1, "description": "the first rule that holds names the case",
				"items": map[string]any{"type": "object", "additionalProperties": false, "required": []any{"word", "above"},
					"properties": map[string]any{
						"word":  nonEmpty("the case's word, like Slower"),
						"above": map[string]any{"type": []any{"string", "number"}, "pattern": `^\s*[0-9]*\.?[0-9]+x?\s*$`, "description": "holds when the case's KPI is more than this times the baseline's: 3x"},
					}}},
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
			"builds": map[string]any{"type": "array", "minItems": 1,
				"description": "runs every case once per build of the system under test, labelled with its version: a row per version from one suite run (suite run --build VERSION=COMMAND replaces them); the scenarios' system under test runs the build's command (otelcol, with config_file)",
				"items": map[string]any{"type": "object", "additionalProperties": false, "required": []any{"version", "command"},
					"properties": map[string]any{
						"version": nonEmpty("the build's version label, its row in the table"),
						"command": nonEmpty("the build's program: a path (relative to the suite file) or a name found in PATH, run as the system under test's command"),
					}}},
			"scenarios": map[string]any{"type": "array", "minItems": 1, "items": entry, "uniqueKeys": "case",
				"description": "the scenarios to run, in order: a file or builtin:NAME, or {scenario, case, duration}"},
			"table":  table,
			"status": status,
			"sut": map[string]any{"enum": []any{"keep", "fresh"},
				"description": "keep: one system under test for every case (a report's bursts ran one after another on the same database); fresh (the default): one per case"},
		},
	}
	return json.MarshalIndent(top, "", "  ")
}
