package execute

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/runner"
)

// TestProgressPlainCadence: written to a file, the progress display prints
// a line at the start and then one every 5 s of updates that come once a
// second, each a little late (as the observation ticker's do on a loaded
// machine), not every 6 or 7 s; a phase change prints at once and restarts the period. The first
// line shows no rate (none was measured yet) and, without a sink, no line
// shows delivered.
func TestProgressPlainCadence(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, pipebench.Plan{})
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return clock }
	var printedAt []int
	for s := 0; s <= 18; s++ {
		// Ticks come 1 s apart and up to 30 ms late.
		clock = time.Date(2026, 1, 1, 0, 0, s, int(time.Duration(s%4)*10*time.Millisecond), time.UTC)
		pr := runner.Progress{Phase: "hold", Phases: 2, PhaseDuration: 12 * time.Second, PhaseElapsed: time.Duration(s) * time.Second,
			TargetRate: 1000, QueueSize: -1, RatesKnown: s > 0, SentRate: 1000}
		if s >= 12 {
			pr.PhaseIndex, pr.Phase = 1, "next"
		}
		before := out.Len()
		p.update(pr)
		if out.Len() > before {
			printedAt = append(printedAt, s)
		}
	}
	want := []int{0, 5, 10, 12, 17} // the period restarts at the phase change
	if len(printedAt) != len(want) {
		t.Fatalf("lines at seconds %v, want %v:\n%s", printedAt, want, out.String())
	}
	for i := range want {
		if printedAt[i] != want[i] {
			t.Fatalf("lines at seconds %v, want %v:\n%s", printedAt, want, out.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if strings.Contains(lines[0], "sent") || !strings.Contains(lines[0], "target 1,000/s") {
		t.Errorf("first line %q: want the target and no rate before one was measured", lines[0])
	}
	if !strings.Contains(lines[1], "sent 1,000/s") {
		t.Errorf("second line %q: want the measured rate", lines[1])
	}
	if strings.Contains(out.String(), "delivered") {
		t.Errorf("delivered shown without a sink:\n%s", out.String())
	}
}
