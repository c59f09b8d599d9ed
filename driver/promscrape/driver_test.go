package promscrapedriver

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

func scrape(t *testing.T, url string) map[uint64]int64 {
	t.Helper()
	out := map[uint64]int64{}
	if f := promtest.Families(t, url)[Metric]; f != nil {
		for _, m := range f.GetMetric() {
			out[uint64(m.GetGauge().GetValue())] = m.GetTimestampMs()
		}
	}
	return out
}

// Each item is served by exactly one scrape, with its send time as the
// sample's timestamp; once max_pending items wait, Send is refused.
func TestServesEachItemOnce(t *testing.T) {
	d, err := New(Config{MaxPending: 250}, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testutil.Start(t, d.Start, d.Shutdown)
	seen := map[uint64]int{}
	seq := uint64(1)
	for round := 0; round < 3; round++ {
		for i := 0; i < 2; i++ {
			b := pipebench.Batch{Seq: seq, Count: 100}
			seq += 100
			if o := d.Send(ctx, &b); o.Class != pipebench.ClassOK {
				t.Fatalf("send: %+v", o)
			}
		}
		b := pipebench.Batch{Seq: seq, Count: 100}
		if o := d.Send(ctx, &b); o.Class != pipebench.ClassRefused || o.Message == "" {
			t.Fatalf("send past max_pending: %+v", o)
		}
		now := time.Now().UnixMilli()
		for s, ts := range scrape(t, d.Endpoint()) {
			seen[s]++
			if ts > now || ts < now-60000 {
				t.Errorf("item %d has timestamp %d, now is %d", s, ts, now)
			}
		}
		if got := scrape(t, d.Endpoint()); len(got) != 0 {
			t.Fatalf("a second scrape served %d items again", len(got))
		}
	}
	if len(seen) != 600 {
		t.Fatalf("served %d distinct items, want 600", len(seen))
	}
	for s, n := range seen {
		if n != 1 {
			t.Fatalf("item %d served %d times", s, n)
		}
	}
	if d.Scrapes() != 6 {
		t.Errorf("scrapes %d, want 6", d.Scrapes())
	}
}

func TestBadConfig(t *testing.T) {
	err := (&Config{Listen: "nowhere", MaxPending: 0}).Validate()
	for _, key := range []string{"listen:", "max_pending:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate: %v lacks %s", err, key)
		}
	}
	if _, err := New(*DefaultConfig(), "not-an-address"); err == nil {
		t.Error("New accepted a listen address without a port")
	}
	busy, _ := New(*DefaultConfig(), "")
	busy.Start(context.Background())
	defer busy.Shutdown(context.Background())
	again, _ := New(*DefaultConfig(), strings.TrimSuffix(strings.TrimPrefix(busy.Endpoint(), "http://"), "/metrics"))
	if err := again.Start(context.Background()); err == nil {
		t.Error("Start on a port in use succeeded")
	}
}

// scraper is the receiver of the suite: a scraper of the address the
// driver is to listen on, every 20 ms until the test ends or it is closed,
// counting the items it collects. The driver is the server here: nothing
// answers its sends (NoAnswer).
func scraper(t *testing.T) drivertest.Receiver {
	addr := testutil.FreeAddr(t) // the driver listens here
	var items atomic.Int64
	client := &http.Client{Timeout: time.Second}
	closeFn := testutil.Every(20*time.Millisecond, func(time.Time) {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			return
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if f := fams[Metric]; err == nil && f != nil {
			items.Add(int64(len(f.GetMetric())))
		}
	})
	t.Cleanup(closeFn)
	return drivertest.Receiver{Target: addr, Received: items.Load, Set: func(drivertest.Answer) {}, Close: closeFn}
}

// The scrape target passes the suite in the mode of protocols without
// answers: whatever it was handed is collected by the next scrape.
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Factory: Factory(), Generator: pipebench.GeneratorFunc(func(seq uint64, n int, _ time.Time) pipebench.Batch {
			return pipebench.Batch{Seq: seq, Count: n}
		}),
		Count: 5, Receiver: scraper, NoAnswer: true,
		Invalid: func(cfg any) string { cfg.(*Config).MaxPending = 0; return "max_pending" },
	})
}
