// Package fault decides, request by request, which fault a sink injects
// under a pipebench.FaultPolicy. It is pure decision logic, shared by every
// sink: the time, the items and the pipeline of each request are passed
// in.
package fault

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// Request is what a sink knows of one request when it decides it.
type Request struct {
	// At is when the request arrived.
	At time.Time
	// Items is how many items (spans, metric points, log records,
	// events, samples) the request carries; less than 1 counts as 1.
	Items int
	// Pipeline is the pipeline of the system under test the request
	// names (pipebench.PipelineHeader), "" when it names none.
	Pipeline string
}

// Decision is what to do with one request.
type Decision struct {
	Delay  time.Duration // wait this long before answering
	Fail   bool          // answer Status instead of accepting
	Status int           // HTTP status when Fail (503, 429, 500...)
	// Reason names the rule that failed the request: error_ratio,
	// outage, rate_limit (items) or request_rate_limit.
	Reason string
}

// Wait waits out the decision's delay, or until ctx is done; it reports
// whether the delay ran its course (false: the request was given up).
func (d Decision) Wait(ctx context.Context) bool {
	if d.Delay <= 0 {
		return true
	}
	return Sleep(ctx, d.Delay)
}

// Sleep waits d, or until ctx is done; it reports whether d ran its
// course (false: ctx ended first). For the waits a sink adds around its
// faults: a redelivery delay, a rate limit's slot.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Injector applies the current policy. It is safe for concurrent use;
// decisions are serialised so that ratios and limits are exact.
type Injector struct {
	mu     sync.Mutex
	p      pipebench.FaultPolicy
	start  time.Time
	rng    *rand.Rand
	seen   uint64 // requests under the current policy
	failed uint64 // of which failed by error_ratio
	items  bucket // rate_limit: items
	reqs   bucket // request_rate_limit: requests
}

// New returns an injector with no policy; seed makes latency draws
// repeatable.
func New(seed uint64) *Injector {
	return &Injector{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Reseed starts the random draws (latency) again from seed.
func (in *Injector) Reseed(seed uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Set replaces the policy; windows are measured from phaseStart, and the
// rate limiters' buckets start full.
func (in *Injector) Set(p pipebench.FaultPolicy, phaseStart time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.p, in.start = p, phaseStart
	in.seen, in.failed = 0, 0
	in.items.reset(float64(p.RateLimit), p.RateLimitBurst, phaseStart)
	in.reqs.reset(float64(p.RequestRateLimit), p.RateLimitBurst, phaseStart)
}

// Decide decides for one request.
//
// A policy limited to one pipeline (FaultPolicy.Pipeline) lets every other
// request through untouched, and its ratio and limits count only that
// pipeline's requests. Outages fail every request in their window. The
// rate limits are token buckets that start full and refill at their rate:
// rate_limit takes the request's items from its bucket, request_rate_limit
// one request from its own; a request is accepted only when both have
// enough (a request of more items than the bucket holds passes when the
// bucket is full, and empties it below zero, so that what is accepted
// over time still keeps to the rate). The error ratio is applied exactly,
// not by chance: a request fails when failing it keeps the share of
// failures at or below the ratio, so with 0.1 exactly every 10th request
// fails.
func (in *Injector) Decide(r Request) Decision {
	in.mu.Lock()
	defer in.mu.Unlock()
	p := in.p
	if p.Pipeline != "" && p.Pipeline != r.Pipeline {
		return Decision{}
	}
	var d Decision
	if p.Latency != nil {
		d.Delay = in.draw(p.Latency)
	}
	status := p.Defaulted().ErrorStatus
	if status == 0 {
		status = 503
	}
	el := r.At.Sub(in.start)
	for _, w := range p.Outages {
		if el >= w.Start.D() && el < w.Start.D()+w.Duration.D() {
			d.Fail, d.Status, d.Reason = true, status, "outage"
			return d
		}
	}
	items := float64(max(r.Items, 1))
	in.items.refill(r.At)
	in.reqs.refill(r.At)
	switch {
	case !in.reqs.has(1):
		d.Fail, d.Status, d.Reason = true, 429, "request_rate_limit"
		return d
	case !in.items.has(items):
		d.Fail, d.Status, d.Reason = true, 429, "rate_limit"
		return d
	}
	in.reqs.take(1)
	in.items.take(items)
	if p.ErrorRatio > 0 {
		in.seen++
		if float64(in.failed+1) <= p.ErrorRatio*float64(in.seen)+1e-9 {
			in.failed++
			d.Fail, d.Status, d.Reason = true, status, "error_ratio"
		}
	}
	return d
}

// bucket is a token bucket: rate tokens a second, holding at most cap.
// A zero rate is no limit.
type bucket struct {
	rate, cap, tokens float64
	last              time.Time
}

// reset sets the rate and the burst (how many seconds' worth the bucket
// holds; one when 0) and fills the bucket.
func (b *bucket) reset(rate float64, burst pipebench.Duration, now time.Time) {
	secs := burst.D().Seconds()
	if secs <= 0 {
		secs = 1
	}
	b.rate, b.cap, b.last = rate, math.Max(rate*secs, 1), now
	b.tokens = b.cap
}

func (b *bucket) refill(now time.Time) {
	if b.rate <= 0 {
		return
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = math.Min(b.cap, b.tokens+dt*b.rate)
		b.last = now
	}
}

// has reports whether n tokens may be taken: there are n, or the bucket
// is full (n more than it ever holds).
func (b *bucket) has(n float64) bool {
	return b.rate <= 0 || b.tokens >= math.Min(n, b.cap)
}

func (b *bucket) take(n float64) {
	if b.rate > 0 {
		b.tokens -= n
	}
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
