package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

// Every command that prints a table prints one JSON object with
// --format json, which a JSON parser reads back with the documented shape
// ("kind", "format": 1, and each command's fields); nothing else is
// written to stdout, and the exit codes are the text form's.
func TestEveryTableCommandPrintsJSON(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	file := pacedSuite(t, dir, "100ms", "")
	for _, v := range []struct{ version, latency string }{{"1.0.0", "50ms"}, {"1.1.0", "300ms"}, {"1.0.0", "50ms"}, {"1.1.0", "300ms"}} {
		file = pacedSuite(t, dir, v.latency, "")
		// A run the loaded machine could not pace is kept too (98): the
		// JSON below then shows it left out.
		if out, errOut, code := cli(t, "suite", "run", file, "-q", "--sut-version", v.version, "--store", db); code != 0 && code != pipebench.ExitInvalid {
			t.Fatalf("suite run: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	parse := func(args []string, wantCode int) map[string]any {
		t.Helper()
		out, errOut, code := cli(t, args...)
		if code != wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s\n%s", args, code, wantCode, out, errOut)
		}
		var doc map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%v: stdout is not JSON: %v\n%s", args, err, out)
		}
		if dec.More() {
			t.Fatalf("%v: more than one JSON value on stdout:\n%s", args, out)
		}
		return doc
	}
	listed := func(doc map[string]any, key string) []any {
		t.Helper()
		l, ok := doc[key].([]any)
		if !ok {
			t.Fatalf("no list %q in %v", key, doc)
		}
		return l
	}
	kind := func(doc map[string]any, want string) {
		t.Helper()
		if doc["kind"] != want || doc["format"] != 1.0 {
			t.Fatalf("kind %v format %v, want %s 1", doc["kind"], doc["format"], want)
		}
	}

	h := parse([]string{"history", "--store", db, "--format", "json"}, 0)
	kind(h, "history")
	runs := listed(h, "runs")
	if len(runs) != 4 {
		t.Fatalf("history: %d runs, want 4", len(runs))
	}
	first := runs[0].(map[string]any)
	for _, k := range []string{"id", "scenario", "version", "status", "started", "duration_s"} {
		if _, ok := first[k]; !ok {
			t.Errorf("history run without %s: %v", k, first)
		}
	}

	res := parse([]string{"show", first["id"].(string), "--store", db, "--format", "json"}, 0)
	if m, _ := res["manifest"].(map[string]any); m == nil || m["run_id"] != first["id"] {
		t.Errorf("show --format json is not the run's Result: %v", res["manifest"])
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nphases: [{name: x, duration: 1s, rate: -5/s}]\n"), 0o644)
	v := parse([]string{"validate", filepath.Join(dir, "paced.yaml"), bad, "--format", "json"}, pipebench.ExitUsage)
	kind(v, "validate")
	sc := listed(v, "scenarios")
	if len(sc) != 2 || sc[0].(map[string]any)["ok"] != true || sc[1].(map[string]any)["ok"] != false || sc[1].(map[string]any)["error"] == "" {
		t.Errorf("validate: %v", sc)
	}

	c := parse([]string{"compare", "--store", db, "--format", "json"}, 0)
	kind(c, "compare")
	groups := listed(c, "groups")
	if len(groups) != 1 {
		t.Fatalf("compare: %d groups", len(groups))
	}
	g := groups[0].(map[string]any)
	diff, _ := g["diff"].(map[string]any)
	if diff == nil || diff["baseline"] != "1.0.0" || diff["candidate"] != "1.1.0" || len(listed(diff, "verdicts"))+len(listed(diff, "excluded")) == 0 {
		t.Fatalf("compare's diff: %v", g["diff"])
	}
	if table, _ := g["table"].(map[string]any); table == nil || len(listed(table, "rows")) == 0 {
		t.Errorf("compare's table: %v", g["table"])
	}
	cs := parse([]string{"compare", "--suite", file, "--store", db, "--format", "json"}, 0)
	kind(cs, "compare")

	out, errOut, code := cli(t, "gate", "--suite", file, "--baseline", "1.0.0", "--store", db, "--format", "json")
	var gate map[string]any
	if err := json.Unmarshal([]byte(out), &gate); err != nil {
		t.Fatalf("gate: stdout is not JSON: %v\n%s\n%s", err, out, errOut)
	}
	kind(gate, "gate")
	if gate["exit_code"] != float64(code) || gate["passed"] != (code == 0) {
		t.Errorf("gate: exit %d, JSON says passed %v, exit_code %v", code, gate["passed"], gate["exit_code"])
	}
	if code == pipebench.ExitThresholds {
		var worse int
		for _, v := range listed(gate, "verdicts") {
			if v.(map[string]any)["judgement"] == "worse" {
				worse++
			}
		}
		if worse == 0 || !strings.Contains(gate["message"].(string), "regressed") {
			t.Errorf("gate: exit 99 with no verdict worse: %v", gate)
		}
	} else if code != pipebench.ExitInvalid && code != 0 {
		t.Errorf("gate: exit %d\n%s", code, errOut)
	}

	sl := parse([]string{"suite", "list", "--format", "json"}, 0)
	kind(sl, "suites")
	if len(listed(sl, "suites")) < 3 {
		t.Errorf("suite list: %v", sl)
	}
	sv := parse([]string{"suite", "validate", "builtin:kafka", "--format", "json"}, 0)
	kind(sv, "suite-validate")
	if sv["suite"] != "kafka" || len(listed(sv, "cases")) != 2 {
		t.Errorf("suite validate: %v", sv)
	}

	for _, flag := range [][]string{{"--format", "json"}, {"--json"}} {
		p := parse(append([]string{"plan", "builtin:quickstart"}, flag...), 0)
		if len(listed(p, "phases")) == 0 {
			t.Errorf("plan %v: %v", flag, p)
		}
	}

	for _, args := range [][]string{{"history", "--store", db, "--format", "yaml"}, {"suite", "list", "--format", "xml"}, {"gate", "--baseline", "1", "--store", db, "--format", "csv"}} {
		if _, errOut, code := cli(t, args...); code != pipebench.ExitUsage || !strings.Contains(errOut, "valid formats: text, json") {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
		}
	}
}
