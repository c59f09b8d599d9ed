package command

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/compare"
	"github.com/pipebench/pipebench/report/markdown"
	"github.com/pipebench/pipebench/store"
)

// pacedSuite writes a one-case suite whose scenario (HTTP driver straight
// to the HTTP sink, 100 events/s for 1 s) the sink answers after latency;
// with a url, the driver aims there instead. Its table is a
// row per run showing the sent rate, p50 and p99 of the total.
func pacedSuite(t *testing.T, dir, latency, url string) string {
	t.Helper()
	target := "{driver: http, connections: 60}"
	if url != "" {
		target = fmt.Sprintf("{driver: http, connections: 60, url: %q}", url)
	}
	scen := `name: paced
target: ` + target + `
workload: {generator: event, size: 64}
sink: {type: http}
drain: 2s
phases:
  - {name: load, duration: 1s, rate: 100/s, faults: {latency: {kind: fixed, fixed: ` + latency + `}}}
`
	if err := os.WriteFile(filepath.Join(dir, "paced.yaml"), []byte(scen), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "paced-suite.yaml")
	os.WriteFile(file, []byte(`name: paced-suite
scenarios:
  - {scenario: paced.yaml, case: Paced}
table:
  rows: run
  columns:
    - {title: Test, value: "@case"}
    - {title: Sent/s, value: sent_rate}
    - {title: P50 (ms), value: latency.p50}
    - {title: P99 (ms), value: latency.p99}
    - {title: Status, value: "@status"}
`), 0o644)
	return file
}

// verdictLine returns the fields of the line of the gate's or compare's
// verdicts on kpi: case, phase, KPI, baseline, candidate, change, ...
func verdictLine(t *testing.T, out, kpi string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[2] == kpi {
			return f
		}
	}
	t.Fatalf("no verdict on %s:\n%s", kpi, out)
	return nil
}

// worse reports whether a verdict line says the KPI regressed.
func worse(f []string) bool { return strings.Contains(strings.Join(f, " "), "▼ worse:") }

// The case, with real runs: a suite case whose numbers describe
// nothing of the system under test (INVALID: its requests were plain HTTP
// to a TLS server, which took none) is struck out in the suite's table
// with its reason, and compare and gate leave it out and say so. The gate then judges what the table shows (the total's sent
// rate, p50 and p99) from two valid runs a side: the sink answering in
// 400 ms instead of 100 ms is a regression whose whole interval lies beyond the
// tolerance (exit 99). A version with no valid run cannot be gated (exit
// 98), and a tolerance of NaN, infinity or below 0 is refused (exit 2).
func TestSuiteInvalidCaseMarkedAndLeftOut(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	suiteRun := func(version, latency, url string, wantCode int) string {
		t.Helper()
		file := pacedSuite(t, dir, latency, url)
		stdout, stderr, code := cli(t, "suite", "run", file, "-q", "--sut-version", version, "--store", db)
		if code != wantCode {
			t.Fatalf("suite run %s (latency %s, url %q): exit %d, want %d\n%s\n%s", version, latency, url, code, wantCode, stdout, stderr)
		}
		return stdout
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer tlsSrv.Close()
	table := suiteRun("1.0.0", "100ms", "http://"+tlsSrv.Listener.Addr().String()+"/", pipebench.ExitInvalid)
	if !regexp.MustCompile(`\| Paced INVALID\[\^1\] \| ~~[0-9.]+~~ \| ~~[0-9.]+~~ \| ~~[0-9.]+~~ \| invalid \|`).MatchString(table) ||
		!strings.Contains(table, "[^1]: 1.0.0, Paced INVALID (run ") || !strings.Contains(table, "protocol mismatch") {
		t.Fatalf("the invalid case is not marked in the suite's table:\n%s", table)
	}
	for range 2 { // interleaved
		suiteRun("1.0.0", "100ms", "", 0)
		suiteRun("1.1.0", "400ms", "", 0)
	}

	out, errOut, code := cli(t, "compare", "--suite", filepath.Join(dir, "paced-suite.yaml"), "--store", db)
	if code != 0 || !strings.Contains(out, "left out of the comparison: 1 run(s)") || !strings.Contains(out, "(1 invalid)") ||
		!strings.Contains(out, "1.0.0 Paced, run ") || !strings.Contains(out, "protocol mismatch") {
		t.Fatalf("compare --suite: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "gate", "--suite", filepath.Join(dir, "paced-suite.yaml"), "--baseline", "1.0.0", "--store", db)
	if code != pipebench.ExitThresholds || !strings.Contains(errOut, "regressed") {
		t.Fatalf("gate: exit %d\n%s\n%s", code, out, errOut)
	}
	p50 := verdictLine(t, out, "latency.p50")
	if p50[1] != compare.Total || !worse(p50) {
		t.Errorf("p50 of the total: want a regression from about 100 ms to 400:\n%s", out)
	}
	// The p99 of two runs a side on a loaded machine may be too spread
	// to decide; whatever its verdict, its baseline is the valid runs'.
	p99 := verdictLine(t, out, "latency.p99")
	if base, err := strconv.ParseFloat(p99[3], 64); err != nil || base > 700 {
		t.Errorf("p99's baseline holds the invalid run's second:\n%s", out)
	}
	verdictLine(t, out, "sent_rate")
	if strings.Contains(out, "delivered_rate") || strings.Contains(out, "e2e_latency") {
		t.Errorf("the gate judged a KPI the suite's table does not show:\n%s", out)
	}
	if !strings.Contains(out, "left out of the comparison: 1 run(s)") {
		t.Errorf("the gate did not say what it left out:\n%s", out)
	}
	for _, bad := range []string{"NaN", "Inf", "-Inf", "-0.5", "1e999"} {
		_, errOut, code := cli(t, "gate", "--suite", "paced-suite", "--baseline", "1.0.0", "--store", db, "--tolerance", bad)
		if code != pipebench.ExitUsage || !strings.Contains(errOut, `--tolerance "`+bad+`" is not a valid value`) {
			t.Errorf("--tolerance %s: exit %d\n%s", bad, code, errOut)
		}
	}
	for _, bad := range [][]string{{"--confidence", "1"}, {"--confidence", "NaN"}, {"--max-cv", "0"}, {"--max-cv", "-1"}} {
		_, errOut, code := cli(t, append([]string{"compare", "--store", db}, bad...)...)
		if code != pipebench.ExitUsage || !strings.Contains(errOut, bad[0]) {
			t.Errorf("compare %v: exit %d\n%s", bad, code, errOut)
		}
	}

	// The real invalid run under a version of its own: nothing to gate.
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(context.Background(), pipebench.RunFilter{Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range runs {
		if sum.Status == pipebench.StatusInvalid {
			r, err := s.Run(context.Background(), sum.ID)
			if err != nil {
				t.Fatal(err)
			}
			r.Manifest.Version, r.Manifest.RunID = "0.9.0", "relabelled-invalid"
			if _, err := s.Save(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()
	out, errOut, code = cli(t, "gate", "--suite", "paced-suite", "--baseline", "0.9.0", "--candidate", "1.1.0", "--store", db)
	if code != pipebench.ExitInvalid || !strings.Contains(errOut, `baseline "0.9.0" has 0 of 1`) || !strings.Contains(out, "run relabelled-invalid: invalid") {
		t.Errorf("gate on an invalid baseline only: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A blast suite is judged on the columns of its table (the markdown
// defaults for blasts: time to complete, peak queue, completion rate),
// from real blasts through the embedded relay: with the sink answering in
// 10 ms behind a relay of 2 workers, the candidate takes several times
// longer to complete and completes at a fraction of the rate, and the gate
// says so from three runs a side (with two, a loaded machine's spread
// leaves time to complete undecided); the same system under another
// version label passes.
func TestGateJudgesBlastSuiteColumns(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	write := func(latency string) string {
		faults := ""
		if latency != "" {
			faults = ", faults: {latency: {kind: fixed, fixed: " + latency + "}}"
		}
		os.WriteFile(filepath.Join(dir, "blast.yaml"), []byte(`name: small-blast
sut: {type: relay, workers: 2}
target: {driver: http, connections: 20}
workload: {generator: event, size: 64}
sink: {type: http}
drain: 20s
phases:
  - {name: blast, blast: {count: 300, workers: 20}, duration: 30s`+faults+`}
`), 0o644)
		file := filepath.Join(dir, "blast-suite.yaml")
		os.WriteFile(file, []byte("name: blast-suite\nscenarios:\n  - {scenario: blast.yaml, case: \"300\"}\n"), 0o644)
		return file
	}
	// Interleaved, as replicates should be: a machine whose load drifts
	// must not make one version look slower than another.
	for range 3 {
		for _, v := range []struct{ version, latency string }{{"1.0.0", ""}, {"1.1.0", "10ms"}, {"1.1.1", "10ms"}} {
			file := write(v.latency)
			if stdout, stderr, code := cli(t, "suite", "run", file, "-q", "--sut-version", v.version, "--store", db); code != 0 {
				t.Fatalf("suite run %s: exit %d\n%s\n%s", v.version, code, stdout, stderr)
			}
		}
	}
	out, errOut, code := cli(t, "gate", "--suite", "blast-suite", "--baseline", "1.0.0", "--candidate", "1.1.0", "--store", db)
	if code != pipebench.ExitThresholds {
		t.Fatalf("gate: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, kpi := range []string{"time_to_complete", "completion_rate"} {
		if f := verdictLine(t, out, kpi); !worse(f) {
			t.Errorf("%s not a regression:\n%s", kpi, out)
		}
	}
	// Judged too, but a busy machine may queue in one baseline run and not
	// the others: not always decided.
	verdictLine(t, out, "peak_backlog")
	if strings.Contains(out, "latency.p99") {
		t.Errorf("judged p99, which the blast table does not show:\n%s", out)
	}
	// The same system under another label: noise only. (The slow one: a
	// blast of 300 in 50 ms is at the mercy of whatever ran just before
	// it, and on a busy machine two labels of it can differ by half
	// consistently enough to count.)
	// Never a regression; a KPI the noise leaves undecided (peak_backlog,
	// on a busy machine) fails the gate closed (97), unless allowed.
	out, errOut, code = cli(t, "gate", "--suite", "blast-suite", "--baseline", "1.1.0", "--candidate", "1.1.1", "--store", db)
	if code != 0 && code != pipebench.ExitUndecided {
		t.Errorf("noise alone failed the gate: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "gate", "--suite", "blast-suite", "--baseline", "1.1.0", "--candidate", "1.1.1", "--store", db, "--allow-undecided")
	if code != 0 || !strings.Contains(out, "gate: passed") {
		t.Errorf("noise alone failed the gate: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "gate", "--suite", "blast-suite", "--baseline", "1.0.0", "--candidate", "1.0.0", "--store", db)
	if code != pipebench.ExitUsage {
		t.Errorf("a version against itself: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Without running anything: the KPIs judged for the built-in blast suite
// are its table's, each from the blast phase.
func TestJudgedKPIsOfABuiltinSuite(t *testing.T) {
	a := &app{}
	ms := compare.Judged(nil, a.suiteTable("builtin:nvsentinel-blast"), true)
	got := map[string]string{}
	for _, m := range ms {
		got[m.KPI] = m.Phase
	}
	for _, kpi := range []string{"time_to_complete", "peak_backlog", "completion_rate", "effect_latency_ms.p99"} {
		if got[kpi] != "blast" {
			t.Errorf("%s: %q in %+v", kpi, got[kpi], ms)
		}
	}
	if _, ok := got["latency.p99"]; ok {
		t.Errorf("p99 judged: %+v", ms)
	}
	plain := compare.Judged(nil, a.suiteTable("nope"), false)
	if len(plain) != len(compare.DefaultKPIs)+len(markdown.Generic) {
		t.Errorf("outside a suite: the defaults and the generic table's: %+v", plain)
	}
}
