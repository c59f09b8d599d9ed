package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// LoadPlaceholder in an entry's case is replaced by how long the case's
// load lasts as planned (after --duration or the entry's duration), so that
// a row says the duration that ran: "Moderate Burst (1,500/s) {load}"
// becomes "... 20s" under --duration 20s.
const LoadPlaceholder = "{load}"

// CaseName returns the case with LoadPlaceholder replaced by the plan's
// paced load time (its blasts' caps left out: a blast lasts as long as it
// takes).
func CaseName(kase string, p pipebench.Plan) string {
	if !strings.Contains(kase, LoadPlaceholder) {
		return kase
	}
	return strings.ReplaceAll(kase, LoadPlaceholder, pipebench.FormatDuration(paced(p)))
}

func paced(p pipebench.Plan) time.Duration {
	var d time.Duration
	for _, ph := range p.Phases {
		if !ph.Blast() {
			d += ph.Duration.D()
		}
	}
	return d
}

// LoadSummary says what a suite's plans will run, for its heading: "3m of
// load", or for blasts "3 blasts of 150, 375 and 750 items (each until it
// took effect, sending capped at 1m)", or both.
func LoadSummary(plans []pipebench.Plan) string {
	var load, capAt time.Duration
	var counts []string
	for _, p := range plans {
		load += paced(p)
		for _, ph := range p.Phases {
			if ph.Blast() {
				counts = append(counts, pipebench.FormatCount(float64(ph.Profile.Count)))
				capAt = max(capAt, ph.Duration.D())
			}
		}
	}
	var parts []string
	if load > 0 || len(counts) == 0 {
		parts = append(parts, pipebench.FormatDuration(load)+" of paced load")
	}
	if n := len(counts); n > 0 {
		list := counts[0]
		if n > 1 {
			list = strings.Join(counts[:n-1], ", ") + " and " + counts[n-1]
		}
		noun := "blast"
		if n > 1 {
			noun = "blasts"
		}
		parts = append(parts, fmt.Sprintf("%d %s of %s items (each lasts until it took effect; sending capped at %s)", n, noun, list, pipebench.FormatDuration(capAt)))
	}
	return strings.Join(parts, " and ")
}

// LifetimeLabel is the label saying whether a case had a system under test
// of its own or one kept running from an earlier case; a table shows it
// with a column {value: "@label:sut"}.
const LifetimeLabel = "sut"

// LabelLifetime labels each plan with its system under test's lifetime
// under s's sut: setting ("fresh for this case", "kept running from case
// 1 (NAME)").
func LabelLifetime(s *Suite, plans []pipebench.Plan) {
	for i := range plans {
		v := "fresh for this case"
		if s.SUT == SUTKeep {
			v = fmt.Sprintf("kept running from case 1 (%s)", plans[0].Case)
			if i == 0 {
				v = "started here, kept for the next cases"
			}
		}
		labels := map[string]string{}
		for k, x := range plans[i].Labels {
			labels[k] = x
		}
		labels[LifetimeLabel] = v
		plans[i].Labels = labels
	}
}
