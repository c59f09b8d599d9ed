package command

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runCLI(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// cliEnv is cli with the scenarios' ${VAR} looked up in env first, then in
// the environment: for tests that run in parallel (t.Setenv cannot).
func cliEnv(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	lookup := func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
	var out, errb bytes.Buffer
	code = executeWith(context.Background(), nil, lookup, args, &out, &errb)
	return out.String(), errb.String(), code
}

// The README's first command: `pipebench run` with no argument runs the
// built-in quickstart against an embedded pipeline, end to end.
func TestQuickstartRunsWithNoArguments(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the full quickstart")
	}
	t.Parallel() // beside the other long runs that leave the machine's CPU mostly idle
	out := filepath.Join(t.TempDir(), "result.json")
	stdout, stderr, code := cli(t, "run", "--quiet", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"sent", "delivered", "p99"} {
		if !strings.Contains(strings.ToLower(stdout), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	res := readResult(t, out)
	if res.Manifest.Status != pipebench.StatusPassed || res.Total == nil {
		t.Fatalf("status %s reasons %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	sent, _ := res.Total.Get("sent")
	lost, _ := res.Total.Get("lost")
	if sent == 0 || lost != 0 {
		t.Errorf("sent %v lost %v", sent, lost)
	}
}

func TestBadInputsExitWithUsageCode(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\ntarget: {driver: htp}\nphases: [{name: a, duration: 1s, rtae: 5/s}]\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"run", bad}, "htp"},
		{[]string{"validate", bad}, "rtae"},
		{[]string{"plan", "builtin:nope"}, "no built-in scenario"},
		{[]string{"run", "--format", "pdf"}, "unknown --format"},
		{[]string{"run", "--bogus"}, "unknown flag"},
		{[]string{"sink", "--error-ratio", "2"}, "outside 0..1"},
		{[]string{"report", filepath.Join(dir, "missing.json")}, "cannot read the result"},
		{[]string{"limit", "--precision", "2"}, "--precision 2 is outside"},
		{[]string{"limit", "--start", "fast"}, "--start \"fast\" is not a rate"},
		{[]string{"limit", bad}, "htp"},
		{[]string{"run", "builtin:quickstart", "--duration", "0s"}, "--duration 0s cannot be used"},
		{[]string{"run", "builtin:quickstart", "--shard", "5/4"}, "--shard \"5/4\" is not I/N"},
		{[]string{"run", "builtin:quickstart", "--start-at", "yesterday"}, "--start-at \"yesterday\" is not a moment"},
		{[]string{"merge", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"run", "builtin:quickstart", "--checkpoint", "1m"}, "--checkpoint needs --out"},
		{[]string{"run", "builtin:quickstart", "--duration", "1ms"}, "too short"},
	}
	for _, c := range cases {
		_, stderr, code := cli(t, c.args...)
		if code != pipebench.ExitUsage {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", c.args, code, pipebench.ExitUsage, stderr)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr lacks %q:\n%s", c.args, c.want, stderr)
		}
	}
}

func TestPlanAndValidateSendNothing(t *testing.T) {
	stdout, stderr, code := cli(t, "plan")
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "PHASE") || !strings.Contains(stdout, "total:") {
		t.Errorf("plan output:\n%s", stdout)
	}
	stdout, stderr, code = cli(t, "validate", "builtin:quickstart")
	if code != 0 || !strings.Contains(stdout, "ok") {
		t.Fatalf("validate: exit %d: %s %s", code, stdout, stderr)
	}
	stdout, _, code = cli(t, "schema")
	if code != 0 || !json.Valid([]byte(stdout)) {
		t.Fatalf("schema: exit %d, valid JSON %v", code, json.Valid([]byte(stdout)))
	}
}

// pipebench limit end to end: the sink limited to 1,000/s with a sharp
// bucket; the answer is printed, written and saved.
func TestLimitCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("a limit search of several probes")
	}
	dir := t.TempDir()
	scen := filepath.Join(dir, "limit.yaml")
	os.WriteFile(scen, []byte(`
name: limit-cli
target: {driver: http, connections: 8}
workload: {generator: event, size: 64}
sink: {type: http}
interval: 500ms
drain: 2s
phases:
  - {name: load, duration: 2s, rate: 400/s, faults: {rate_limit: 1000/s, rate_limit_burst: 100ms}}
`), 0o644)
	out := filepath.Join(dir, "limit.json")
	stdout, stderr, code := cli(t, "limit", scen, "--probe", "2s", "--precision", "0.3", "--tolerance", "0.01",
		"--budget", "2m", "--out", out, "--store", filepath.Join(dir, "h.db"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "probe 400/s: stable") || !strings.Contains(stdout, "sustainable rate") {
		t.Errorf("probes or answer missing:\n%s\n%s", stderr, stdout)
	}
	res := readResult(t, out)
	if v, ok := res.Total.Get("sustainable_rate"); !ok || v < 700 || v > 1300 {
		t.Errorf("sustainable_rate %v (%v), want about 1,000/s", v, ok)
	}
}

// The CLI's habits: a misspelt flag, command, built-in or file extension
// gets the nearest right one; a value that does not parse says what to
// write; --rate scales the plan's rates.
func TestDidYouMean(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.yml"), []byte("name: s\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--duraton", "30s"}, "did you mean --duration?"},
		{[]string{"run", "--duration", "30"}, "write a number with a unit"},
		{[]string{"run", "builtin:quickstrat"}, `did you mean "quickstart"?`},
		{[]string{"run", "quickstart"}, "did you mean builtin:quickstart?"},
		{[]string{"run", filepath.Join(dir, "s.yaml")}, "did you mean " + filepath.Join(dir, "s.yml")},
		{[]string{"suite", "run", "builtin:kyma-trace"}, `did you mean "kyma-traces"?`},
		{[]string{"rnu"}, "Did you mean this?"},
		{[]string{"plan", "--rate", "fast"}, "--rate"},
	} {
		_, stderr, code := cli(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q in:\n%s", c.args, code, c.want, stderr)
		}
	}
	stdout, stderr, code := cli(t, "plan", "builtin:quickstart", "--rate", "1000/s")
	if code != 0 || !strings.Contains(stdout, "constant 1000/s") || !strings.Contains(stdout, "constant 400/s") {
		t.Errorf("plan --rate: exit %d\n%s%s", code, stdout, stderr)
	}
}
