package kpi

import (
	"fmt"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// RestartSuffix ends the name of an observed counter of a component's
// restarts ("database_restarts": the document store restarted): when one
// grows during the run, the run is invalid, as a report's case is "Test
// invalid" when its database restarted under load.
const RestartSuffix = "_restarts"

// Restarts returns why the run is invalid because a component restarted
// between from and to (the load and its drain), one reason per counter that
// grew: "database restarted 2 times during the run (first seen 31 s into
// it)". Counters that stayed put, or that were seen once only, give none.
func Restarts(series []pipebench.Series, from, to time.Time) []string {
	var out []string
	for _, s := range series {
		if !strings.HasSuffix(s.Name, RestartSuffix) || len(s.Points) < 2 {
			continue
		}
		var base, last float64
		var first time.Time
		seen := false
		for _, p := range s.Points {
			if p.T.Before(from) || p.T.After(to) {
				if p.T.Before(from) {
					base = p.V
				}
				continue
			}
			if !seen {
				seen = true
				if base == 0 {
					base = p.V
				}
			}
			if p.V > base && first.IsZero() {
				first = p.T
			}
			last = p.V
		}
		if n := last - base; seen && n > 0 {
			what := strings.TrimSuffix(s.Name, RestartSuffix)
			if inst := s.Labels["instance"]; inst != "" {
				what += " (" + inst + ")"
			}
			out = append(out, fmt.Sprintf("%s restarted %s time(s) during the run (first seen %s into it): the numbers do not describe one steady system",
				what, pipebench.FormatCount(n), first.Sub(from).Round(time.Second)))
		}
	}
	return out
}
