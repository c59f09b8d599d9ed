package pipebench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// FaultPolicy is what a sink does to the requests it receives during one
// phase. The zero value injects nothing. It is data only: sink/fault
// decides each request under it.
//
// It is the one source of the fault rules. The scenario decoder fills it
// from a phase's `faults` key by its yaml tags, strictly and with every
// key's line and column; `pipebench schema` reflects it (a key's
// description is its field's doc comment); `pipebench sink` makes a flag of
// each field (error_ratio: --error-ratio, its value in the field's text
// form); Validate holds every rule. A new rule is a field here, its rule in
// Validate, its words in String, and its decision in sink/fault.
type FaultPolicy struct {
	// ErrorRatio is the fraction of requests, 0 to 1, answered with
	// error_status instead of being accepted: 0.7 answers 70% of them.
	// The share is exact, not drawn by chance.
	ErrorRatio float64 `yaml:"error_ratio" json:"error_ratio,omitempty"`
	// ErrorStatus is the HTTP status of a faulted answer: 503 (the
	// default), 429, 500, 502 or 504. gRPC sinks answer the matching code:
	// 503, 502 and 504 UNAVAILABLE, 429 RESOURCE_EXHAUSTED, 500 INTERNAL.
	ErrorStatus int `yaml:"error_status" json:"error_status,omitempty"`
	// Latency is added before answering each request: a duration (5ms),
	// or a distribution: uniform:1ms:20ms, normal:10ms:2ms,
	// exponential:10ms, or a mapping {kind, min, max, mean, stddev}.
	Latency *LatencyDist `yaml:"latency" json:"latency,omitempty"`
	// RateLimit caps the items accepted per second (spans, metric points,
	// log records, events: what the request carries, so that a collector
	// sending a few large batches a second is limited by their items);
	// a request that would go over it is answered 429
	// (RESOURCE_EXHAUSTED).
	RateLimit Rate `yaml:"rate_limit" json:"rate_limit,omitempty"`
	// RequestRateLimit caps the requests accepted per second, whatever
	// they carry; a request over it is answered 429 (RESOURCE_EXHAUSTED).
	RequestRateLimit Rate `yaml:"request_rate_limit" json:"request_rate_limit,omitempty"`
	// RateLimitBurst is how much the rate limits let through at once:
	// each token bucket holds its limit times this (1s when not set). A
	// short burst makes a limit a sharp capacity, as a gateway's is.
	RateLimitBurst Duration `yaml:"rate_limit_burst" json:"rate_limit_burst,omitempty"`
	// Outages are windows, measured from the start of the phase, during
	// which every request is answered with error_status: a list of
	// {start, duration}, or of START:DURATION (30s:20s).
	Outages []Window `yaml:"outages" json:"outages,omitempty" flag:"outage"`
	// Pipeline, when set, limits the policy to the requests of one
	// pipeline of the system under test (p1, p2, ... with the embedded
	// collector, whose exporters name their pipeline in the
	// x-pipebench-pipeline header); the other pipelines' requests pass
	// untouched. Only the otlp sink tells pipelines apart.
	Pipeline string `yaml:"pipeline" json:"pipeline,omitempty"`
}

// PipelineHeader is the request header (gRPC metadata key) by which an
// exporter tells the sink which pipeline of the system under test it
// belongs to.
const PipelineHeader = "x-pipebench-pipeline"

// ValidPipelineName reports whether s can name a pipeline: 1 to 64
// letters, digits, '_', '.', '-' or '/'.
func ValidPipelineName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}

// IsZero reports whether p injects nothing.
func (p FaultPolicy) IsZero() bool {
	return p.ErrorRatio == 0 && p.Latency == nil && p.RateLimit == 0 && p.RequestRateLimit == 0 && len(p.Outages) == 0
}

// Defaulted returns p with its defaults filled in: error_status 503 when
// the policy answers errors (a ratio or outages) and names no status.
func (p FaultPolicy) Defaulted() FaultPolicy {
	if p.ErrorStatus == 0 && (p.ErrorRatio > 0 || len(p.Outages) > 0) {
		p.ErrorStatus = 503
	}
	return p
}

// String describes the policy in a few words for tables and plans ("-"
// when it injects nothing): "70% answered 503; limit 3000/s items".
func (p FaultPolicy) String() string {
	if p.IsZero() {
		return "-"
	}
	var parts []string
	if p.ErrorRatio > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% answered %d", p.ErrorRatio*100, p.Defaulted().ErrorStatus))
	}
	if p.Latency != nil {
		parts = append(parts, "+"+p.Latency.String()+" latency")
	}
	if p.RateLimit > 0 {
		parts = append(parts, "limit "+p.RateLimit.String()+" items")
	}
	if p.RequestRateLimit > 0 {
		parts = append(parts, "limit "+p.RequestRateLimit.String()+" requests")
	}
	if p.RateLimitBurst > 0 {
		parts = append(parts, "burst "+p.RateLimitBurst.String())
	}
	for _, o := range p.Outages {
		parts = append(parts, fmt.Sprintf("outage at %s for %s", o.Start, o.Duration))
	}
	if p.Pipeline != "" {
		return "pipeline " + p.Pipeline + " only: " + strings.Join(parts, "; ")
	}
	return strings.Join(parts, "; ")
}

// LatencyDist is an added latency: Fixed alone, or a distribution.
type LatencyDist struct {
	// Kind is the distribution: fixed (the default), uniform (between min
	// and max), normal (mean and stddev, clipped at 0) or exponential
	// (mean).
	Kind string `yaml:"kind" json:"kind"`
	// Fixed is the latency of kind fixed.
	Fixed Duration `yaml:"fixed" json:"fixed,omitempty"`
	// Min is the lower bound of kind uniform.
	Min Duration `yaml:"min" json:"min,omitempty"`
	// Max is the upper bound of kind uniform.
	Max Duration `yaml:"max" json:"max,omitempty"`
	// Mean is the mean of kinds normal and exponential.
	Mean Duration `yaml:"mean" json:"mean,omitempty"`
	// StdDev is the standard deviation of kind normal.
	StdDev Duration `yaml:"stddev" json:"stddev,omitempty"`
}

// SetDefaults makes a latency written as a mapping without a kind a fixed
// one (the scenario decoder calls it before filling the mapping in).
func (l *LatencyDist) SetDefaults() { l.Kind = "fixed" }

// UnmarshalText reads the short form of a latency: a duration (5ms, a
// fixed latency), uniform:MIN:MAX, normal:MEAN:STDDEV or exponential:MEAN.
func (l *LatencyDist) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	parts := strings.Split(s, ":")
	durs := make([]Duration, 0, 2)
	for _, p := range parts[1:] {
		d, err := ParseDuration(p)
		if err != nil {
			return fmt.Errorf("latency %q: %w", s, err)
		}
		durs = append(durs, d)
	}
	switch {
	case len(parts) == 1:
		d, err := ParseDuration(s)
		if err != nil {
			return fmt.Errorf("latency %q is not valid: write 5ms, uniform:1ms:9ms, normal:10ms:2ms or exponential:10ms", s)
		}
		*l = LatencyDist{Kind: "fixed", Fixed: d}
	case parts[0] == "uniform" && len(durs) == 2:
		*l = LatencyDist{Kind: "uniform", Min: durs[0], Max: durs[1]}
	case parts[0] == "normal" && len(durs) == 2:
		*l = LatencyDist{Kind: "normal", Mean: durs[0], StdDev: durs[1]}
	case parts[0] == "exponential" && len(durs) == 1:
		*l = LatencyDist{Kind: "exponential", Mean: durs[0]}
	default:
		return fmt.Errorf("latency %q is not valid: write 5ms, uniform:1ms:9ms, normal:10ms:2ms or exponential:10ms", s)
	}
	return nil
}

// UnmarshalJSON reads the mapping a Result holds, or the short text form.
func (l *LatencyDist) UnmarshalJSON(b []byte) error {
	type plain LatencyDist
	return textOrObject(b, l.UnmarshalText, (*plain)(l))
}

// textOrObject reads a JSON string with text, anything else into obj (the
// value's type without its UnmarshalJSON method).
func textOrObject(b []byte, text func([]byte) error, obj any) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return text([]byte(s))
	}
	return json.Unmarshal(b, obj)
}

// String is the short text form: 5ms, uniform:1ms:20ms, normal:10ms:2ms,
// exponential:10ms.
func (l LatencyDist) String() string {
	switch l.Kind {
	case "uniform":
		return "uniform:" + l.Min.String() + ":" + l.Max.String()
	case "normal":
		return "normal:" + l.Mean.String() + ":" + l.StdDev.String()
	case "exponential":
		return "exponential:" + l.Mean.String()
	}
	return l.Fixed.String()
}

// Window is a stretch of time measured from the start of a phase.
type Window struct {
	// Start is when the window opens, from the start of the phase (0s
	// when not set).
	Start Duration `yaml:"start" json:"start"`
	// Duration is how long the window lasts.
	Duration Duration `yaml:"duration" json:"duration" jsonschema:"required" example:"20s"`
}

// UnmarshalText reads START:DURATION (30s:20s).
func (w *Window) UnmarshalText(b []byte) error {
	start, dur, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	s, err1 := ParseDuration(start)
	d, err2 := ParseDuration(dur)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("window %q is not valid: write START:DURATION, like 30s:20s, or {start: 30s, duration: 20s}", b)
	}
	*w = Window{Start: s, Duration: d}
	return nil
}

// String is START:DURATION.
func (w Window) String() string { return w.Start.String() + ":" + w.Duration.String() }

// UnmarshalJSON reads the mapping a Result holds, or START:DURATION.
func (w *Window) UnmarshalJSON(b []byte) error {
	type plain Window
	return textOrObject(b, w.UnmarshalText, (*plain)(w))
}

// ErrorStatuses are the statuses a fault policy may answer with.
var ErrorStatuses = []int{429, 500, 502, 503, 504}

// LatencyKinds maps each latency distribution to the keys it needs.
var LatencyKinds = map[string][]string{
	"fixed":       {"fixed"},
	"uniform":     {"min", "max"},
	"normal":      {"mean", "stddev"},
	"exponential": {"mean"},
}

// LatencyKindNames lists the latency distributions in a fixed order.
var LatencyKindNames = []string{"fixed", "uniform", "normal", "exponential"}

// ValidErrorStatus reports whether s is one of ErrorStatuses.
func ValidErrorStatus(s int) bool {
	for _, v := range ErrorStatuses {
		if v == s {
			return true
		}
	}
	return false
}

// Validate checks the distribution: a known kind, the keys it needs, max
// not below min. Each line of the error starts with the key it is about.
func (l *LatencyDist) Validate() error {
	if l == nil {
		return nil
	}
	need, ok := LatencyKinds[l.Kind]
	if !ok {
		return fmt.Errorf("kind: unknown latency kind %q%s: use %s", l.Kind, DidYouMean(l.Kind, LatencyKindNames), strings.Join(LatencyKindNames, ", "))
	}
	set := map[string]bool{"fixed": l.Fixed > 0, "min": true, "max": l.Max > 0, "mean": l.Mean > 0, "stddev": l.StdDev > 0}
	var errs []error
	for _, f := range need {
		if !set[f] {
			errs = append(errs, fmt.Errorf("%s: missing or 0: %s latency needs %s", f, l.Kind, strings.Join(need, " and ")))
		}
	}
	if l.Kind == "uniform" && l.Max > 0 && l.Max < l.Min {
		errs = append(errs, fmt.Errorf("max: %s is below min (%s)", l.Max, l.Min))
	}
	return errors.Join(errs...)
}

// Validate checks the policy: a ratio within 0..1, an allowed status, a
// valid latency, limits not negative, outages inside the phase (phaseDur
// 0: not checked). Each line of the error starts with the key it is about
// (outages[1].duration: ...), so that the decoder points at that key and
// `pipebench sink` names its flag.
func (p FaultPolicy) Validate(phaseDur Duration) error {
	var errs []error
	if p.ErrorRatio < 0 || p.ErrorRatio > 1 || math.IsNaN(p.ErrorRatio) {
		errs = append(errs, fmt.Errorf("error_ratio: %v is outside 0..1: 0.7 answers 70%% of requests with error_status", p.ErrorRatio))
	}
	if p.ErrorStatus != 0 && !ValidErrorStatus(p.ErrorStatus) {
		errs = append(errs, fmt.Errorf("error_status: %d is not allowed: use %s", p.ErrorStatus, joinInts(ErrorStatuses)))
	}
	errs = append(errs, Prefixed("latency", p.Latency.Validate())...)
	if p.RateLimit < 0 || math.IsNaN(float64(p.RateLimit)) {
		errs = append(errs, fmt.Errorf("rate_limit: must not be negative"))
	}
	if p.RequestRateLimit < 0 || math.IsNaN(float64(p.RequestRateLimit)) {
		errs = append(errs, fmt.Errorf("request_rate_limit: must not be negative"))
	}
	if p.RateLimitBurst != 0 && p.RateLimit == 0 && p.RequestRateLimit == 0 {
		errs = append(errs, fmt.Errorf("rate_limit_burst: goes with rate_limit or request_rate_limit"))
	}
	if p.Pipeline != "" {
		if !ValidPipelineName(p.Pipeline) {
			errs = append(errs, fmt.Errorf("pipeline: %q is not a pipeline name: use the name the sink sees in the x-pipebench-pipeline header (the embedded collector's pipelines are p1, p2, ...)", p.Pipeline))
		} else if p.IsZero() {
			errs = append(errs, fmt.Errorf("pipeline: says which pipeline the faults hit, and no fault is given: add error_ratio, outages, rate_limit, request_rate_limit or latency"))
		}
	}
	for i, w := range p.Outages {
		if w.Duration <= 0 {
			errs = append(errs, fmt.Errorf("outages[%d].duration: must be more than 0", i))
		}
		if phaseDur > 0 && w.Start+w.Duration > phaseDur {
			errs = append(errs, fmt.Errorf("outages[%d]: ends at %s, after the phase (%s)", i, w.Start+w.Duration, phaseDur))
		}
	}
	return errors.Join(errs...)
}

// keyPath matches the key a problem line starts with: phases[1].faults.rate_limit.
var keyPath = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\[[0-9]+\])*(\.[a-z_][a-z0-9_]*(\[[0-9]+\])*)*$`)

// SplitKey splits a problem line "key.path: message" into its key path and
// message; key is "" when the line does not start with one.
func SplitKey(line string) (key, msg string) {
	k, m, ok := strings.Cut(line, ": ")
	if !ok || !keyPath.MatchString(k) {
		return "", line
	}
	return k, m
}

// Prefixed returns each line of err with prefix put before its key
// ("latency" and "max: ..." make "latency.max: ..."), or before the line
// when it names no key ("latency: ..."). nil gives nil.
func Prefixed(prefix string, err error) []error {
	if err == nil {
		return nil
	}
	var out []error
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		key, msg := SplitKey(line)
		if key == "" {
			out = append(out, errors.New(prefix+": "+line))
		} else {
			out = append(out, errors.New(prefix+"."+key+": "+msg))
		}
	}
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
