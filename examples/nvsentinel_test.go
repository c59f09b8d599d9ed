package examples_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/scenario"
)

// The built-in reference suites of the nvsentinel report, run as
// `pipebench suite run` runs them (internal/testkit/suitetest), their tables
// checked against what the report's tables mean.

// runSuite runs builtin:NAME without an API server, with o, and returns
// the rows of its table NAME (the header first), the whole table and the
// log; an exit code other than 0 (or one of also) fails the test.
func runSuite(t *testing.T, name string, o scenario.Overrides, also ...int) (rows [][]string, table, log string) {
	t.Helper()
	out := suitetest.Run(t, "builtin:"+name, suitetest.NoAPIServer, o)
	if out.Code != 0 && !slices.Contains(also, out.Code) {
		t.Fatalf("exit %d\n%s\n%s", out.Code, out.Table, out.Log)
	}
	return suitetest.Rows(t, out.Table, name), out.Table, out.Log
}

// The built-in sustained suite at 3 s a case (two store readings at least
// in each, with the other suites running beside it), without an API server (the
// API server's path is tested in sut/healthevents, where one starts once):
// a baseline row and one row per test (Light, Medium, Heavy) in the
// reference's shape, labelled with the duration that ran; the API server's
// columns say why they are empty and how to fill them; the store's columns
// are FerretDB's own status through PromQL: every event sent is stored.
func TestBuiltinNVSentinelSustainedSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four cases")
	}
	t.Parallel()
	rows, stdout, _ := runSuite(t, "nvsentinel-sustained", scenario.Overrides{Duration: 3 * time.Second, DurationSet: true})
	suitetest.CheckHeader(t, rows, "Test", "Ran", "Request Rate (req/s)", "P50 Latency (ms)", "P75 Latency (ms)", "P95 Latency (ms)", "P99 Latency (ms)",
		"Insert Rate (ops/min)", "Total Events", "Memory (MB)", "Connections", "Performance", "System under test", "Scale")
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 4:\n%s", len(rows)-1, stdout)
	}
	if r := rows[1]; r[0] != "Baseline (no load)" || r[11] != "Baseline" || suitetest.Number(t, r, 8) != 0 {
		t.Errorf("baseline row %v", r)
	}
	for i, want := range []struct {
		test string
		rate float64
	}{{"Light load (30 events/s) 3s", 30}, {"Medium load (100 events/s) 3s", 100}, {"Heavy load (500 events/s) 3s", 500}} {
		r := rows[i+2]
		if r[0] != want.test || r[12] != "fresh for this case" {
			t.Errorf("row %v, want %s, fresh", r, want.test)
		}
		if !strings.HasPrefix(r[2], "no API server (set PIPEBENCH_TEST_KUBE_BIN") || r[3] != "no API server" {
			t.Errorf("%s: the API server's columns %q, %q do not say why they are empty", want.test, r[2], r[3])
		}
		if stored := suitetest.Number(t, r, 8); stored != 3*want.rate {
			t.Errorf("%s: %g events stored, want %g", want.test, stored, 3*want.rate)
		}
		if mem := suitetest.Number(t, r, 9); mem < 5 || mem > 4000 {
			t.Errorf("%s: store memory %g MB", want.test, mem)
		}
		suitetest.Number(t, r, 7)  // inserts per minute
		suitetest.Number(t, r, 10) // connections
		if !strings.HasPrefix(r[11], "no apiserver_latency_seconds.p75") {
			t.Errorf("%s: status %q without an API server to compare", want.test, r[11])
		}
	}
}

// The built-in burst suite at 2 s a case: the 1, 3 and 5 minute cases of
// one rate become one case each at that duration (labelled "2s"), on one
// system under test kept running from the baseline on (the table says so).
// On a machine too busy to send 4,200 events/s a case is invalid (exit
// 98), and its status says why.
func TestBuiltinNVSentinelBurstSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five cases")
	}
	t.Parallel()
	rows, stdout, stderr := runSuite(t, "nvsentinel-burst", scenario.Overrides{Duration: 2 * time.Second, DurationSet: true}, 98)
	if !strings.Contains(stderr, "runs once") {
		t.Errorf("no word of the cases run once:\n%s", stderr)
	}
	suitetest.CheckHeader(t, rows, "Test", "Duration", "Request Rate (req/s)", "P50 Latency (ms)", "P75 Latency (ms)", "P95 Latency (ms)", "P99 Latency (ms)",
		"Insert Rate (ops/min)", "Memory (MB)", "Connections", "Refused (/s)", "System Status", "System under test", "Scale")
	want := []string{"Baseline (no load)", "Moderate Burst (1,500 events/s) 2s", "High Burst (3,000 events/s) 2s",
		"Extreme Burst (4,200 events/s) 2s", "Extended Extreme Burst (4,200 events/s) 2s"}
	if len(rows) != len(want)+1 {
		t.Fatalf("%d rows, want %d:\n%s", len(rows)-1, len(want), stdout)
	}
	for i, w := range want {
		r := rows[i+1]
		// The load ran 2 s, or longer when the machine was too busy to
		// keep the schedule (and the case is invalid: its cells struck
		// out, its label marked INVALID[^N]).
		invalid := strings.HasPrefix(r[11], "Test invalid")
		label, _, _ := strings.Cut(r[0], " INVALID[")
		if label != w || !invalid && (suitetest.Number(t, r, 1) < 2 || suitetest.Number(t, r, 1) > 4) {
			t.Errorf("row %v, want %s for 2 s", r, w)
		}
		kept := "kept running from case 1 (Baseline (no load))"
		if i == 0 {
			kept = "started here, kept for the next cases"
		}
		if r[12] != kept {
			t.Errorf("%s: system under test %q, want %q", w, r[12], kept)
		}
		if invalid {
			t.Logf("%s was invalid here (the machine is busy): %v", w, r)
			continue
		}
		if i > 0 {
			suitetest.Number(t, r, 8) // memory
		}
	}
}

// The built-in blast suite (its length is the service's: 150, 375 and 750
// cordons at 50/s, about 26 s), without an API server (tested in
// sut/healthevents): "Scale | Nodes | Time to Complete | Peak Queue | Avg
// Rate" as in the reference, read from the effects, both latencies (the
// send-to-effect, queue wait included, above the quarantine stage's own
// handling time) and each case's stage breakdown. The time to complete is
// count/50 within an observation interval (0.5 s) and the effects' first
// poll; the peak queue near the count.
func TestBuiltinNVSentinelBlastSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three blasts (about 30 s)")
	}
	t.Parallel()
	rows, stdout, _ := runSuite(t, "nvsentinel-blast", scenario.Overrides{})
	suitetest.CheckHeader(t, rows, "Scale", "Nodes", "Time to Complete (s)", "Peak Queue", "Avg Rate (/s)", "Send-to-effect P50 (ms)", "Send-to-effect P90 (ms)",
		"Send-to-effect P99 (ms)", "Handling P50 (ms)", "Handling P90 (ms)", "Handling P99 (ms)", "Peak Backlog (Prometheus)", "Limit", "Status")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 3:\n%s", len(rows)-1, stdout)
	}
	for i, want := range []struct {
		scale string
		nodes float64
	}{{"10%", 150}, {"25%", 375}, {"50%", 750}} {
		r := rows[i+1]
		if r[0] != want.scale || suitetest.Number(t, r, 1) != want.nodes || r[12] != "none" || r[13] != "completed" {
			t.Errorf("row %v, want %s of %g nodes, no limit hit, completed", r, want.scale, want.nodes)
		}
		ideal := want.nodes / 50
		// The quarantine stage is paced at 50/s and does real work per
		// event (a store update, a cordon): never faster than the pace,
		// slower on a machine too busy to do the work in 20 ms; the time
		// to complete is the count at the rate it managed.
		avg := suitetest.Number(t, r, 4)
		if avg < 0.4*50 || avg > 52 {
			t.Errorf("%s: average rate %g/s, want at most 50/s and not far below", want.scale, avg)
		}
		if ttc := suitetest.Number(t, r, 2); ttc < ideal*0.95 || ttc > want.nodes/avg*1.2+2 {
			t.Errorf("%s: time to complete %g s at %g/s, want about %g s", want.scale, ttc, avg, want.nodes/avg)
		}
		if peak := suitetest.Number(t, r, 3); peak < 0.6*want.nodes || peak > want.nodes {
			t.Errorf("%s: peak queue %g, want near %g", want.scale, peak, want.nodes)
		}
		// Events waited in the queue for up to the whole blast: the p99
		// near the time to complete, the p50 about half of it.
		p50, p99 := suitetest.Number(t, r, 5), suitetest.Number(t, r, 7)
		if p99 < 0.7*ideal*1000 || p50 > 0.75*p99 {
			t.Errorf("%s: effect p50 %g ms, p99 %g ms; the blast took about %g s", want.scale, p50, p99, ideal)
		}
		// The handling is one event's work, without its wait.
		if h50 := suitetest.Number(t, r, 8); h50 <= 0 || h50 >= p50 {
			t.Errorf("%s: handling p50 %g ms, send-to-effect p50 %g ms", want.scale, h50, p50)
		}
	}
	for _, c := range []string{"10%", "25%", "50%"} {
		if !strings.Contains(stdout, "Where the time goes ("+c+": ") {
			t.Errorf("no stage breakdown of %s:\n%s", c, stdout)
		}
	}
	if !strings.Contains(stdout, "| Quarantine handling [D]->[E] |") || !strings.Contains(stdout, "in sequence: adds up in the total") {
		t.Errorf("the stage breakdown lacks the quarantine stage:\n%s", stdout)
	}
}
