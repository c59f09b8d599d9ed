package command

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	"github.com/pipebench/pipebench/store"
	"github.com/pipebench/pipebench/store/storetest"
)

// saved is one run to put in a history.
type saved struct {
	id, scenario, version string
	accepted              float64
	age                   time.Duration
}

func saveRuns(t *testing.T, ref string, runs ...saved) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, r := range runs {
		res := resulttest.Pipeline(r.version, "single pipeline", r.accepted)
		res.Phases = res.Phases[:1]
		res.Manifest.RunID, res.Manifest.Scenario = r.id, r.scenario
		res.Manifest.Started = time.Now().Add(-r.age).Add(time.Duration(i) * time.Second)
		res.Manifest.Ended = res.Manifest.Started.Add(time.Minute)
		if _, err := s.Save(ctx, res); err != nil {
			t.Fatal(err)
		}
	}
}

// Both backends: a SQLite file, and PostgreSQL when one is configured.
func onBothStores(t *testing.T, test func(t *testing.T, ref string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, filepath.Join(t.TempDir(), "h.db")) })
	t.Run("postgres", func(t *testing.T) { test(t, storetest.PostgresSchema(t, storetest.PostgresURL(t))) })
}

// The gate holds the candidate to its own scenario and case: a metrics
// scenario whose case has the same name, at a fifth of the rate, is not
// the baseline of the traces runs.
func TestGateNeverMixesScenarios(t *testing.T) {
	onBothStores(t, func(t *testing.T, ref string) {
		saveRuns(t, ref,
			saved{"t1", "traces", "1.0", 20000, time.Hour}, saved{"t2", "traces", "1.0", 20100, time.Hour},
			saved{"m1", "metrics", "1.0", 4000, time.Hour}, saved{"m2", "metrics", "1.0", 4010, time.Hour},
			saved{"t3", "traces", "2.0", 20050, 0}, saved{"t4", "traces", "2.0", 19990, 0})
		out, errOut, code := cli(t, "gate", "--baseline", "1.0", "--store", ref)
		if code != 0 || !strings.Contains(out, "gate: passed") {
			t.Fatalf("gate: exit %d\n%s%s", code, out, errOut)
		}
		if strings.Contains(out, "metrics") || strings.Contains(out, "worse") {
			t.Errorf("the gate looked at another scenario:\n%s", out)
		}
		// A real regression of the traces scenario still fails it.
		saveRuns(t, ref, saved{"t5", "traces", "3.0", 10000, 0}, saved{"t6", "traces", "3.0", 10010, 0})
		_, errOut, code = cli(t, "gate", "--baseline", "1.0", "--candidate", "3.0", "--store", ref)
		if code != pipebench.ExitThresholds || !strings.Contains(errOut, "regressed") {
			t.Errorf("gate on a halved rate: exit %d %s", code, errOut)
		}
	})
}

// One run against one run is too few to tell noise from change: the
// gate fails closed (exit 97, ExitUndecided) with a note, whatever the
// numbers, and passes with a line saying so only when told to
// (--allow-undecided).
func TestGateOneRunEachIsTooFew(t *testing.T) {
	onBothStores(t, func(t *testing.T, ref string) {
		saveRuns(t, ref, saved{"a", "traces", "1.0", 20000, time.Hour}, saved{"b", "traces", "2.0", 9000, 0})
		out, errOut, code := cli(t, "gate", "--baseline", "1.0", "--store", ref)
		if code != pipebench.ExitUndecided || !strings.Contains(errOut, "not every KPI was decided") {
			t.Fatalf("exit %d, want %d\n%s%s", code, pipebench.ExitUndecided, out, errOut)
		}
		if !strings.Contains(out, "too few runs to tell") || !strings.Contains(out, "repeat each side at least 2 times") {
			t.Errorf("no note:\n%s", out)
		}
		out, errOut, code = cli(t, "gate", "--baseline", "1.0", "--store", ref, "--allow-undecided")
		if code != 0 || !strings.Contains(out, "gate: passed, though not every KPI was decided") {
			t.Errorf("--allow-undecided: exit %d\n%s%s", code, out, errOut)
		}
		if strings.Contains(out, "▼ worse") {
			t.Errorf("a one-run change reported as a regression:\n%s", out)
		}
	})
}

// compare without --scenario prints one table per scenario, each with its
// own verdicts.
func TestCompareOneTablePerScenario(t *testing.T) {
	onBothStores(t, func(t *testing.T, ref string) {
		saveRuns(t, ref,
			saved{"t1", "traces", "1.0", 20000, time.Hour}, saved{"t2", "traces", "2.0", 20000, 0},
			saved{"m1", "metrics", "1.0", 4000, time.Hour}, saved{"m2", "metrics", "2.0", 4000, 0})
		out, errOut, code := cli(t, "compare", "--store", ref)
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		m, tr := strings.Index(out, "## metrics"), strings.Index(out, "## traces")
		if m < 0 || tr < m {
			t.Fatalf("want a metrics then a traces section:\n%s", out)
		}
		if strings.Count(out, "| 1.0 |") != 2 || strings.Count(out, "2.0 against 1.0:") != 2 {
			t.Errorf("want a table and verdicts per scenario:\n%s", out)
		}
		out, _, _ = cli(t, "compare", "--store", ref, "--scenario", "traces")
		if strings.Contains(out, "##") || strings.Count(out, "| 1.0 |") != 1 {
			t.Errorf("--scenario traces:\n%s", out)
		}
	})
}

// history --since takes days like scenario durations do.
func TestHistorySinceDays(t *testing.T) {
	onBothStores(t, func(t *testing.T, ref string) {
		saveRuns(t, ref, saved{"old", "traces", "1.0", 1, 10 * 24 * time.Hour}, saved{"new", "traces", "1.0", 1, 2 * 24 * time.Hour})
		out, errOut, code := cli(t, "history", "--since", "7d", "--store", ref)
		if code != 0 || !strings.Contains(out, "new") || strings.Contains(out, "old") {
			t.Errorf("--since 7d: exit %d\n%s%s", code, out, errOut)
		}
		_, errOut, code = cli(t, "history", "--since", "7x", "--store", ref)
		if code != pipebench.ExitUsage || !strings.Contains(errOut, "--since") {
			t.Errorf("--since 7x: exit %d %s", code, errOut)
		}
	})
}
