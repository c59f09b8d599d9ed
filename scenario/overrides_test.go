package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// The command line's overrides of a plan, each bad one refused as a usage
// error naming its flag.
func TestOverrides(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	plan := pipebench.Plan{Scenario: "s", Version: "1", Phases: []pipebench.PlanPhase{
		{Name: "a", Duration: pipebench.Duration(10 * time.Second), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 100}},
		{Name: "b", Duration: pipebench.Duration(30 * time.Second), Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 400}},
	}}
	got, err := Overrides{Version: "2", Duration: 20 * time.Second, DurationSet: true, Rate: "800/s", Shard: "2/4", StartAt: "+30s"}.Apply(plan, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "2" || got.Duration() != 20*time.Second || got.Shard == nil || got.Shard.Index != 1 || got.Shard.Count != 4 ||
		!got.StartAt.Equal(now.Add(30*time.Second)) {
		t.Errorf("applied: version %q, duration %s, shard %+v, start %s", got.Version, got.Duration(), got.Shard, got.StartAt)
	}
	if r := got.Phases[1].Profile.Rate; r != 200 { // 800/s scaled, then a quarter of it
		t.Errorf("rate of b: %v, want 200 (800/s over 4 shards)", r)
	}
	if same, err := (Overrides{}).Apply(plan, now); err != nil || same.Version != "1" || same.Duration() != 40*time.Second || same.Shard != nil {
		t.Errorf("no overrides changed the plan: %+v %v", same, err)
	}
	at, err := Overrides{StartAt: "2026-11-26T10:05:00Z"}.Apply(plan, now)
	if err != nil || !at.StartAt.Equal(now.Add(5*time.Minute)) {
		t.Errorf("RFC 3339 start: %s %v", at.StartAt, err)
	}
	for _, bad := range []struct {
		o    Overrides
		want string
	}{
		{Overrides{Shard: "5/4"}, "--shard"},
		{Overrides{Shard: "x"}, "--shard"},
		{Overrides{StartAt: "+soon"}, "--start-at"},
		{Overrides{StartAt: "yesterday"}, "is not a moment"},
		{Overrides{StartAt: "2026-11-26T09:00:00Z"}, "is in the past"},
		{Overrides{Rate: "-5/s"}, "--rate"},
		{Overrides{Duration: -time.Second, DurationSet: true}, "--duration"},
	} {
		_, err := bad.o.Apply(plan, now)
		var pe *pipebench.Error
		if !errors.As(err, &pe) || pe.Code != pipebench.ExitUsage || !strings.Contains(err.Error(), bad.want) || pe.Hint == "" && bad.want != "--shard" {
			t.Errorf("%+v: %v", bad.o, err)
		}
	}
}
