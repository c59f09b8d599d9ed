package pipebench

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
	// Outages are windows, measured from the start of the phase, during
	// which every request is answered with ErrorStatus.
	Outages []Window `json:"outages,omitempty"`
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
