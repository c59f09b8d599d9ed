package fault

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

func count(in *Injector, n int, at func(i int) time.Time) (fails int, reasons map[string]int) {
	reasons = map[string]int{}
	for i := 0; i < n; i++ {
		d := in.Decide(Request{At: at(i)})
		if d.Fail {
			fails++
			reasons[d.Reason]++
		}
	}
	return
}

func TestErrorRatioIsExact(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, c := range []struct {
		ratio float64
		n     int
		want  int
	}{{0.1, 1000, 100}, {0.7, 1000, 700}, {0.5, 7, 3}, {1, 10, 10}, {0, 10, 0}} {
		in := New(1)
		in.Set(pipebench.FaultPolicy{ErrorRatio: c.ratio, ErrorStatus: 503}, t0)
		if got, _ := count(in, c.n, func(int) time.Time { return t0 }); got != c.want {
			t.Errorf("ratio %v over %d: %d failures, want %d", c.ratio, c.n, got, c.want)
		}
	}
	// With 0.1, exactly every 10th fails.
	in := New(1)
	in.Set(pipebench.FaultPolicy{ErrorRatio: 0.1}, t0)
	for i := 1; i <= 30; i++ {
		d := in.Decide(Request{At: t0})
		if d.Fail != (i%10 == 0) || (d.Fail && d.Status != 503) {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
}

func TestOutageWindowAndRateLimit(t *testing.T) {
	t0 := time.Unix(100, 0)
	in := New(1)
	in.Set(pipebench.FaultPolicy{Outages: []pipebench.Window{{Start: pipebench.Duration(10 * time.Second), Duration: pipebench.Duration(5 * time.Second)}}, ErrorStatus: 500}, t0)
	// one request per 100 ms for 20 s: 50 fall in the outage
	fails, reasons := count(in, 200, func(i int) time.Time { return t0.Add(time.Duration(i) * 100 * time.Millisecond) })
	if fails != 50 || reasons["outage"] != 50 {
		t.Errorf("outage fails %d %v, want 50", fails, reasons)
	}
	in.Set(pipebench.FaultPolicy{RateLimit: 100}, t0)
	// 1000 requests/s for 2 s against 100/s: 100 burst + 200 refilled pass.
	fails, reasons = count(in, 2000, func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) })
	if passed := 2000 - fails; passed < 295 || passed > 302 || reasons["rate_limit"] != fails {
		t.Errorf("rate limit let %d pass (%v), want about 300", passed, reasons)
	}
	in.Set(pipebench.FaultPolicy{RateLimit: 100, RateLimitBurst: pipebench.Duration(100 * time.Millisecond)}, t0)
	// The same against a bucket of 100 ms: 10 burst + 200 refilled pass.
	fails, _ = count(in, 2000, func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) })
	if passed := 2000 - fails; passed < 205 || passed > 212 {
		t.Errorf("rate limit with a 100 ms burst let %d pass, want about 210", passed)
	}
}

func TestLatencyDistributions(t *testing.T) {
	ms := func(n int) pipebench.Duration { return pipebench.Duration(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		l    pipebench.LatencyDist
		mean time.Duration
	}{
		{pipebench.LatencyDist{Kind: "fixed", Fixed: ms(5)}, 5 * time.Millisecond},
		{pipebench.LatencyDist{Kind: "uniform", Min: ms(2), Max: ms(8)}, 5 * time.Millisecond},
		{pipebench.LatencyDist{Kind: "normal", Mean: ms(10), StdDev: ms(1)}, 10 * time.Millisecond},
		{pipebench.LatencyDist{Kind: "exponential", Mean: ms(4)}, 4 * time.Millisecond},
	} {
		in := New(7)
		l := c.l
		in.Set(pipebench.FaultPolicy{Latency: &l}, time.Unix(0, 0))
		var sum time.Duration
		const n = 20000
		for i := 0; i < n; i++ {
			d := in.Decide(Request{At: time.Unix(0, 0)})
			if d.Fail || d.Delay < 0 {
				t.Fatalf("%s: %+v", l.Kind, d)
			}
			sum += d.Delay
		}
		mean := sum / n
		if diff := mean - c.mean; diff > c.mean/20 || diff < -c.mean/20 {
			t.Errorf("%s: mean %v, want %v ±5%%", l.Kind, mean, c.mean)
		}
	}
}

// A policy limited to one pipeline fails exactly its ratio of that
// pipeline's requests and none of the others', whatever the interleaving.
func TestPipelinePolicyHitsOnlyItsPipeline(t *testing.T) {
	t0 := time.Unix(0, 0)
	in := New(1)
	in.Set(pipebench.FaultPolicy{ErrorRatio: 0.7, ErrorStatus: 503, Pipeline: "p2"}, t0)
	fails := map[string]int{}
	for i := 0; i < 3000; i++ {
		name := []string{"p1", "p2", "p3", ""}[i%4]
		if d := in.Decide(Request{At: t0, Pipeline: name}); d.Fail {
			if d.Status != 503 || d.Reason != "error_ratio" {
				t.Fatalf("request %d of %q: %+v", i, name, d)
			}
			fails[name]++
		}
	}
	if fails["p2"] != 525 || len(fails) != 1 { // 750 requests of p2, 70% of them
		t.Errorf("failures by pipeline %v, want p2: 525 alone", fails)
	}
	// A request naming no pipeline never hits a pipeline's policy.
	if d := in.Decide(Request{At: t0}); d.Fail {
		t.Errorf("a request without pipeline failed: %+v", d)
	}
}

func TestPipelineKeyValidation(t *testing.T) {
	for _, c := range []struct {
		p    pipebench.FaultPolicy
		want string
	}{
		{pipebench.FaultPolicy{Pipeline: "p2"}, "no fault is given"},
		{pipebench.FaultPolicy{Pipeline: "p 2", ErrorRatio: 0.5}, "is not a pipeline name"},
		{pipebench.FaultPolicy{Pipeline: "p2", ErrorRatio: 0.5}, ""},
	} {
		err := c.p.Validate(0)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "pipeline: ")) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}

// rate_limit counts items and request_rate_limit requests: what each lets
// through in 10 s of steady requests is its bucket plus its rate times
// the time, whatever the other counts.
func TestRateLimitsCountWhatTheySay(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name       string
		p          pipebench.FaultPolicy
		items      int           // per request
		every      time.Duration // between requests
		wantItems  float64       // accepted in 10 s
		wantReason string
	}{
		// 10 requests/s of 1,000 items against 3,000 items/s: 3,000 in
		// the full bucket, then 3,000/s for 10 s.
		{"items, batches", pipebench.FaultPolicy{RateLimit: 3000}, 1000, 100 * time.Millisecond, 33000, "rate_limit"},
		// The same requests against 3 requests/s pass 3,000 items/s too,
		// but against 30 requests/s all pass: requests are not items.
		{"requests, batches", pipebench.FaultPolicy{RequestRateLimit: 3}, 1000, 100 * time.Millisecond, 33000, "request_rate_limit"},
		{"requests, under the limit", pipebench.FaultPolicy{RequestRateLimit: 30}, 1000, 100 * time.Millisecond, 100000, ""},
		// One item per request: both limits agree.
		{"items, single", pipebench.FaultPolicy{RateLimit: 100}, 1, time.Millisecond, 1100, "rate_limit"},
		// Batches larger than the bucket (8,192 items against a 100 ms
		// bucket of 300): one passes each time the bucket is full again,
		// so the accepted items still keep to 3,000/s.
		{"items, batches over the bucket", pipebench.FaultPolicy{RateLimit: 3000, RateLimitBurst: pipebench.Duration(100 * time.Millisecond)}, 8192, 10 * time.Millisecond, 32768, "rate_limit"},
		// Both limits: the tighter one decides.
		{"both", pipebench.FaultPolicy{RateLimit: 100000, RequestRateLimit: 5}, 100, 10 * time.Millisecond, 5500, "request_rate_limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := New(1)
			in.Set(c.p, t0)
			var accepted float64
			reasons := map[string]int{}
			for at := time.Duration(0); at < 10*time.Second; at += c.every {
				d := in.Decide(Request{At: t0.Add(at), Items: c.items})
				if d.Fail {
					if d.Status != 429 {
						t.Fatalf("refused with %d, want 429", d.Status)
					}
					reasons[d.Reason]++
					continue
				}
				accepted += float64(c.items)
			}
			// Requests are whole: allow one request's items besides 2%.
			if tol := c.wantItems*0.02 + float64(c.items); math.Abs(accepted-c.wantItems) > tol {
				t.Errorf("accepted %.0f items in 10 s, want %.0f ±%.0f (refusals %v)", accepted, c.wantItems, tol, reasons)
			}
			if c.wantReason != "" && (reasons[c.wantReason] == 0 || len(reasons) != 1) {
				t.Errorf("refusals %v, want only %s", reasons, c.wantReason)
			}
			if c.wantReason == "" && len(reasons) > 0 {
				t.Errorf("refusals %v, want none", reasons)
			}
		})
	}
}

// A request refused by one limit takes nothing from the other's bucket.
func TestRefusedRequestTakesNoTokens(t *testing.T) {
	t0 := time.Unix(0, 0)
	in := New(1)
	in.Set(pipebench.FaultPolicy{RateLimit: 10, RequestRateLimit: 100}, t0)
	// 10 items fill the item bucket; the next 50 requests are refused by
	// it and must leave the request bucket as it was.
	if d := in.Decide(Request{At: t0, Items: 10}); d.Fail {
		t.Fatalf("first request refused: %+v", d)
	}
	for i := 0; i < 50; i++ {
		if d := in.Decide(Request{At: t0, Items: 1}); !d.Fail || d.Reason != "rate_limit" {
			t.Fatalf("request %d: %+v, want refused by rate_limit", i, d)
		}
	}
	in.Set(pipebench.FaultPolicy{RateLimit: 1000, RequestRateLimit: 2}, t0)
	ok := 0
	for i := 0; i < 10; i++ {
		if d := in.Decide(Request{At: t0, Items: 1}); !d.Fail {
			ok++
		}
	}
	if ok != 2 {
		t.Errorf("%d requests passed a bucket of 2 requests", ok)
	}
}

// Reseed starts the latency draws again from a seed: an injector reseeded
// with 9 draws what one made with 9 draws, another seed draws otherwise.
func TestReseedRepeatsTheDraws(t *testing.T) {
	l := pipebench.LatencyDist{Kind: "uniform", Min: pipebench.Duration(time.Millisecond), Max: pipebench.Duration(time.Second)}
	draws := func(in *Injector) []time.Duration {
		in.Set(pipebench.FaultPolicy{Latency: &l}, time.Unix(0, 0))
		var out []time.Duration
		for i := 0; i < 5; i++ {
			out = append(out, in.Decide(Request{At: time.Unix(0, 0)}).Delay)
		}
		return out
	}
	want := draws(New(9))
	reseeded := New(1)
	reseeded.Reseed(9)
	if got := draws(reseeded); !slices.Equal(got, want) {
		t.Errorf("reseeded with 9: %v, made with 9: %v", got, want)
	}
	if other := draws(New(1)); slices.Equal(other, want) {
		t.Errorf("seeds 1 and 9 drew the same: %v", other)
	}
}
