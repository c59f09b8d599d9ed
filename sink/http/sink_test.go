package httpsink

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
)

func start(t *testing.T, p Params) (*Sink, *testutil.Arrivals) {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	c := &testutil.Arrivals{}
	if err := s.Start(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s, c
}

func post(t *testing.T, url string, b pipebench.Batch) int {
	t.Helper()
	return postVia(t, http.DefaultClient, url, b)
}

// postVia posts b with its content type and headers through client and
// returns the answer's status.
func postVia(t *testing.T, client *http.Client, url string, b pipebench.Batch) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b.Body))
	req.Header.Set("Content-Type", b.ContentType)
	for _, h := range b.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestEveryTenthAnswered503(t *testing.T) {
	s, c := start(t, Params{Faults: pipebench.FaultPolicy{ErrorRatio: 0.1, ErrorStatus: 503}})
	g, _ := payload.EventFactory().New(nil, pipebench.Env{})
	codes := map[int]int{}
	for i := 1; i <= 2000; i++ {
		codes[post(t, s.Endpoint(), g.Next(uint64(i), 1, time.Now()))]++
	}
	if codes[503] != 200 || codes[200] != 1800 {
		t.Fatalf("codes = %v, want 200x503 and 1800x200", codes)
	}
	if n, f := c.Count(); n != 1800 || f != 200 {
		t.Fatalf("arrived %d, faulted %d", n, f)
	}
	got := map[string]float64{}
	for _, m := range promtest.Families(t, s.MetricsURL())["pipebench_sink_items_total"].GetMetric() {
		got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	if got["delivered"] != 1800 || got["faulted"] != 200 {
		t.Errorf("metrics items = %v", got)
	}
}

func TestEveryWireModeArrives(t *testing.T) {
	s, c := start(t, Params{})
	gens := []pipebench.Generator{}
	for _, f := range []pipebench.Factory[pipebench.Generator]{payload.EventFactory(), payload.CloudEventsFactory()} {
		g, _ := f.New(nil, pipebench.Env{})
		gens = append(gens, g)
	}
	binCfg := payload.CloudEventsFactory().NewConfig().(*payload.CloudEventsConfig)
	binCfg.Mode = "binary"
	bin, _ := payload.CloudEventsFactory().New(binCfg, pipebench.Env{})
	gens = append(gens, bin)
	seq := uint64(1)
	for _, g := range gens {
		for _, n := range []int{1, 3} {
			if code := post(t, s.Endpoint(), g.Next(seq, n, time.Now())); code != 200 {
				t.Fatalf("code %d", code)
			}
			seq += uint64(n)
		}
	}
	if n, _ := c.Count(); uint64(n) != seq-1 || c.UnmatchedItems() != 0 {
		t.Fatalf("arrived %d of %d, unmatched %d", n, seq-1, c.UnmatchedItems())
	}
}

func TestLatencyOutageAndRateLimit(t *testing.T) {
	lat := pipebench.LatencyDist{Kind: "fixed", Fixed: pipebench.Duration(30 * time.Millisecond)}
	s, _ := start(t, Params{Faults: pipebench.FaultPolicy{Latency: &lat}})
	g, _ := payload.EventFactory().New(nil, pipebench.Env{})
	t0 := time.Now()
	post(t, s.Endpoint(), g.Next(1, 1, time.Now()))
	if el := time.Since(t0); el < 30*time.Millisecond {
		t.Errorf("answered in %v, want >= 30ms", el)
	}
	s.SetFaults(pipebench.FaultPolicy{Outages: []pipebench.Window{{Start: 0, Duration: pipebench.Duration(time.Hour)}}, ErrorStatus: 502}, time.Now())
	if code := post(t, s.Endpoint(), g.Next(2, 1, time.Now())); code != 502 {
		t.Errorf("during outage: %d", code)
	}
	s.SetFaults(pipebench.FaultPolicy{RateLimit: 5}, time.Now())
	codes := map[int]int{}
	for i := 0; i < 20; i++ {
		codes[post(t, s.Endpoint(), g.Next(uint64(10+i), 1, time.Now()))]++
	}
	if codes[429] < 10 || codes[200] < 5 {
		t.Errorf("rate limit codes %v", codes)
	}
}

func TestConfigValidate(t *testing.T) {
	c := &Config{Listen: "nope", Path: "x", MaxBodyBytes: 0}
	err := c.Validate()
	for _, want := range []string{"listen:", "path:", "max_body_bytes:"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%v lacks %s", err, want)
		}
	}
}

// rate_limit counts the events a request carries, request_rate_limit the
// requests: against a bucket of 80 events, batches of 40 pass twice and
// the third is refused; against a bucket of 2 requests, two pass whatever
// they carry. (The buckets refill slowly, 1 event and 0.01 request a
// second, so that a loaded machine's pauses change nothing.)
func TestRateLimitsCountItemsAndRequests(t *testing.T) {
	s, c := start(t, Params{})
	g, _ := payload.EventFactory().New(nil, pipebench.Env{})
	s.SetFaults(pipebench.FaultPolicy{RateLimit: 1, RateLimitBurst: pipebench.Duration(80 * time.Second)}, time.Now())
	var codes []int
	for i := 0; i < 3; i++ {
		codes = append(codes, post(t, s.Endpoint(), g.Next(uint64(1+40*i), 40, time.Now())))
	}
	if n, f := c.Count(); codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || n != 80 || f != 40 {
		t.Errorf("batches of 40 against a bucket of 80 events: %v, %d arrived, %d faulted", codes, n, f)
	}
	s.SetFaults(pipebench.FaultPolicy{RequestRateLimit: 0.01, RateLimitBurst: pipebench.Duration(200 * time.Second)}, time.Now())
	codes = nil
	for i := 0; i < 3; i++ {
		codes = append(codes, post(t, s.Endpoint(), g.Next(uint64(1000+100*i), 100, time.Now())))
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Errorf("batches of 100 against a bucket of 2 requests: %v", codes)
	}
}
