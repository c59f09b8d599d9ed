package kpi

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Sends that all failed before the target answered (it went away after
// the driver started) make the run invalid, with the cause; one answered
// send makes it valid.
func TestAssembleNothingReached(t *testing.T) {
	plan := pipebench.Plan{Scenario: "x", Phases: []pipebench.PlanPhase{{Name: "p", Duration: pipebench.Duration(time.Second), Items: 10,
		Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 10}}}}
	rec := func(reached int) RunRecord {
		s := SendStats{Details: map[string]uint64{"connection refused": uint64(10 - reached)}, Latency: newHist(), Service: newHist(), Lag: newHist()}
		s.Items[pipebench.ClassRefused] = uint64(10 - reached)
		s.Items[pipebench.ClassOK] = uint64(reached)
		s.Unreached = uint64(10 - reached)
		return RunRecord{Plan: plan, Phases: []PhaseInput{{Name: "p", Started: t0, Ended: t0.Add(time.Second), TargetRate: 10, Sends: s}}}
	}
	res := Assemble(rec(0), pipebench.Manifest{})
	if res.Manifest.Status != pipebench.StatusInvalid || !strings.Contains(strings.Join(res.Manifest.Reasons, " "), "nothing reached the system under test: all 10 items failed before the target answered (connection refused 10)") {
		t.Errorf("all unreached: %s %q", res.Manifest.Status, res.Manifest.Reasons)
	}
	res = Assemble(rec(1), pipebench.Manifest{})
	if res.Manifest.Status != pipebench.StatusCompleted {
		t.Errorf("one reached: %s %q", res.Manifest.Status, res.Manifest.Reasons)
	}
	if !strings.Contains(strings.Join(res.Summary, " "), "9 of 10 items sent were not accepted: refused 9") {
		t.Errorf("summary %q", res.Summary)
	}
}
