package kpi

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// KnownKPIs lists the KPI names a Result can hold (DESIGN.md), including
// the quantile forms, for "did you mean" in threshold errors.
var KnownKPIs = func() []string {
	names := []string{"target_rate", "sent_rate", "accepted_rate", "sent", "accepted", "dropped", "errors",
		"receiver_accepted_rate", "receiver_refused_rate", "exporter_sent_rate", "exporter_failed_rate",
		"exporter_queue_size.max", "exporter_queue_size.last", "memory_mb", "cpu_cores",
		"delivered_rate", "delivered", "lost", "duplicates", "reordered", "faulted", "drain_time", "backlog.max",
		"accepted_bytes", "accepted_mb_rate", "read_lag.p99", "read_lag.max", "connections_open.max", "connections_open.last",
		"time_to_complete", "peak_backlog", "completion_rate", "headroom", "capacity", "drain_estimate", "drain_measured", "drain_rate", "throughput_drift"}
	for _, h := range []string{"latency", "service_time", "wait"} {
		for _, q := range Quantiles {
			names = append(names, h+"."+q.Suffix)
		}
		names = append(names, h+".max", h+".mean")
	}
	for _, h := range []string{"schedule_lag", "e2e_latency"} {
		for _, q := range Quantiles {
			names = append(names, h+"."+q.Suffix)
		}
		names = append(names, h+".max")
	}
	return names
}()

// ParseThreshold parses a threshold expression into its data form, once,
// when the scenario is decoded: `latency.p99 < 500ms`, `delivered_rate >=
// 0.99 * sent_rate`, `max(memory_mb) < 512`. EvalThreshold checks it.
var ops = []string{"<=", ">=", "==", "!=", "<", ">"}

func ParseThreshold(expr string) (pipebench.Threshold, error) {
	t, err := parseThreshold(expr)
	if err != nil {
		return pipebench.Threshold{}, err
	}
	return t, nil
}

func parseThreshold(expr string) (pipebench.Threshold, error) {
	var none pipebench.Threshold
	e := strings.TrimSpace(expr)
	if e == "" {
		return none, fmt.Errorf("threshold is empty: write it like latency.p99 < 500ms")
	}
	idx, op := -1, ""
	depth := 0
	for i := 0; i < len(e) && idx < 0; i++ {
		switch e[i] {
		case '{', '(':
			depth++
		case '}', ')':
			depth--
		}
		if depth > 0 {
			continue
		}
		for _, o := range ops {
			if strings.HasPrefix(e[i:], o) {
				idx, op = i, o
				break
			}
		}
	}
	if idx < 0 {
		return none, fmt.Errorf("threshold %q has no comparison: use one of < <= > >= == !=", expr)
	}
	l, r := strings.TrimSpace(e[:idx]), strings.TrimSpace(e[idx+len(op):])
	if l == "" || r == "" {
		return none, fmt.Errorf("threshold %q: %q needs something on both sides (column %d)", expr, op, idx+1)
	}
	left, err := parseOperand(l)
	if err != nil {
		return none, fmt.Errorf("threshold %q: %v", expr, err)
	}
	right, err := parseOperand(r)
	if err != nil {
		return none, fmt.Errorf("threshold %q: %v", expr, err)
	}
	if left.Const && right.Const {
		return none, fmt.Errorf("threshold %q compares two constants: name a KPI on one side", expr)
	}
	return pipebench.Threshold{Expr: e, Left: left, Right: right, Op: op}, nil
}

var (
	refRe = regexp.MustCompile(`^(?:(max|min|sum|avg)\(\s*)?([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)?)(\{[^}]*\})?\s*\)?$`)
	lblRe = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"\s*$`)
)

func parseOperand(s string) (pipebench.Operand, error) {
	if v, ok := constant(s); ok {
		return pipebench.Operand{Const: true, Value: v}, nil
	}
	o := pipebench.Operand{Factor: 1}
	if f, ref, ok := strings.Cut(s, "*"); ok {
		v, isConst := constant(strings.TrimSpace(f))
		if !isConst {
			return o, fmt.Errorf("%q: only a number may multiply a KPI, like 0.99 * sent_rate", s)
		}
		o.Factor, s = v, strings.TrimSpace(ref)
	}
	m := refRe.FindStringSubmatch(s)
	if m == nil || (m[1] != "") != strings.HasSuffix(s, ")") {
		return o, fmt.Errorf("%q is not a number, a duration, a rate or a KPI name", s)
	}
	o.Agg, o.KPI = m[1], m[2]
	if !known(o.KPI) {
		return o, fmt.Errorf("unknown KPI %q%s", o.KPI, suggestion(o.KPI))
	}
	if m[3] != "" {
		o.Labels = map[string]string{}
		for _, kv := range strings.Split(strings.Trim(m[3], "{}"), ",") {
			lm := lblRe.FindStringSubmatch(kv)
			if lm == nil {
				return o, fmt.Errorf("label %q: write it like class=\"timeout\"", strings.TrimSpace(kv))
			}
			o.Labels[lm[1]] = lm[2]
		}
	}
	return o, nil
}

// constant reads a number, a duration (in milliseconds, the unit of
// latency KPIs) or a rate (per second).
func constant(s string) (float64, bool) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, true
	}
	if d, err := time.ParseDuration(s); err == nil {
		return float64(d) / float64(time.Millisecond), true
	}
	if strings.Contains(s, "/") {
		if r, err := pipebench.ParseRate(s); err == nil {
			return float64(r), true
		}
	}
	return 0, false
}

func known(name string) bool {
	for _, k := range KnownKPIs {
		if k == name {
			return true
		}
	}
	// Pipeline KPIs come from observers' mappings: any NAME_rate, NAME.max,
	// NAME.last or quantile is allowed, unless it is a near miss of a known
	// name (a typo).
	for _, k := range KnownKPIs {
		if editDistance(name, k) <= 2 {
			return false
		}
	}
	return strings.HasSuffix(name, "_rate") || strings.HasSuffix(name, ".max") || strings.HasSuffix(name, ".total") || strings.HasSuffix(name, ".last") ||
		strings.HasSuffix(name, ".p50") || strings.HasSuffix(name, ".p90") || strings.HasSuffix(name, ".p99")
}

func suggestion(name string) string {
	best, bd := "", 4
	for _, k := range KnownKPIs {
		if d := editDistance(name, k); d < bd {
			best, bd = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}

// values resolves an operand on a phase: one value per matching KPI
// instance (aggregates give one), with a label naming the instance.
func values(o pipebench.Operand, p *pipebench.PhaseResult) ([]float64, []string, bool) {
	if o.Const {
		return []float64{o.Value}, []string{""}, true
	}
	var vals []float64
	var which []string
	for _, k := range p.KPIs {
		if k.Name != o.KPI {
			continue
		}
		match := true
		for lk, lv := range o.Labels {
			if k.Labels[lk] != lv {
				match = false
			}
		}
		if match {
			vals = append(vals, k.Value)
			which = append(which, k.Key())
		}
	}
	if len(vals) == 0 {
		return nil, nil, false
	}
	if o.Agg != "" || o.KPI == "errors" && len(o.Labels) == 0 {
		agg := o.Agg
		if agg == "" {
			agg = "sum" // errors without a class: all of them
		}
		v := vals[0]
		for _, x := range vals[1:] {
			switch agg {
			case "max":
				v = math.Max(v, x)
			case "min":
				v = math.Min(v, x)
			default:
				v += x
			}
		}
		if agg == "avg" {
			v /= float64(len(vals))
		}
		vals, which = []float64{v}, []string{agg + "(" + o.KPI + ")"}
	}
	for i := range vals {
		vals[i] *= o.Factor
	}
	return vals, which, true
}

// EvalThreshold checks t on one phase: one result per KPI instance the
// expression names (all must hold).
func EvalThreshold(t pipebench.Threshold, p *pipebench.PhaseResult) []pipebench.ThresholdResult {
	lv, lw, lok := values(t.Left, p)
	rv, _, rok := values(t.Right, p)
	if !lok || !rok {
		missing := t.Left.KPI
		if lok {
			missing = t.Right.KPI
		}
		var have []string
		for _, k := range p.KPIs {
			if len(have) < 12 && !containsStr(have, k.Name) {
				have = append(have, k.Name)
			}
		}
		return []pipebench.ThresholdResult{{Expr: t.Expr, Phase: p.Name, Message: fmt.Sprintf("%s was not measured in phase %s (it has %s...)", missing, p.Name, strings.Join(have, ", "))}}
	}
	var out []pipebench.ThresholdResult
	for i, l := range lv {
		r := rv[0]
		if len(rv) == len(lv) {
			r = rv[i]
		}
		ok := compare(l, t.Op, r)
		res := pipebench.ThresholdResult{Expr: t.Expr, Phase: p.Name, Passed: ok, Observed: l, Limit: r}
		if lw[i] != "" && len(lv) > 1 {
			res.Expr = t.Expr + " [" + lw[i] + "]"
		}
		if !ok {
			// The KPI as the table names it (its labels when several
			// instances were judged), with its unit on both sides.
			what := describe(t.Left)
			if lw[i] != "" && !t.Left.Const {
				what = lw[i]
			}
			u := unitOf(p, t.Left)
			res.Message = fmt.Sprintf("%s is %s, not %s %s", what, withUnit(l, u), t.Op, withUnit(r, u))
		}
		out = append(out, res)
	}
	return out
}

func describe(o pipebench.Operand) string {
	if o.Const {
		return num(o.Value)
	}
	return o.KPI
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// unitOf is the unit of the KPI an operand names in phase p ("" for a
// constant or a KPI without one).
func unitOf(p *pipebench.PhaseResult, o pipebench.Operand) pipebench.Unit {
	if o.Const {
		return ""
	}
	for _, k := range p.KPIs {
		if k.Name == o.KPI {
			return k.Unit
		}
	}
	return ""
}

// withUnit writes v in unit u as a person reads it: 13.9 ms, 2,000/s.
func withUnit(v float64, u pipebench.Unit) string {
	switch u {
	case "", pipebench.UnitCount, pipebench.UnitRatio:
		return num(v)
	case pipebench.UnitPerSecond:
		return num(v) + "/s"
	}
	return num(v) + " " + string(u)
}

func compare(l float64, op string, r float64) bool {
	switch op {
	case "<":
		return l < r
	case "<=":
		return l <= r
	case ">":
		return l > r
	case ">=":
		return l >= r
	case "==":
		return l == r
	default:
		return l != r
	}
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
