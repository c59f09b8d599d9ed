package pipebench

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FaultPolicy is what a sink does to the requests it receives during one
// phase. The zero value injects nothing. It is data only; sink/fault applies
// it.
type FaultPolicy struct {
	// ErrorRatio is the fraction of requests, 0 to 1, answered with
	// ErrorStatus instead of being accepted.
	ErrorRatio float64 `json:"error_ratio,omitempty"`
	// ErrorStatus is the HTTP status of a faulted answer (503 by default;
	// 429 and 500 are common). gRPC sinks map it to a gRPC code: 503 ->
	// UNAVAILABLE, 429 -> RESOURCE_EXHAUSTED, 500 -> INTERNAL.
	ErrorStatus int `json:"error_status,omitempty"`
	// Latency is added before answering each request.
	Latency *LatencyDist `json:"latency,omitempty"`
	// RateLimit caps accepted requests per second; requests over it are
	// answered 429 (RESOURCE_EXHAUSTED).
	RateLimit Rate `json:"rate_limit,omitempty"`
	// RateLimitBurst is how much the rate limiter lets through at once:
	// its token bucket holds RateLimit × RateLimitBurst (1s when zero). A
	// short burst makes the limit a sharp capacity, as a gateway's is.
	RateLimitBurst Duration `json:"rate_limit_burst,omitempty"`
	// Outages are windows, measured from the start of the phase, during
	// which every request is answered with ErrorStatus.
	Outages []Window `json:"outages,omitempty"`
	// Pipeline, when set, limits the policy to the requests of one
	// pipeline of the system under test (the sink tells pipelines apart by
	// the x-pipebench-pipeline header their exporter adds, as the
	// embedded collector's generated configuration does: p1, p2, ...);
	// the other pipelines' requests pass untouched.
	Pipeline string `json:"pipeline,omitempty"`
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
	return p.ErrorRatio == 0 && p.Latency == nil && p.RateLimit == 0 && len(p.Outages) == 0
}

// LatencyDist is an added latency: Fixed alone, or a distribution.
type LatencyDist struct {
	// Kind is "fixed", "uniform" (between Min and Max), "normal" (Mean,
	// StdDev, clipped at 0) or "exponential" (Mean).
	Kind   string   `json:"kind"`
	Fixed  Duration `json:"fixed,omitempty"`
	Min    Duration `json:"min,omitempty"`
	Max    Duration `json:"max,omitempty"`
	Mean   Duration `json:"mean,omitempty"`
	StdDev Duration `json:"stddev,omitempty"`
}

// Window is a stretch of time measured from the start of a phase.
type Window struct {
	Start    Duration `json:"start"`
	Duration Duration `json:"duration"`
}

// ErrorStatuses are the statuses a fault policy may answer with.
var ErrorStatuses = []int{429, 500, 502, 503, 504}

// LatencyKinds maps each latency distribution to the fields it needs.
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

// Validate checks the distribution: a known kind, the fields it needs,
// max not below min.
func (l *LatencyDist) Validate() error {
	if l == nil {
		return nil
	}
	need, ok := LatencyKinds[l.Kind]
	if !ok {
		return fmt.Errorf("unknown latency kind %q: use %s", l.Kind, strings.Join(LatencyKindNames, ", "))
	}
	set := map[string]bool{"fixed": l.Fixed > 0, "min": true, "max": l.Max > 0, "mean": l.Mean > 0, "stddev": l.StdDev > 0}
	for _, f := range need {
		if !set[f] {
			return fmt.Errorf("%s latency needs %s", l.Kind, strings.Join(need, " and "))
		}
	}
	if l.Kind == "uniform" && l.Max < l.Min {
		return fmt.Errorf("max (%s) is below min (%s)", l.Max, l.Min)
	}
	return nil
}

// Validate checks the policy: a ratio within 0..1, an allowed status, a
// valid latency, outages inside the phase (phaseDur 0: not checked).
func (p FaultPolicy) Validate(phaseDur Duration) error {
	var errs []error
	if p.ErrorRatio < 0 || p.ErrorRatio > 1 || math.IsNaN(p.ErrorRatio) {
		errs = append(errs, fmt.Errorf("error_ratio: %v is outside 0..1: 0.7 answers 70%% of requests with error_status", p.ErrorRatio))
	}
	if p.ErrorStatus != 0 && !ValidErrorStatus(p.ErrorStatus) {
		errs = append(errs, fmt.Errorf("error_status: %d is not allowed: use %s", p.ErrorStatus, joinInts(ErrorStatuses)))
	}
	if err := p.Latency.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("latency: %w", err))
	}
	if p.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("rate_limit: must not be negative"))
	}
	if p.RateLimitBurst != 0 && p.RateLimit == 0 {
		errs = append(errs, fmt.Errorf("rate_limit_burst: goes with rate_limit"))
	}
	if p.Pipeline != "" {
		if !ValidPipelineName(p.Pipeline) {
			errs = append(errs, fmt.Errorf("pipeline: %q is not a pipeline name: use the name the sink sees in the x-pipebench-pipeline header (the embedded collector's pipelines are p1, p2, ...)", p.Pipeline))
		} else if p.IsZero() {
			errs = append(errs, fmt.Errorf("pipeline: says which pipeline the faults hit, and no fault is given: add error_ratio, outages, rate_limit or latency"))
		}
	}
	for i, w := range p.Outages {
		if w.Duration <= 0 {
			errs = append(errs, fmt.Errorf("outages[%d]: needs a duration above 0", i))
		}
		if phaseDur > 0 && w.Start+w.Duration > phaseDur {
			errs = append(errs, fmt.Errorf("outages[%d]: ends at %s, after the phase (%s)", i, w.Start+w.Duration, phaseDur))
		}
	}
	return errors.Join(errs...)
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
