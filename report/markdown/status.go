package markdown

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// StatusValue is the run value of a column showing each run's status word
// against the baseline (Options.Status).
const StatusValue = "@stability"

// LoadValue is the run value of a column showing how long the load ran
// (every phase that ran, the drain left out): "1 min", "20 s".
const LoadValue = "@load"

// CappedSuffix is the suffix of the KPI that says a histogram quantile
// fell beyond the last finite bucket (kpi.CappedSuffix): the cell then
// shows "≥ BOUND".
const CappedSuffix = ".ge"

func init() {
	Values[StatusValue] = "Stable, Slower, Degraded... by the suite's status rules against its baseline case; the invalid word and the reason for an invalid run"
	Values[LoadValue] = "how long the load ran (its phases, the drain left out)"
}

// Status words each run against the baseline run of its version, as the
// reference reports do: the first rule whose ratio the run's KPI exceeds
// names it, else Otherwise; an invalid run is Invalid with its reason; the
// baseline run is "Baseline".
type Status struct {
	// Baseline is the baseline case.
	Baseline string
	// KPI is compared with the baseline's, from Phase ("" the run's total).
	KPI, Phase string
	Rules      []StatusRule
	Otherwise  string
	Invalid    string
	// Saturated is the word of a case whose system under test held sends
	// back, when no rule named it worse ("" Saturated): it is not Stable.
	Saturated string
}

// StatusRule names a run whose KPI is more than Above times the baseline's.
type StatusRule struct {
	Word  string
	Above float64
}

// word is r's status against base (nil: no baseline run of its version).
func (s *Status) word(r, base *pipebench.Result) string {
	if r.Manifest.Status == pipebench.StatusInvalid {
		why := ""
		if len(r.Manifest.Reasons) > 0 {
			why = r.Manifest.Reasons[0]
			if strings.HasPrefix(why, "phase ") { // "phase load: the generator..."
				_, why, _ = strings.Cut(why, ": ")
			}
			why, _, _ = strings.Cut(why, ": ")
			why, _, _ = strings.Cut(why, "; ")
			why = " (" + why + ")"
		}
		return s.Invalid + why
	}
	if caseOf(r) == s.Baseline {
		return "Baseline"
	}
	if base == nil {
		return "no baseline run (case " + s.Baseline + ") to compare with"
	}
	// A case that ended with work left (its ledger's pending, unread or
	// unaccounted items) is not stable, however fast it was: its word says
	// how much is left and where.
	left := ""
	if n, where := pipebench.WorkLeft(r); n > 0 {
		left = "; " + where
	}
	v, ok := s.kpi(r)
	b, okb := s.kpi(base)
	if !ok || !okb {
		return "no " + s.KPI + " to compare" + left
	}
	clause := ""
	if l := LimitWords(r); strings.HasPrefix(l, "system ") {
		clause = "; " + l
	}
	for _, rule := range s.Rules {
		if b > 0 && v > rule.Above*b {
			return rule.Word + " (" + plain(v/b) + "x" + clause + left + ")"
		}
	}
	if clause != "" {
		word := s.Saturated
		if word == "" {
			word = "Saturated"
		}
		return word + " (" + strings.TrimPrefix(clause+left, "; ") + ")"
	}
	if left != "" {
		return BacklogWord + " (" + strings.TrimPrefix(left, "; ") + ")"
	}
	return s.Otherwise
}

// BacklogWord is the status word of a case that ended with work left and
// that no rule named worse.
const BacklogWord = "Work left"

// LimitValue is the run value of a column saying which limit a run hit.
const LimitValue = "@limit"

func init() {
	Values[LimitValue] = "which limit the run hit: the system's (it held sends back: the rate it took, when and why), pipebench's own (the run is invalid) or none"
}

// LimitWords says which limit r hit, by its detections and counts:
// "system saturated at 8,100/s after 12 s (max_in_flight)" (it held sends
// back), "system refused 4,100 of 9,000 items sent (46%)" (it answered
// them with a refusal), "pipebench's own: it fell behind its schedule",
// or "none".
func LimitWords(r *pipebench.Result) string {
	for _, d := range r.Detections {
		if d.Detector == "generator_limit" {
			msg := strings.TrimPrefix(d.Message, "pipebench's own limit: ")
			msg, _, _ = strings.Cut(msg, " (")
			msg, _, _ = strings.Cut(msg, ": ")
			return "pipebench's own: " + msg
		}
	}
	for _, d := range r.Detections {
		if d.Detector != "saturated" {
			continue
		}
		var ph *pipebench.PhaseResult
		for i := range r.Phases {
			if r.Phases[i].Name == d.Phase {
				ph = &r.Phases[i]
			}
		}
		out := "system saturated at " + pipebench.FormatCount(d.Value) + "/s"
		if ph != nil {
			out += " after " + humanDuration(d.Began.Sub(ph.Started))
			var reasons []string
			for _, k := range ph.All("held_back") {
				if rs := k.Labels["reason"]; rs != "" {
					reasons = append(reasons, rs)
				}
			}
			if len(reasons) > 0 {
				out += " (" + strings.Join(reasons, ", ") + ")"
			}
		}
		return out
	}
	// Sends the system answered with a refusal (backpressure: 429, 503,
	// RESOURCE_EXHAUSTED, a stream full) are its limit too.
	if t := r.Total; t != nil {
		refused, _ := t.Get("errors", "class", pipebench.ClassRefused.String())
		sent, _ := t.Get("sent")
		if refused > 0 && sent > 0 {
			return "system refused " + pipebench.FormatCount(refused) + " of " + pipebench.FormatCount(sent) + " items sent (" + plain(100*refused/sent) + "%)"
		}
	}
	return "none"
}

func (s *Status) kpi(r *pipebench.Result) (float64, bool) {
	p := r.Total
	if s.Phase != "" {
		p = nil
		for i := range r.Phases {
			if r.Phases[i].Name == s.Phase {
				p = &r.Phases[i]
			}
		}
	}
	if p == nil && len(r.Phases) == 1 {
		p = &r.Phases[0]
	}
	if p == nil {
		return 0, false
	}
	ks := p.All(s.KPI)
	if len(ks) == 0 {
		return 0, false
	}
	return ks[0].Value, true
}

// baselines returns each version's latest baseline run.
func (s *Status) baselines(results []*pipebench.Result) map[string]*pipebench.Result {
	out := map[string]*pipebench.Result{}
	if s == nil {
		return out
	}
	for _, r := range results {
		if caseOf(r) != s.Baseline || r.Manifest.Status == pipebench.StatusInvalid {
			continue
		}
		if prev, ok := out[r.Manifest.Version]; !ok || !r.Manifest.Started.Before(prev.Manifest.Started) {
			out[r.Manifest.Version] = r
		}
	}
	return out
}

// loadTime is how long r's phases ran.
func loadTime(r *pipebench.Result) string {
	var d time.Duration
	for _, p := range r.Phases {
		if p.Ended.After(p.Started) {
			d += p.Ended.Sub(p.Started)
		}
	}
	if d == 0 {
		return ""
	}
	return humanDuration(d)
}

// unitValue converts v from the KPI's unit to want ("ms", "s", or "/min"
// for a rate per second).
func unitValue(v float64, from pipebench.Unit, want string) float64 {
	if want == "/min" {
		if from == pipebench.UnitPerSecond {
			return v * 60
		}
		return v
	}
	ms := v
	switch from {
	case pipebench.UnitSeconds:
		ms = v * 1000
	case pipebench.UnitMillis:
	default:
		return v
	}
	if want == "s" {
		return ms / 1000
	}
	return ms
}

// capped prints a lower bound in its natural unit: "≥ 60 s", "≥ 250 ms".
func capped(v float64, unit pipebench.Unit) string {
	ms := unitValue(v, unit, "ms")
	if unit != pipebench.UnitSeconds && unit != pipebench.UnitMillis {
		return "≥ " + plain(v)
	}
	if ms >= 1000 {
		return "≥ " + strconv.FormatFloat(math.Round(ms/100)/10, 'f', -1, 64) + " s"
	}
	return "≥ " + plain(ms) + " ms"
}

// kpiCell is a KPI cell with the column's unit, a capped quantile as
// "≥ BOUND", and the column's Missing text for a KPI the run lacks.
func kpiCell(p *pipebench.PhaseResult, c Column) string {
	if p == nil {
		return c.Missing
	}
	ks := p.All(c.KPI)
	if len(ks) == 0 {
		return c.Missing
	}
	if capK := p.All(c.KPI + CappedSuffix); len(capK) > 0 {
		return capped(capK[0].Value, capK[0].Unit)
	}
	if c.Unit != "" && (c.Agg == AggValue || c.Agg == AggMax) {
		v := ks[0].Value
		if c.Agg == AggMax {
			for _, k := range ks {
				v = math.Max(v, k.Value)
			}
		}
		return plain(unitValue(v, ks[0].Unit, c.Unit))
	}
	return cellValue(p, c)
}
