package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipebench/pipebench"
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
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res pipebench.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range res.Series {
		seen[s.Name] = true
	}
	for _, want := range []string{"effects", "effect_backlog", "effect_latency_ms.p99", "effects_applied", "backlog"} {
		if !seen[want] {
			t.Errorf("no %s series; the result has %v", want, seen)
		}
	}
}
