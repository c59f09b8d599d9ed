package markdown

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// The eventing reference's cells: failures by its names (a delivery stall
// inside F3 named once), the time until the first failure, the handled
// rate after a drop, the NATS version from the observers' info series.
func TestEventingRunValues(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &pipebench.Result{
		Phases: []pipebench.PhaseResult{{Name: "soak", Started: t0, Ended: t0.Add(5 * time.Hour)}},
		Total: &pipebench.PhaseResult{Name: "total", KPIs: []pipebench.KPI{
			{Name: "rate_before_drop", Value: 290}, {Name: "rate_after_drop", Value: 70}, {Name: "time_before_drop", Value: 3 * 3600},
			{Name: "handled_rate", Labels: map[string]string{"instance": "eventproxy-0"}, Value: 150}}},
		Detections: []pipebench.Detection{
			{Detector: "rate_drop", Began: t0.Add(3 * time.Hour)},
			{Detector: "stall", Began: t0.Add(4*time.Hour + 20*time.Minute + time.Second)},
			{Detector: "dispatch_stalled", Began: t0.Add(4*time.Hour + 20*time.Minute)},
			{Detector: "node_restart", Began: t0.Add(4*time.Hour + 30*time.Minute)},
		},
		Series: []pipebench.Series{
			{Name: "nats_server_info", Labels: map[string]string{"instance": "nats-0", "version": "2.15.2"}},
			{Name: "nats_server_info", Labels: map[string]string{"instance": "nats-1", "version": "2.15.2"}},
		},
	}
	for name, want := range map[string]string{
		"@failure":                       "F3; JS pod restart",
		"@crashed":                       "yes",
		"@until_failure":                 "4 h 20 min",
		"@handled":                       "70 (290 for 3 h)",
		"@info:nats_server_info:version": "2.15.2",
		"@info:nats_server_info:no_such": "",
	} {
		if !KnownValue(name) {
			t.Errorf("%s is not a known value", name)
		}
		if got := runValue(r, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	r.Detections, r.Total.KPIs = nil, r.Total.KPIs[3:]
	if got, want := runValue(r, "@until_failure"), "5 h"; got != want {
		t.Errorf("no failure: %q, want the load's length %q", got, want)
	}
	if got := runValue(r, "@handled"); got != "150" {
		t.Errorf("handled without a drop: %q", got)
	}
	if KnownValue("@info:x") || KnownValue("@info:") {
		t.Error("an @info value needs a series and a label")
	}
}
