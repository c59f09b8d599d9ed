package command

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// A suite whose cases state the outcome they expect: one meant to be
// invalid (its target refuses every connection: nothing reached), one that
// provokes a saturation (max_in_flight 1 against a sink holding each
// answer 200 ms), and a plain one. The suite exits 0 and names the cases
// that did what they expected; the same suite with a case expecting a
// failure that does not come exits 99 and names it. The table shows every
// case either way, with which limit each hit.
func TestSuiteCasesStateTheOutcomeTheyExpect(t *testing.T) {
	dir := t.TempDir()
	closed := testutil.FreeAddr(t) // nothing listens there
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("refused.yaml", fmt.Sprintf(`name: expect-refused
target: {driver: http, url: "http://%s/", connections: 2}
workload: {generator: event, size: 64}
phases:
  - {name: load, duration: 1s, rate: 50/s}
`, closed))
	write("held.yaml", `name: expect-held
target: {driver: http, connections: 2}
workload: {generator: event, size: 64}
sink: {type: http}
drain: 2s
defaults: {max_in_flight: 1}
phases:
  - {name: load, duration: 1s, rate: 100/s, faults: {latency: 200ms}}
`)
	write("plain.yaml", `name: expect-plain
target: {driver: http, connections: 2}
workload: {generator: event, size: 64}
sink: {type: http}
drain: 2s
phases:
  - {name: load, duration: 1s, rate: 50/s}
`)
	suite := func(heldExpects string) string {
		return `name: expectations
scenarios:
  - {scenario: refused.yaml, case: Refused, expect: {status: invalid}}
  - {scenario: held.yaml, case: Held, expect: ` + heldExpects + `}
  - {scenario: plain.yaml, case: Plain}
table:
  rows: run
  columns:
    - {title: Test, value: "@case"}
    - {title: Limit, value: "@limit"}
    - {title: Held back, value: held_back}
`
	}
	write("met.yaml", suite("{limit: system}"))
	out, errOut, code := cli(t, "suite", "run", filepath.Join(dir, "met.yaml"), "--no-store", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d, want 0: every case did what it expected\n%s\n%s", code, out, errOut)
	}
	all := out + errOut
	for _, want := range []string{"case Refused: did what it expects (status invalid)", "case Held: did what it expects (system's limit)",
		"2 case(s) did what they expect: Refused, Held", "| Held | system saturated at"} {
		if !strings.Contains(all, want) {
			t.Errorf("the suite's output lacks %q:\n%s", want, all)
		}
	}
	write("unmet.yaml", suite("{failure: F2}"))
	out, errOut, code = cli(t, "suite", "run", filepath.Join(dir, "unmet.yaml"), "--no-store", "--quiet")
	all = out + errOut
	if code != 99 {
		t.Errorf("exit %d, want 99: a case did not do what it expected\n%s", code, all)
	}
	for _, want := range []string{"case Held: expected failure F2, but: no failure F2", "1 case(s) did not do what they expect: Held", "| Refused INVALID", "| Plain |"} {
		if !strings.Contains(all, want) {
			t.Errorf("the suite's output lacks %q:\n%s", want, all)
		}
	}
	// Without expectations the invalid case fails the suite, as before.
	write("none.yaml", strings.Replace(suite("{limit: system}"), ", expect: {status: invalid}", "", 1))
	if _, _, code := cli(t, "suite", "run", filepath.Join(dir, "none.yaml"), "--no-store", "--quiet"); code != 98 {
		t.Errorf("exit %d, want 98: an invalid case that expects nothing", code)
	}
}
