// Package fault decides, request by request, which fault a sink injects
// under a pipebench.FaultPolicy. It is pure decision logic, shared by every
// sink: the time of each request is passed in.
package fault

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// Decision is what to do with one request.
type Decision struct {
	Delay  time.Duration // wait this long before answering
	Fail   bool          // answer Status instead of accepting
	Status int           // HTTP status when Fail (503, 429, 500...)
	Reason string        // "error_ratio", "outage", "rate_limit"
}

// Injector applies the current policy. It is safe for concurrent use;
// decisions are serialised so that ratios are exact.
type Injector struct {
	mu     sync.Mutex
	p      pipebench.FaultPolicy
	start  time.Time
	rng    *rand.Rand
	seen   uint64  // requests under the current policy
	failed uint64  // of which failed by error_ratio
	tokens float64 // rate limit bucket
	last   time.Time
}

// New returns an injector with no policy; seed makes latency draws
// repeatable.
func New(seed uint64) *Injector {
	return &Injector{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Set replaces the policy; windows are measured from phaseStart.
func (in *Injector) Set(p pipebench.FaultPolicy, phaseStart time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.p, in.start = p, phaseStart
	in.seen, in.failed = 0, 0
	in.tokens, in.last = in.capacity(), phaseStart
	if in.tokens < 1 && p.RateLimit > 0 {
		in.tokens = 1
	}
}

// Decide decides for one request arriving at now.
//
// The error ratio is applied exactly, not by chance: a request fails when
// failing it keeps the share of failures at or below the ratio, so with 0.1
// exactly every 10th request fails. Outages fail every request in their
// window; the rate limit is a token bucket of one second's worth.
func (in *Injector) Decide(now time.Time) Decision { return in.DecideFor(now, "") }

// DecideFor decides for one request of the named pipeline ("" when the
// request does not say) arriving at now. A policy limited to one pipeline
// (FaultPolicy.Pipeline) lets every other request through untouched, and
// its ratio counts only that pipeline's requests.
func (in *Injector) DecideFor(now time.Time, pipeline string) Decision {
	in.mu.Lock()
	defer in.mu.Unlock()
	p := in.p
	if p.Pipeline != "" && p.Pipeline != pipeline {
		return Decision{}
	}
	var d Decision
	if p.Latency != nil {
		d.Delay = in.draw(p.Latency)
	}
	status := p.ErrorStatus
	if status == 0 {
		status = 503
	}
	el := now.Sub(in.start)
	for _, w := range p.Outages {
		if el >= w.Start.D() && el < w.Start.D()+w.Duration.D() {
			d.Fail, d.Status, d.Reason = true, status, "outage"
			return d
		}
	}
	if p.RateLimit > 0 {
		r := float64(p.RateLimit)
		if dt := now.Sub(in.last).Seconds(); dt > 0 {
			in.tokens = math.Min(in.capacity(), in.tokens+dt*r)
			in.last = now
		}
		if in.tokens < 1 {
			d.Fail, d.Status, d.Reason = true, 429, "rate_limit"
			return d
		}
		in.tokens--
	}
	if p.ErrorRatio > 0 {
		in.seen++
		if float64(in.failed+1) <= p.ErrorRatio*float64(in.seen)+1e-9 {
			in.failed++
			d.Fail, d.Status, d.Reason = true, status, "error_ratio"
		}
	}
	return d
}

// capacity is how many requests the rate limiter's bucket holds: the
// rate times the burst (one second's worth by default), at least one.
func (in *Injector) capacity() float64 {
	burst := in.p.RateLimitBurst.D().Seconds()
	if burst <= 0 {
		burst = 1
	}
	return math.Max(float64(in.p.RateLimit)*burst, 1)
}

func (in *Injector) draw(l *pipebench.LatencyDist) time.Duration {
	var v float64
	switch l.Kind {
	case "uniform":
		v = float64(l.Min) + in.rng.Float64()*float64(l.Max-l.Min)
	case "normal":
		v = float64(l.Mean) + in.rng.NormFloat64()*float64(l.StdDev)
	case "exponential":
		v = in.rng.ExpFloat64() * float64(l.Mean)
	default:
		v = float64(l.Fixed)
	}
	if v < 0 {
		v = 0
	}
	return time.Duration(v)
}
