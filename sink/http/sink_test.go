package httpsink

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/payload"
)

// counter is a test recorder of arrivals (the sink under test is real).
type counter struct {
	mu        sync.Mutex
	seqs      map[uint64]int
	faulted   int
	unmatched int
}

func (c *counter) Arrive(seq uint64, _, _ time.Time) { c.mu.Lock(); c.seqs[seq]++; c.mu.Unlock() }
func (c *counter) Faulted(n int)                     { c.mu.Lock(); c.faulted += n; c.mu.Unlock() }
func (c *counter) Unmatched(n int)                   { c.mu.Lock(); c.unmatched += n; c.mu.Unlock() }

func start(t *testing.T, p Params) (*Sink, *counter) {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{seqs: map[uint64]int{}}
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
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b.Body))
	req.Header.Set("Content-Type", b.ContentType)
	for _, h := range b.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := http.DefaultClient.Do(req)
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
	if len(c.seqs) != 1800 || c.faulted != 200 {
		t.Fatalf("arrived %d, faulted %d", len(c.seqs), c.faulted)
	}
	resp, err := http.Get(s.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range fams["pipebench_sink_items_total"].GetMetric() {
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
	if uint64(len(c.seqs)) != seq-1 || c.unmatched != 0 {
		t.Fatalf("arrived %d of %d, unmatched %d", len(c.seqs), seq-1, c.unmatched)
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
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || len(c.seqs) != 80 || c.faulted != 40 {
		t.Errorf("batches of 40 against a bucket of 80 events: %v, %d arrived, %d faulted", codes, len(c.seqs), c.faulted)
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
