package markdown

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// ScaleValue is the run value of a column saying the scale a run ran at:
// "2m44s of 27m20s (x0.1)" when --duration (or a suite entry's duration)
// scaled it, "" otherwise.
const ScaleValue = "@scale"

func init() {
	Values[ScaleValue] = "the scale the run ran at when its phases were scaled (--duration, a suite entry's duration): the time it ran of the scenario's, and the factor"
}

// scaleOf says the scale r's plan ran at, "" when it was not scaled.
func scaleOf(r *pipebench.Result) string {
	from := r.Plan.ScaledFrom.D()
	ran := r.Plan.Duration()
	if from <= 0 || ran == from {
		return ""
	}
	f := float64(ran) / float64(from)
	return pipebench.FormatDuration(ran.Round(time.Second)) + " of " + pipebench.FormatDuration(from.Round(time.Second)) + " (x" + strconv.FormatFloat(f, 'g', 2, 64) + ")"
}

// peakKPI tells whether a KPI is a peak: NAME.max, memory_mb.
func peakKPI(name string) bool { return strings.HasSuffix(name, ".max") || name == "memory_mb" }

// explained is the cell of a KPI column with what it needs said beside
// its number. A peak of the run's last phase is the drain's when the
// drain's was higher (the pipeline's buffers often peak after the load),
// marked "(in the drain)"; a peak of a run's total says when it was ("at
// 1m5s", "in the drain"). A cell without a value says why (the column's
// missing text, else what is known: a ledger term the pipeline's state
// could not give, a phase the run did not have, nothing measured).
func explained(r *pipebench.Result, p *pipebench.PhaseResult, c Column) string {
	single := c.Agg == AggValue || c.Agg == AggMax
	if peakKPI(c.KPI) && single && p != nil && p != r.Total && r.Drain != nil && len(r.Phases) > 0 && p == &r.Phases[len(r.Phases)-1] {
		if dv, ok := aggregate(r.Drain, c); ok {
			if pv, ok := aggregate(p, c); !ok || dv > pv {
				return kpiCell(r.Drain, c) + " (in the drain)"
			}
		}
	}
	cell := kpiCell(p, c)
	if cell == "" {
		return whyEmpty(r, p, c)
	}
	if peakKPI(c.KPI) && single && p != nil && p == r.Total {
		if at := peakTime(r, p, c); at != "" {
			cell += " (" + at + ")"
		}
	}
	return cell
}

// aggregate is the value a single-valued column takes from p: the
// unlabelled KPI (else the first), or the largest with agg max.
func aggregate(p *pipebench.PhaseResult, c Column) (float64, bool) {
	ks := p.All(c.KPI)
	if len(ks) == 0 {
		return 0, false
	}
	v := ks[0].Value
	for _, k := range ks {
		if c.Agg == AggMax {
			v = math.Max(v, k.Value)
		} else if len(k.Labels) == 0 {
			return k.Value, true
		}
	}
	return v, true
}

// peakTime says when the total's peak of c was: "at 1m5s", or "at 2m14s,
// in the drain" after the load ended; "" when not known.
func peakTime(r *pipebench.Result, p *pipebench.PhaseResult, c Column) string {
	ks := p.All(c.KPI)
	if len(ks) == 0 {
		return ""
	}
	best := ks[0]
	for _, k := range ks {
		if (c.Agg == AggMax && k.Value > best.Value) || (c.Agg == AggValue && len(k.Labels) == 0) {
			best = k
		}
	}
	var flat []string
	for k, v := range best.Labels {
		flat = append(flat, k, v)
	}
	at, ok := p.Get(c.KPI+"_at", flat...)
	if !ok {
		return ""
	}
	d := time.Duration(at * float64(time.Second)).Round(time.Second)
	s := "at " + pipebench.FormatDuration(d)
	if len(r.Phases) > 0 && r.Phases[0].Started.Add(d).After(r.Phases[len(r.Phases)-1].Ended) {
		s += ", in the drain"
	}
	return s
}

// whyEmpty says why a KPI cell has no value.
func whyEmpty(r *pipebench.Result, p *pipebench.PhaseResult, c Column) string {
	if c.Missing != "" {
		return c.Missing
	}
	if p == nil {
		if c.Phase != "" {
			return "no phase " + c.Phase + " in this run"
		}
		return "no phase"
	}
	if r.Total != nil {
		for _, k := range r.Total.All("ledger_unknown") {
			if k.Labels["term"] == c.KPI || c.KPI == "lost" {
				return "unknown (see the ledger)"
			}
		}
	}
	return "not measured in this run"
}

// runColumns adds to a table of runs what its rows need said and its
// columns do not say: the version of the system under test when the runs
// are of several (and no column shows it), the scale when a run was
// scaled (and no column shows it).
func runColumns(cols []Column, results []*pipebench.Result) []Column {
	has := func(v string) bool {
		for _, c := range cols {
			if c.KPI == v {
				return true
			}
		}
		return false
	}
	versions, scaled := map[string]bool{}, false
	for _, r := range results {
		versions[r.Manifest.Version] = true
		scaled = scaled || scaleOf(r) != ""
	}
	out := cols
	if len(versions) > 1 && !has("@version") {
		out = append(append([]Column(nil), out...), Column{Header: "Version", KPI: "@version"})
	}
	if scaled && !has(ScaleValue) {
		out = append(append([]Column(nil), out...), Column{Header: "Scale", KPI: ScaleValue})
	}
	return out
}
