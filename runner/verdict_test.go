package runner_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/runner"
)

// A verdict never hides a failure. Each case runs a real target on
// loopback whose behaviour is known.

func run(t *testing.T, yaml string) *pipebench.Result {
	t.Helper()
	return scenariotest.Run(t, registry(t), "test.yaml", yaml)
}

func hasLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// failedWithErrors checks a run whose target was reached and accepted
// nothing: it is valid and failed (the system under test failed, exit 99:
// never completed with exit 0, never passed), its total counts n errors
// of class, and its summary says so in words (a line holding words).
func failedWithErrors(t *testing.T, res *pipebench.Result, class string, n float64, words string) {
	t.Helper()
	if res.Manifest.Status != pipebench.StatusFailed || pipebench.ExitFor(res.Manifest.Status) != pipebench.ExitThresholds ||
		!hasLine(res.Manifest.Reasons, "the system under test accepted none of the") {
		t.Fatalf("status %s, want failed, saying the system accepted nothing: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	if got := get(t, res.Total, "errors", "class", class); got != n {
		t.Errorf("errors{class=%s} = %v, want %v", class, got, n)
	}
	if !hasLine(res.Summary, words) {
		t.Errorf("summary does not say %q: %q", words, res.Summary)
	}
}

// A target that answers 503 to everything was reached: the run is valid,
// and, with no thresholds, failed (it accepted nothing), never "completed"
// or "passed", with the failures stated in words and their cause kept.
func TestVerdictAllRefusedIsFailed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	res := run(t, fmt.Sprintf(`
name: all-503
target: {driver: http, url: %q, connections: 4}
phases:
  - {name: load, duration: 1s, rate: 200/s}
`, srv.URL))
	failedWithErrors(t, res, "refused", 200, "200 of 200 items sent were not accepted: refused 200")
	if len(res.Errors["refused"]) == 0 {
		t.Errorf("the refusals lost their cause: %v", res.Errors)
	}
}

// A target that accepts connections and never answers was reached too:
// the sends written time out, the run is valid and failed (it accepted
// nothing), and says so.
// With 4 connections each held for the 200 ms timeout it takes at most
// 20 a second: the other sends wait for a free connection, and those that
// find none within the timeout never leave pipebench: held back by the
// system, not sent.
func TestVerdictNeverAnswersIsFailedWithTimeouts(t *testing.T) {
	addr := drivertest.SilentServer(t) // connections held open, never answered
	res := run(t, fmt.Sprintf(`
name: silent
target: {driver: http, url: "http://%s/", connections: 4, timeout: 200ms}
phases:
  - {name: load, duration: 1s, rate: 50/s}
`, addr))
	timeouts := get(t, res.Total, "errors", "class", "timeout")
	failedWithErrors(t, res, "timeout", timeouts, fmt.Sprintf("timeout %s", pipebench.FormatCount(timeouts)))
	held := get(t, res.Total, "held_back", "reason", "no free connection")
	if sent := get(t, res.Total, "sent"); timeouts+held != 50 || sent != timeouts || held == 0 {
		t.Errorf("sent %v (timed out %v) + held back for no free connection %v, want 50 in all, some held back", sent, timeouts, held)
	}
	if !hasLine(res.Summary, "held back by the system under test and never sent (no free connection") {
		t.Errorf("summary: %q", res.Summary)
	}
}

// Nothing reached the system under test: the port is closed. The driver
// finds out when it opens its connections, and the run is invalid (exit
// 98) with the cause, before anything is measured: still a Result, to be
// written and saved like any other.
func TestVerdictNothingReachedIsInvalid(t *testing.T) {
	addr := testutil.FreeAddr(t) // nothing listens there
	reg := registry(t)
	plan := compile(t, reg, scenariotest.Refused(addr, "errors < 1000000"))
	res, err := runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg})
	if err != nil || res == nil {
		t.Fatalf("an unreached target is a Result, not an error: %v", err)
	}
	if res.Manifest.Status != pipebench.StatusInvalid || pipebench.ExitFor(res.Manifest.Status) != pipebench.ExitInvalid {
		t.Fatalf("status %s, want invalid: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	why := strings.Join(res.Manifest.Reasons, "; ")
	if !strings.Contains(why, "nothing reached the system under test") || !strings.Contains(why, "connection refused") {
		t.Errorf("the cause is lost: %v", why)
	}
	if len(res.Phases) != 0 || res.Total != nil {
		t.Errorf("a run that sent nothing has phases %v and total %v", res.Phases, res.Total)
	}
}

// Thresholds that exist and hold: passed. The same run without them:
// completed. PASSED means thresholds existed and held.
func TestVerdictPassedNeedsThresholds(t *testing.T) {
	base := `
name: ok
target: {driver: http}
sink: {type: http}
drain: 5s
phases:
  - {name: load, duration: 1s, rate: 100/s}
`
	if st := run(t, base).Manifest.Status; st != pipebench.StatusCompleted {
		t.Errorf("without thresholds: %s, want completed", st)
	}
	if st := run(t, base+"thresholds: [\"lost == 0\"]\n").Manifest.Status; st != pipebench.StatusPassed {
		t.Errorf("with a threshold that holds: %s, want passed", st)
	}
}

// A steps phase gives one column per step, each with its own rate; a
// threshold naming the steps phase applies to every step; backlog.max
// exists per phase; what arrives after the last phase is the drain's, so
// the phases and the drain add up to the total.
func TestStepsAreColumnsAndPhasesAddUp(t *testing.T) {
	res := run(t, `
name: stairs
target: {driver: http}
sink: {type: http}
drain: 5s
phases:
  - name: stairs
    steps: [{rate: 100/s, duration: 1s}, {rate: 300/s, duration: 1s}]
thresholds:
  - {expr: "backlog.max < 100000", phase: stairs}
`)
	if len(res.Phases) != 2 || res.Phases[0].Name != "stairs 100/s" || res.Phases[1].Name != "stairs 300/s" {
		t.Fatalf("phases: %v", names(res.Phases))
	}
	for i, want := range []float64{100, 300} {
		if got := get(t, &res.Phases[i], "target_rate"); got != want {
			t.Errorf("%s: target_rate %v, want %v", res.Phases[i].Name, got, want)
		}
		if got := get(t, &res.Phases[i], "sent"); got != want {
			t.Errorf("%s: sent %v, want %v", res.Phases[i].Name, got, want)
		}
		get(t, &res.Phases[i], "backlog.max")
	}
	if n := len(res.Thresholds); n != 2 {
		t.Errorf("the steps threshold was evaluated %d times, want once per step", n)
	}
	if res.Drain == nil {
		t.Fatal("no drain row")
	}
	var sum float64
	for i := range res.Phases {
		sum += get(t, &res.Phases[i], "delivered")
	}
	sum += get(t, res.Drain, "delivered")
	if total := get(t, res.Total, "delivered"); sum != total || total != 400 {
		t.Errorf("phases + drain delivered %v, total %v, want 400 both", sum, total)
	}
}

func names(ps []pipebench.PhaseResult) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
