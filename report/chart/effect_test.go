package chart

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Blasts against a system that reports its own backlog (an effect
// observer's effect_backlog) overlay in the backlog chart, each line
// labelled by its case, with the effect rate among the rates.
func TestEffectBacklogOverlaidByCase(t *testing.T) {
	t0 := time.Unix(1000, 0)
	run := func(c string, peak float64) *pipebench.Result {
		return &pipebench.Result{Manifest: pipebench.Manifest{Version: "1.0", Case: c, Started: t0}, Series: []pipebench.Series{
			{Name: "effect_backlog", Points: []pipebench.TimeValue{{T: t0, V: 0}, {T: t0.Add(time.Second), V: peak}}},
			{Name: "effects_rate", Points: []pipebench.TimeValue{{T: t0.Add(time.Second), V: 50}}},
		}}
	}
	charts := Build(run("10%", 150), run("25%", 375))
	lines := map[string][]string{}
	for _, c := range charts {
		for _, l := range c.Lines {
			lines[c.ID] = append(lines[c.ID], l.Name)
		}
	}
	if q := lines["backlog"]; len(q) != 2 || q[0] != "10% · effect backlog" || q[1] != "25% · effect backlog" {
		t.Errorf("backlog chart lines %q", q)
	}
	if r := lines["rates"]; len(r) != 2 {
		t.Errorf("rates chart lines %q", r)
	}
}
