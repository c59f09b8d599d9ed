package promrwsink

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload/promrw"
	"github.com/pipebench/pipebench/producer/promtarget"
)

func start(t *testing.T, a pipebench.Arrivals) *Sink {
	t.Helper()
	s := New(*DefaultConfig())
	testutil.Start(t, func(ctx context.Context) error { return s.Start(ctx, a) }, s.Shutdown)
	return s
}

// request encodes series carrying seq..seq+n-1 (5 to a series), one
// served series of 3 samples, one "up" sample and one staleness marker.
func request(seq uint64, n int) []byte {
	var e promrw.Encoder
	now := time.Now().UnixMilli()
	for i := 0; i < n; i += 5 {
		var vals []float64
		var ts []int64
		for j := i; j < min(i+5, n); j++ {
			vals = append(vals, float64(seq+uint64(j)))
			ts = append(ts, now)
		}
		e.Series([]promrw.Label{{Name: "__name__", Value: "load"}, {Name: "pipebench", Value: "seq"}, {Name: "series", Value: strconv.Itoa(i)}}, vals, ts)
	}
	e.Series([]promrw.Label{{Name: "__name__", Value: "served"}}, []float64{1, 2, 3}, []int64{now, now + 1, now + 2})
	e.Series([]promrw.Label{{Name: "__name__", Value: "up"}}, []float64{1}, []int64{now})
	stale := []float64{0}
	stale[0] = float64frombits(promrw.StaleNaN)
	e.Series([]promrw.Label{{Name: "__name__", Value: "served"}}, stale, []int64{now + 3})
	return snappy.Encode(nil, e.Bytes())
}

func post(t *testing.T, url string, body []byte) int {
	t.Helper()
	return postCT(t, url, body, "application/x-protobuf")
}

func postCT(t *testing.T, url string, body []byte, contentType string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Every kind of sample is counted apart; sequence numbers arrive once.
func TestCountsAndMatches(t *testing.T) {
	a := &testutil.Arrivals{}
	s := start(t, a)
	for r := 0; r < 4; r++ {
		if code := post(t, s.Endpoint(), request(uint64(1+r*100), 100)); code != http.StatusNoContent {
			t.Fatalf("request %d: status %d", r, code)
		}
	}
	st := s.Stats()
	want := promrw.Counts{Series: 4 * 23, Samples: 4 * 105, Stale: 4, Report: 4, Matched: 400, Other: 12}
	if st.Counts != want || st.Requests != 4 {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	if n, _ := a.Count(); n != 400 || a.UnmatchedItems() != 12 {
		t.Fatalf("arrivals: %d sequence numbers, %d unmatched", n, a.UnmatchedItems())
	}
	a.ExpectEachOnce(t, 1, 400, "seq")
}

// An error ratio of 0.5 fails exactly every other request with the
// policy's status; the samples in them are faulted, not delivered.
func TestFaults(t *testing.T) {
	a := &testutil.Arrivals{}
	s := start(t, a)
	s.SetFaults(pipebench.FaultPolicy{ErrorRatio: 0.5, ErrorStatus: 503}, time.Now())
	codes := map[int]int{}
	for r := 0; r < 10; r++ {
		codes[post(t, s.Endpoint(), request(uint64(1+r*100), 100))]++
	}
	if codes[503] != 5 || codes[204] != 5 {
		t.Fatalf("statuses %v, want 5 x 503 and 5 x 204", codes)
	}
	if n, f := a.Count(); f != 5*105 || n != 500 {
		t.Fatalf("faulted %d samples, matched %d", f, n)
	}
}

// rate_limit counts the samples a request carries: against a bucket of
// 200 samples (refilled at 1 a second), a request of 105 passes and the
// next is refused; request_rate_limit counts requests.
func TestRateLimitsCountSamples(t *testing.T) {
	a := &testutil.Arrivals{}
	s := start(t, a)
	s.SetFaults(pipebench.FaultPolicy{RateLimit: 1, RateLimitBurst: pipebench.Duration(200 * time.Second)}, time.Now())
	first, second := post(t, s.Endpoint(), request(1, 100)), post(t, s.Endpoint(), request(101, 100))
	if n, f := a.Count(); first != http.StatusNoContent || second != http.StatusTooManyRequests || f != 105 || n != 100 {
		t.Errorf("requests of 105 samples against 200: %d then %d, %d faulted, %d matched", first, second, f, n)
	}
	s.SetFaults(pipebench.FaultPolicy{RequestRateLimit: 0.01, RateLimitBurst: pipebench.Duration(300 * time.Second)}, time.Now())
	codes := map[int]int{}
	for r := 0; r < 4; r++ {
		codes[post(t, s.Endpoint(), request(uint64(1000+r*100), 100))]++
	}
	if codes[http.StatusNoContent] != 3 || codes[http.StatusTooManyRequests] != 1 {
		t.Errorf("4 requests against a bucket of 3: %v", codes)
	}
}

// Bad input is refused with a status that names the problem; nothing
// panics, nothing is counted.
func TestRefusesBadRequests(t *testing.T) {
	s := start(t, &testutil.Arrivals{})
	for _, tc := range []struct {
		name string
		body []byte
		want int
	}{
		{"not snappy", []byte("hello, this is plain text"), 400},
		{"snappy of garbage protobuf", snappy.Encode(nil, []byte{0x0a, 0xff, 0xff, 0xff}), 400},
		{"too large decompressed", snappy.Encode(nil, make([]byte, 65<<20)), 400},
	} {
		if code := post(t, s.Endpoint(), tc.body); code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, code, tc.want)
		}
	}
	resp, err := http.Get(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	if st := s.Stats(); st.Samples != 0 || st.Bad != 4 {
		t.Errorf("stats after bad requests: %+v", st)
	}
	bad := Config{Listen: "nowhere", Path: "api", MaxBodyBytes: 0}
	err = bad.Validate()
	for _, key := range []string{"listen:", "path:", "max_body_bytes:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate: %v lacks %s", err, key)
		}
	}
}

// Debian's Prometheus in agent mode scrapes pipebench's producers (with
// churn) and remote-writes to the sink: once the producers stop, the
// samples the sink counts as served are exactly the samples the producers
// served, and the scraper's own series and staleness markers are counted
// apart.
func TestPrometheusAgentScrapesProducersIntoTheSink(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian: apt-get install prometheus); skipping the agent-mode test")
	}
	ctx := context.Background()
	a := &testutil.Arrivals{}
	s := start(t, a)
	pcfg := promtarget.DefaultConfig()
	pcfg.Producers, pcfg.Metrics, pcfg.Series = 3, 20, 5
	pcfg.ChurnFraction, pcfg.ChurnEvery = 0.2, 2
	pcfg.SeparatePorts = true
	tgt, err := promtarget.New(*pcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tgt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			tgt.Shutdown(ctx)
		}
	}()
	var targets []string
	for _, u := range tgt.Targets() {
		targets = append(targets, strconv.Quote(strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metrics")))
	}
	dir := t.TempDir()
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: producers
    static_configs:
      - targets: [%s]
remote_write:
  - url: %s
    queue_config:
      batch_send_deadline: 200ms
      min_backoff: 50ms
      max_backoff: 500ms
`, strings.Join(targets, ", "), s.Endpoint())
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	web := testutil.FreeAddr(t)
	cmd := exec.Command(bin, "--enable-feature=agent", "--config.file="+path, "--web.listen-address="+web,
		"--storage.agent.path="+filepath.Join(dir, "wal"), "--log.level=warn")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	// Let every producer be scraped at least 3 times (churn happens every
	// 2nd scrape), then stop serving.
	served := func() (scrapes []uint64, samples uint64) {
		for _, st := range tgt.Stats() {
			scrapes = append(scrapes, st.Scrapes)
			samples += st.Samples
		}
		return scrapes, samples
	}
	testutil.Eventually(t, 60*time.Second, func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited (%v):\n%s", err, log.String())
		default:
		}
		sc, _ := served()
		for _, n := range sc {
			if n < 3 {
				return false
			}
		}
		return true
	}, "every producer scraped 3 times")
	if err := tgt.Shutdown(ctx); err != nil {
		t.Logf("producers shutdown: %v", err)
	}
	stopped = true
	scrapes, want := served()
	testutil.Eventually(t, 60*time.Second, func() bool { return s.Stats().Other >= int(want) },
		"the sink to count the %d samples the producers served (has %d)", want, s.Stats().Other)
	// Wait for the staleness markers of the failed scrapes too, then check
	// nothing more arrived.
	testutil.Eventually(t, 30*time.Second, func() bool { return s.Stats().Stale > 0 }, "staleness markers after the producers stopped")
	st := s.Stats()
	if st.Other != int(want) {
		t.Fatalf("sink counted %d served samples, producers served %d (scrapes %v); stats %+v", st.Other, want, scrapes, st)
	}
	unmatched := a.UnmatchedItems()
	if unmatched != int(want) || st.Matched != 0 {
		t.Errorf("arrivals: %d unmatched, %d matched; want %d unmatched", unmatched, st.Matched, want)
	}
	if st.Report == 0 || st.Series == 0 {
		t.Errorf("no scrape-report samples or series counted: %+v", st)
	}
	t.Logf("producers served %d samples in %v scrapes; sink: %+v", want, scrapes, st)
}

func float64frombits(b uint64) float64 { return math.Float64frombits(b) }
