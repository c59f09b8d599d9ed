package runner

import (
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	base := Progress{Phase: "load", PhaseIndex: 0, Phases: 2, PhaseDuration: 10 * time.Second, TargetRate: 5000, QueueSize: -1, Remaining: 20 * time.Second}
	first := base.String()
	if !strings.Contains(first, "target 5,000/s") || strings.Contains(first, "sent") || strings.Contains(first, "delivered") {
		t.Errorf("before any rate was measured: %q (want the target, no 0/s rates)", first)
	}
	later := base
	later.RatesKnown, later.SentRate, later.DeliveredRate = true, 4990, 4900
	if s := later.String(); !strings.Contains(s, "sent 4,990/s") || strings.Contains(s, "delivered") {
		t.Errorf("without a sink: %q (want sent, no delivered)", s)
	}
	later.HasSink = true
	if s := later.String(); !strings.Contains(s, "delivered 4,900/s") || strings.Contains(s, "held back") || strings.Contains(s, "missed") {
		t.Errorf("with a sink: %q", s)
	}
	later.HeldBack, later.Missed = 1200, 30
	if s := later.String(); !strings.Contains(s, "held back 1,200") || !strings.Contains(s, "missed 30") {
		t.Errorf("with items held back by the system and missed by pipebench: %q", s)
	}
}
