package otlpsink_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/kpi"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	"github.com/pipebench/pipebench/sut/otelcol"
)

// A real collector batches 10,000 spans/s into a few large requests a
// second; the OTLP sink limited to 3,000 items/s delivers 3,000 items/s of
// them, by its own count, and refuses the rest (a limit that counted
// requests let every one through: the collector sends about 5 a second).
func TestItemRateLimitHoldsACollectorsBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	ctx := context.Background()
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	sink := otlpsink.New(otlpsink.Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}, 1)
	testutil.Start(t, func(ctx context.Context) error { return sink.Start(ctx, arr) }, sink.Shutdown)
	f := otelcol.Factory()
	cfg := f.NewConfig().(*otelcol.Config)
	sut, err := f.New(cfg, pipebench.Env{Target: sink.GRPCEndpoint(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, sut.Start, sut.Shutdown)
	drv, err := otlpdriver.New(otlpdriver.Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(5 * time.Second), Connections: 2}, sut.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, drv.Start, drv.Shutdown)
	gen, err := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}

	const limit = 3000
	start := time.Now()
	sink.SetFaults(pipebench.FaultPolicy{RateLimit: limit}, start)
	// 10,000 spans/s for 4 s, in sends of 100 paced every 10 ms: 400
	// sends at most, and never past 8 s on a slow machine.
	const sends, per = 400, 100
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < sends && time.Since(start) < 8*time.Second; i++ {
		<-tick.C
		b := gen.Next(uint64(1+i*per), per, time.Now())
		if o := drv.Send(ctx, &b); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d to the collector: %+v", i, o)
		}
	}
	sentFor := time.Since(start)

	// The sink's own counters, on its /metrics; last is when its
	// delivered count last grew.
	metrics := func() map[string]float64 {
		return sinkCounters(t, "http://"+strings.TrimPrefix(sink.HTTPEndpoint(), "http://")+"/metrics")
	}
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	prev := -1.0
	stable := 0
	testutil.Eventually(t, 30*time.Second, func() bool {
		d := metrics()[`items{outcome="delivered"}`]
		if d != prev {
			prev, stable = d, 0
			last.Store(time.Now().UnixNano())
			return false
		}
		stable++
		return stable >= 10 // unchanged for 10 polls
	}, "the sink's delivered count never settled")
	m := metrics()
	delivered, faulted := m[`items{outcome="delivered"}`], m[`items{outcome="faulted"}`]
	requests := m[`requests{code="200"}`] + m[`requests{code="429"}`]
	window := time.Unix(0, last.Load()).Sub(start).Seconds()
	t.Logf("sent %d spans in %.1f s; the sink delivered %.0f and refused %.0f in %.0f requests (%.0f items each); delivered rate %.0f/s over %.1f s against a limit of %d/s",
		sends*per, sentFor.Seconds(), delivered, faulted, requests, (delivered+faulted)/requests, delivered/window, window, limit)

	// The collector sent large batches: a limit on requests would not
	// bite (fewer requests a second than a tenth of the limit).
	if requests/window > limit/10 {
		t.Errorf("%.0f requests/s: the collector did not batch", requests/window)
	}
	// At most the bucket (1 s of the limit) plus the limit over the
	// window, plus one request that found the bucket full; and not
	// starved either: at least half of that.
	most := limit*(window+1) + float64(cfg.Batch.SendBatchSize)
	if delivered > most || delivered < 0.5*limit*window {
		t.Errorf("delivered %.0f items in %.1f s, want %.0f..%.0f (%d/s)", delivered, window, 0.5*limit*window, most, limit)
	}
	if faulted == 0 {
		t.Error("the sink refused nothing")
	}
	// What the KPIs count (the Arrivals) is what the sink counts.
	if got := float64(arr.Delivered()); got != delivered {
		t.Errorf("arrivals %0.f, the sink's own counter %.0f", got, delivered)
	}
}

// sinkCounters reads the sink's pipebench_sink_*_total counters, by name
// without the prefix and suffix and their labels: items{outcome="delivered"}.
func sinkCounters(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, " ")
		rest, isSink := strings.CutPrefix(name, "pipebench_sink_")
		if !ok || !isSink || !strings.Contains(rest, "_total") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		out[strings.Replace(rest, "_total", "", 1)] = v
	}
	return out
}
