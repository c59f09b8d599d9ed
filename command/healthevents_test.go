package command

import (
	"path/filepath"
	"strings"
	"testing"
)

// The built-in health-events scenario runs end to end: gRPC over a Unix
// socket to the embedded service, its effects read back by the effect
// observer and its histogram by the scrape observer.
func TestHealthEventsBuiltinRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario for several seconds")
	}
	out := filepath.Join(t.TempDir(), "result.json")
	stdout, stderr, code := cli(t, "run", "builtin:health-events", "--duration", "3s", "--quiet", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res := readResult(t, out)
	seen := map[string]bool{}
	for _, s := range res.Series {
		seen[s.Name] = true
	}
	for _, want := range []string{"effects", "effect_backlog", "effect_latency_ms_bucket", "effects_applied", "backlog"} {
		if !seen[want] {
			t.Errorf("no %s series; the result has %v", want, seen)
		}
	}
}

// The quarantine blast: 150 events as fast as 50 workers go, cordoned one
// at a time at 25/s by the embedded service. The Result reports what a
// blast means, read from the effects: about 6 s to complete (150 / 25/s,
// within an observation interval or two), an effect rate of about 25/s,
// and a peak backlog near the 150 sent.
func TestHealthEventsBlastTimeToEffect(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a blast for several seconds")
	}
	out := filepath.Join(t.TempDir(), "result.json")
	stdout, stderr, code := cli(t, "run", "builtin:health-events-blast", "--quiet", "--no-store", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res := readResult(t, out)
	ph := &res.Phases[0]
	ttc, _ := ph.Get("time_to_complete")
	rate, _ := ph.Get("completion_rate")
	peak, _ := ph.Get("peak_backlog")
	// The service applies 25/s at most: it can be late on a loaded
	// machine, never early.
	if ttc < 5 || ttc > 12 {
		t.Errorf("time_to_complete %v s, want about 6 s", ttc)
	}
	if rate < 150/12.0 || rate > 150/5.0 {
		t.Errorf("completion_rate %v/s, want about 25/s", rate)
	}
	if peak < 100 || peak > 150 {
		t.Errorf("peak_backlog %v, want near 150", peak)
	}
	if !strings.Contains(stdout, "time to complete") {
		t.Errorf("the table lacks the blast rows:\n%s", stdout)
	}
}
