package relay

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// downstream is a real HTTP server recording what the relay forwards.
type downstream struct {
	mu     sync.Mutex
	seqs   map[string]int
	fail   atomic.Bool
	url    string
	closer func()
}

func newDownstream(t *testing.T) *downstream {
	d := &downstream{seqs: map[string]int{}}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.fail.Load() {
			w.WriteHeader(503)
			return
		}
		d.mu.Lock()
		d.seqs[r.Header.Get("Pipebench-Seq")+"/"+r.Header.Get("ce-id")]++
		d.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	d.url = "http://" + ln.Addr().String() + "/"
	return d
}

func (d *downstream) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.seqs {
		n += c
	}
	return n
}

func start(t *testing.T, cfg Config, target string) *Relay {
	r := New(cfg, target)
	// Shutdown waits for the queue to drain: bounded, so that a downstream
	// that stopped answering cannot hold the test.
	testutil.Start(t, r.Start, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return r.Shutdown(ctx)
	})
	return r
}

func post(t *testing.T, url string, seq int) int {
	req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(`{}`)))
	req.Header.Set("Pipebench-Seq", strconv.Itoa(seq))
	req.Header.Set("Pipebench-Count", "1")
	req.Header.Set("ce-id", "x"+strconv.Itoa(seq))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func metric(t *testing.T, r *Relay, name string) float64 {
	m := promtest.Families(t, r.MetricsURL())[name].GetMetric()[0]
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, cond, "condition not reached")
}

func TestForwardsEachOnceWithHeaders(t *testing.T) {
	d := newDownstream(t)
	cfg := *defaultConfig()
	r := start(t, cfg, d.url)
	for i := 1; i <= 100; i++ {
		if code := post(t, r.Endpoint(), i); code != 202 {
			t.Fatalf("code %d", code)
		}
	}
	waitFor(t, func() bool { return d.count() == 100 })
	d.mu.Lock()
	for k, c := range d.seqs {
		if c != 1 || k == "/" {
			t.Errorf("%q forwarded %d times", k, c)
		}
	}
	d.mu.Unlock()
	// The downstream counts a request before the relay has read the answer
	// and counted it as sent, so the metric may trail the count briefly.
	waitFor(t, func() bool { return metric(t, r, "relay_exporter_sent_items") == 100 })
	time.Sleep(50 * time.Millisecond)
	if got := metric(t, r, "relay_exporter_sent_items"); got != 100 {
		t.Errorf("sent metric %v after settling, want exactly 100", got)
	}
}

func TestRetriesThroughOutageAndQueueRises(t *testing.T) {
	d := newDownstream(t)
	d.fail.Store(true)
	cfg := *defaultConfig()
	cfg.Workers = 2
	cfg.RetryBackoffMax = 100_000_000 // 100ms
	r := start(t, cfg, d.url)
	for i := 1; i <= 50; i++ {
		post(t, r.Endpoint(), i)
	}
	waitFor(t, func() bool { return metric(t, r, "relay_exporter_queue_size") > 0 })
	// The failure is counted when the send's answer comes back, which may
	// be after the item was queued again: wait for it, not read it once.
	testutil.Eventually(t, 10*time.Second, func() bool { return metric(t, r, "relay_exporter_send_failed_items") > 0 },
		"no failed sends counted during the outage")
	d.fail.Store(false)
	waitFor(t, func() bool { return d.count() == 50 })
	waitFor(t, func() bool { return metric(t, r, "relay_exporter_queue_size") == 0 })
	if metric(t, r, "relay_exporter_dropped_items") != 0 {
		t.Error("dropped items with unlimited retries")
	}
}

func TestQueueFullRefuses(t *testing.T) {
	d := newDownstream(t)
	d.fail.Store(true)
	cfg := *defaultConfig()
	cfg.QueueSize, cfg.Workers = 5, 1
	r := start(t, cfg, d.url)
	codes := map[int]int{}
	for i := 0; i < 20; i++ {
		codes[post(t, r.Endpoint(), i)]++
	}
	if codes[503] < 10 {
		t.Errorf("codes %v: a full queue must refuse", codes)
	}
	if got := metric(t, r, "relay_receiver_refused_items"); got != float64(codes[503]) {
		t.Errorf("refused metric %v, answered %d", got, codes[503])
	}
}
