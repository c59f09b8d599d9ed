package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pipebench/pipebench"
)

// Number formats v for a table: thousands separators for large values, a
// few significant digits for small ones.
func Number(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == math.Trunc(v) || math.Abs(v) >= 100:
		return Group(math.Round(v))
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

// Group prints an integer value with thousands separators: 12,345.
func Group(v float64) string { return pipebench.FormatCount(v) }

// Value formats a KPI with its unit: "12,345/s", "1.2 ms", "340 MB".
func Value(k pipebench.KPI) string {
	n := Number(k.Value)
	switch k.Unit {
	case pipebench.UnitPerSecond:
		return n + "/s"
	case pipebench.UnitMillis:
		return n + " ms"
	case pipebench.UnitSeconds:
		return n + " s"
	case pipebench.UnitMB:
		return n + " MB"
	case pipebench.UnitCores:
		return n
	}
	return n
}

// PerInstance returns the values of a labelled KPI sorted by instance and
// joined as the reference reports write them: "225, 178". ok is false when
// the phase has no such KPI.
func PerInstance(p *pipebench.PhaseResult, name string) (string, bool) {
	ks := p.All(name)
	if len(ks) == 0 {
		return "", false
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Labels["instance"] < ks[j].Labels["instance"] })
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = Number(k.Value)
	}
	return strings.Join(parts, ", "), true
}

// Sum returns the sum of every KPI of that name in the phase (over
// instances or classes), and whether there was any.
func Sum(p *pipebench.PhaseResult, name string) (float64, bool) {
	ks := p.All(name)
	var s float64
	for _, k := range ks {
		s += k.Value
	}
	return s, len(ks) > 0
}

// Phases returns the result's phases followed by the drain and the total,
// if any.
func Phases(r *pipebench.Result) []*pipebench.PhaseResult {
	var out []*pipebench.PhaseResult
	for i := range r.Phases {
		out = append(out, &r.Phases[i])
	}
	if r.Drain != nil {
		out = append(out, r.Drain)
	}
	if r.Total != nil {
		out = append(out, r.Total)
	}
	return out
}

// Title capitalises an item name for headers: "span" -> "Span".
func Title(s string) string {
	if s == "" {
		return "Item"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Status describes how a run ended in a few words.
func Status(r *pipebench.Result) string {
	switch r.Manifest.Status {
	case pipebench.StatusPassed:
		return "PASSED"
	case pipebench.StatusCompleted:
		return "COMPLETED, no thresholds"
	case pipebench.StatusFailed:
		for _, why := range r.Manifest.Reasons {
			if strings.HasPrefix(why, "the system under test failed") {
				return "FAILED: the system under test failed"
			}
		}
		return "FAILED: thresholds"
	case pipebench.StatusInvalid:
		return "INVALID: the numbers do not describe the system under test"
	case pipebench.StatusAborted:
		return "ABORTED: partial result"
	}
	return fmt.Sprintf("%s", strings.ToUpper(string(r.Manifest.Status)))
}

// ErrorClasses returns the classes of r.Errors in a fixed order.
func ErrorClasses(r *pipebench.Result) []string {
	keys := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
