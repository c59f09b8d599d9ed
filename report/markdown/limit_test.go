package markdown

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Which limit a run hit, in words, and the status word of a case whose
// system held sends back: never Stable, said with the limit; a rule that
// names it worse keeps its word and says the limit too.
func TestLimitWordsAndSaturatedStatus(t *testing.T) {
	p75 := func(v float64) pipebench.KPI {
		return pipebench.KPI{Name: "api_seconds.p75", Value: v, Unit: pipebench.UnitSeconds}
	}
	held := pipebench.KPI{Name: "held_back", Value: 500, Labels: map[string]string{"reason": "max_in_flight"}}
	base := run("Baseline", pipebench.StatusCompleted, 60, p75(0.02))
	calm := run("Calm", pipebench.StatusCompleted, 60, p75(0.03))
	sat := run("Burst", pipebench.StatusCompleted, 60, p75(0.03), held)
	sat.Detections = []pipebench.Detection{{Detector: "saturated", Phase: "load", Began: sat.Phases[0].Started.Add(12 * time.Second), Value: 8100}}
	worse := run("Extreme", pipebench.StatusCompleted, 60, p75(0.5), held)
	worse.Detections = sat.Detections
	refusing := run("Refusing", pipebench.StatusCompleted, 60, p75(0.03), pipebench.KPI{Name: "sent", Value: 9000},
		pipebench.KPI{Name: "errors", Value: 4100, Labels: map[string]string{"class": "refused"}})
	own := run("Own", pipebench.StatusInvalid, 60, p75(0.03))
	own.Detections = []pipebench.Detection{{Detector: "generator_limit", Phase: "load", Message: "pipebench's own limit: pipebench fell behind its schedule: sends started 1500 ms late at p99 (pipebench's process used 1.98 of its 2 CPUs)"}}
	own.Manifest.Reasons = []string{"phase load: pipebench fell behind its schedule: sends started 1500 ms late at p99"}

	for r, want := range map[*pipebench.Result]string{
		calm:     "none",
		sat:      "system saturated at 8,100/s after 12 s (max_in_flight)",
		own:      "pipebench's own: pipebench fell behind its schedule",
		worse:    "system saturated at 8,100/s after 12 s (max_in_flight)",
		refusing: "system refused 4,100 of 9,000 items sent (46%)",
	} {
		if got := runValue(r, LimitValue); got != want {
			t.Errorf("%s: @limit %q, want %q", r.Manifest.Case, got, want)
		}
	}
	st := &Status{Baseline: "Baseline", KPI: "api_seconds.p75", Rules: []StatusRule{{Word: "Degraded", Above: 20}}, Otherwise: "Stable", Invalid: "Test invalid"}
	for r, want := range map[*pipebench.Result]string{
		calm:     "Stable",
		sat:      "Saturated (system saturated at 8,100/s after 12 s (max_in_flight))",
		worse:    "Degraded (25x; system saturated at 8,100/s after 12 s (max_in_flight))",
		own:      "Test invalid (pipebench fell behind its schedule)",
		refusing: "Saturated (system refused 4,100 of 9,000 items sent (46%))",
	} {
		if got := st.word(r, base); got != want {
			t.Errorf("%s: status %q, want %q", r.Manifest.Case, got, want)
		}
	}
	st.Saturated = "Degraded"
	if got := st.word(sat, base); !strings.HasPrefix(got, "Degraded (system saturated") {
		t.Errorf("with saturated: Degraded, %q", got)
	}
}
