package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

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

// Value formats a KPI with its unit, a duration in the unit that fits it:
// "12,345/s", "340 MB", "850 µs", "1.2 ms", "10.3 s", "2m5s".
//
// An observed KPI standing in with its series' last reading before the
// phase (no reading inside it) ends in " (last)".
func Value(k pipebench.KPI) string {
	if k.LastReading {
		k.LastReading = false
		return Value(k) + " (last)"
	}
	switch k.Unit {
	case pipebench.UnitPerSecond:
		return Number(k.Value) + "/s"
	case pipebench.UnitMillis:
		return Millis(k.Value)
	case pipebench.UnitSeconds:
		return Millis(k.Value * 1000)
	case pipebench.UnitMB:
		return Number(k.Value) + " MB"
	case pipebench.UnitMBPerSecond:
		return Number(k.Value) + " MB/s"
	}
	return Number(k.Value)
}

// Millis formats a duration of ms milliseconds in the unit that fits it:
// microseconds below a millisecond, milliseconds below a second, seconds
// below a minute, then minutes and hours.
func Millis(ms float64) string {
	a := math.Abs(ms)
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return "-"
	case a == 0:
		return "0 ms"
	case a < 1:
		return Number(ms*1000) + " µs"
	case a < 1000:
		return Number(ms) + " ms"
	case a < 60000:
		return Number(ms/1000) + " s"
	}
	return pipebench.FormatDuration(time.Duration(ms * float64(time.Millisecond)).Round(time.Second))
}

// PerInstance returns the values of a labelled KPI sorted by instance and
// joined as the reference reports write them: "225/s, 178/s", "137, 139".
// ok is false when
// the phase has no such KPI.
func PerInstance(p *pipebench.PhaseResult, name string) (string, bool) {
	ks := p.All(name)
	if len(ks) == 0 {
		return "", false
	}
	return byInstance(ks, true), true
}

// byInstance sorts ks by instance and joins their values: "225/s, 178/s"
// (perSecond: a per-second KPI's value ends in "/s"), "137, 139".
func byInstance(ks []pipebench.KPI, perSecond bool) string {
	sort.Slice(ks, func(i, j int) bool { return ks[i].Labels["instance"] < ks[j].Labels["instance"] })
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = Number(k.Value)
		if perSecond && k.Unit == pipebench.UnitPerSecond {
			parts[i] += "/s"
		}
	}
	return strings.Join(parts, ", ")
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
