package otelcol

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload/loglines"
	"github.com/pipebench/pipebench/producer/logfile"
	"github.com/pipebench/pipebench/producer/promtarget"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// The metric agent: two collector replicas with the prometheus receiver
// find pipebench's producers by service discovery, by pod and by service,
// split between them, and export through a gateway collector to the
// remote-write sink. Every tracer item arrives exactly once, and what the
// agents say they accepted is what the producers say they served (load
// samples and tracer items), plus the five series the receiver adds per
// scrape (up, scrape_duration_seconds, ...).
func TestMetricAgentScrapesProducers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three collectors")
	}
	ctx := context.Background()
	arr := &testutil.Arrivals{}
	sink := promrwsink.New(*promrwsink.DefaultConfig())
	testutil.Start(t, func(ctx context.Context) error { return sink.Start(ctx, arr) }, sink.Shutdown)
	cfg := defaultConfig()
	cfg.Receiver, cfg.Replicas, cfg.Gateway, cfg.GatewayExporter = ReceiverPrometheus, 2, true, ExporterRemoteWrite
	cfg.Prometheus.Interval = pipebench.Duration(300 * time.Millisecond)
	cfg.Prometheus.Refresh = pipebench.Duration(200 * time.Millisecond)
	cfg.Batch.Timeout = pipebench.Duration(50 * time.Millisecond)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sut := startCollector(t, cfg, pipebench.Env{Target: sink.Endpoint(), Dir: t.TempDir()})
	dcfg := promtarget.DefaultDriverConfig()
	dcfg.Producers, dcfg.Metrics, dcfg.Series = 4, 50, 10
	d, err := promtarget.DriverFactory().New(dcfg, pipebench.Env{Target: sut.Endpoint(), Targets: sut.(pipebench.MultiEndpoint).Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(ctx)
	drv := d.(*promtarget.Driver)
	const batches, per = 20, 10
	for i := 0; i < batches; i++ {
		if o := drv.Send(ctx, &pipebench.Batch{Seq: uint64(1 + i*per), Count: per}); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	arr.WaitDistinct(t, 30*time.Second, batches*per, "tracer items")
	arr.ExpectEachOnce(t, 1, batches*per, "item")

	in := sut.Instances()
	if len(in) != 2 {
		t.Fatalf("instances %+v: want the two agents (not the gateway)", in)
	}
	// Each agent scrapes its own producers, and each configuration (pods,
	// services) has some: the receivers' own counts say so.
	for _, i := range in {
		m := scrape(t, i.MetricsURL)
		for _, rcv := range []string{"prometheus/app-pods", "prometheus/app-services"} {
			if v := labelled(m, "otelcol_receiver_accepted_metric_points", `receiver="`+rcv+`"`); v == 0 {
				t.Errorf("%s: %s accepted nothing", i.Name, rcv)
			}
		}
	}
	// Accepted = served + 5 per scrape, read when no scrape is in between.
	var accepted, want float64
	ok := testutil.Poll(20*time.Second, func() bool {
		served := func() (v float64) {
			for _, s := range drv.Target().Stats() {
				v += float64(s.Samples + s.Items + 5*s.Scrapes)
			}
			return v
		}
		before := served()
		accepted = 0
		for _, i := range in {
			accepted += metricValue(scrape(t, i.MetricsURL), "otelcol_receiver_accepted_metric_points")
		}
		want = served()
		return before == want && accepted == want
	})
	if !ok {
		t.Fatalf("the agents accepted %v metric points; the producers served %v (samples, items and 5 per scrape)", accepted, want)
	}
	for _, s := range drv.Target().Stats() {
		if s.Scrapes == 0 {
			t.Errorf("producer %d was never scraped", s.Producer)
		}
	}
	t.Logf("agents accepted %v points = producers' %v", accepted, want)
}

// labelled sums the samples of name whose labels contain sel.
func labelled(exposition, name, sel string) float64 {
	sum := 0.0
	for _, l := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, sel) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// byteCounter is a reverse proxy in front of the sink's OTLP/HTTP
// listener that counts the uncompressed bodies of the requests the sink
// answered 2xx: an independent reading of what the agent delivered.
type byteCounter struct {
	proxy *httputil.ReverseProxy
	bytes atomic.Int64
}

func (b *byteCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	n := len(body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			plain, _ := io.ReadAll(zr)
			n = len(plain)
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &statusRecorder{ResponseWriter: w}
	b.proxy.ServeHTTP(rec, r)
	if rec.status/100 == 2 {
		b.bytes.Add(int64(n))
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

// The log agent tails the logfile driver's files (rotating) from its
// folder and delivers every line once; its input KBytes equal the files'
// sizes (within the bytes it reads besides them), its output KBytes equal
// what a proxy in front of the sink counted, and while the sink fails
// every export its filesystem buffer grows to what du says its storage
// takes on disk; it drains once the sink answers again.
func TestLogAgentTailsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	ctx := context.Background()
	arr, sink := startOTLPSink(t, otlpsink.Config{HTTPListen: "127.0.0.1:0"})
	up, _ := url.Parse(sink.Endpoints()["http"])
	if up == nil || up.Host == "" {
		up, _ = url.Parse(sink.Endpoint())
	}
	counter := &byteCounter{proxy: httputil.NewSingleHostReverseProxy(up)}
	proxy := httptest.NewServer(counter)
	defer proxy.Close()

	cfg := defaultConfig()
	cfg.Receiver, cfg.Exporter = ReceiverFilelog, "otlphttp"
	cfg.Filelog.PollInterval = pipebench.Duration(100 * time.Millisecond)
	cfg.Batch.Timeout = pipebench.Duration(50 * time.Millisecond)
	cfg.Batch.SendBatchSize = 200
	cfg.Retry.InitialInterval, cfg.Retry.MaxInterval = pipebench.Duration(200*time.Millisecond), pipebench.Duration(200*time.Millisecond)
	dir := t.TempDir()
	sut, err := Factory().New(cfg, pipebench.Env{Targets: map[string]string{"http": proxy.URL}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := sut.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer sut.Shutdown(ctx)
	defer func() {
		if t.Failed() {
			var counts []string
			for _, l := range strings.Split(scrape(t, sut.Instances()[0].MetricsURL), "\n") {
				if strings.HasPrefix(l, "otelcol_receiver_") || strings.HasPrefix(l, "otelcol_exporter_") || strings.HasPrefix(l, "pipebench_") {
					counts = append(counts, l)
				}
			}
			t.Logf("the agent's log:\n%s\nits metrics:\n%s\nits configuration:\n%s", childproc.Tail(filepath.Join(dir, "otelcol.log"), 40), strings.Join(counts, "\n"), sut.(*Collector).YAML())
		}
	}()
	col := sut.(*Collector)
	lcfg := logfile.DefaultConfig()
	lcfg.Producers, lcfg.RotateBytes, lcfg.Keep = 4, 64<<10, 50
	drv, err := logfile.Factory().New(lcfg, pipebench.Env{Target: sut.Endpoint(), Targets: col.Endpoints(), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer drv.Shutdown(ctx)
	if got := drv.(*logfile.Driver).Dir(); got != col.LogDir() {
		t.Fatalf("the driver writes to %s, the agent tails %s", got, col.LogDir())
	}
	gcfg := loglines.DefaultConfig()
	gcfg.Format = "apache_combined"
	gen, err := loglines.Factory().New(gcfg, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(1)
	write := func(batches, per int) {
		for i := 0; i < batches; i++ {
			b := gen.Next(seq, per, time.Now())
			seq += uint64(per)
			if o := drv.Send(ctx, &b); o.Class != pipebench.ClassOK {
				t.Fatalf("write: %+v", o)
			}
		}
	}
	agentMetrics := func() string { return scrape(t, sut.Instances()[0].MetricsURL) }
	delivered := func(n int) {
		t.Helper()
		if !testutil.Poll(30*time.Second, func() bool { got, _ := arr.Count(); return got == n }) {
			got, _ := arr.Count()
			t.Fatalf("the sink got %d of %d lines (%d without pb.seq)", got, n, arr.UnmatchedItems())
		}
	}

	// Lines, rotated files and all, each delivered once. The agent follows
	// a file renamed since its last poll to its end, so each chunk waits
	// for the agent (a file rotates at most once between two polls).
	start := time.Now()
	for chunk := 0; chunk < 20; chunk++ {
		write(10, 50)
		delivered(int(seq - 1))
	}
	elapsed := time.Since(start)
	arr.ExpectEachOnce(t, 1, seq-1, "line")
	var rotations uint64
	for _, s := range drv.(*logfile.Driver).Stats() {
		rotations += s.Rotations
	}
	if rotations == 0 {
		t.Fatal("no file rotated: the test does not exercise rotation")
	}
	// Output: what the proxy counted.
	var out float64
	if !testutil.Poll(10*time.Second, func() bool {
		out = metricValue(agentMetrics(), MetricOutputKBytes) * 1024
		return out > 0 && int64(out+0.5) == counter.bytes.Load()
	}) {
		t.Errorf("output %.0f bytes, the proxy counted %d", out, counter.bytes.Load())
	}
	// Input: what the files hold, and besides it at most the receiver's
	// fingerprint reads (the first KiB of each of the 4 files every poll)
	// and 64 KiB of scrape requests and /proc files.
	fileBytes := filesSize(t, col.LogDir())
	in := metricValue(agentMetrics(), MetricInputKBytes) * 1024
	polls := float64(time.Since(start)+time.Second) / float64(cfg.Filelog.PollInterval.D())
	if extra := in - float64(fileBytes); extra < 0 || extra > 4*1024*polls+64<<10 {
		t.Errorf("input %.0f bytes; the files hold %d: %.0f more, want 0 to %.0f", in, fileBytes, extra, 4*1024*polls+64<<10)
	}
	t.Logf("files %d bytes (%d rotations) written and delivered in %s; input %.0f bytes (%.1f%% more), output %.0f bytes", fileBytes, rotations, elapsed.Round(time.Millisecond), in, 100*(in/float64(fileBytes)-1), out)

	// Backpressure: every export fails, the queue on disk grows.
	sink.SetFaults(pipebench.FaultPolicy{ErrorRatio: 1, ErrorStatus: 503}, time.Now())
	before := metricValue(agentMetrics(), MetricBufferKBytes)
	for chunk := 0; chunk < 20; chunk++ {
		write(10, 50)
		n := float64(seq - 1)
		if !testutil.Poll(30*time.Second, func() bool {
			return metricValue(agentMetrics(), "otelcol_receiver_accepted_log_records") == n
		}) {
			t.Fatalf("the agent read %v of %v lines", metricValue(agentMetrics(), "otelcol_receiver_accepted_log_records"), n)
		}
	}
	storage := col.StorageDir(0)
	var kpi, du float64
	ok := testutil.Poll(30*time.Second, func() bool {
		m := agentMetrics()
		if queueSize(m) == 0 {
			return false
		}
		kpi, du = metricValue(m, MetricBufferKBytes), duKBytes(t, storage)
		return kpi > before+100 && kpi == metricValue(agentMetrics(), MetricBufferKBytes) && kpi == du
	})
	if !ok {
		t.Fatalf("filesystem buffer %v KB (before %v), du says %v KB: want it grown past 100 KB and equal to du", kpi, before, du)
	}
	t.Logf("buffer %v KB before the faults, %v KB with the queue backed up (du %v KB)", before, kpi, du)
	sink.SetFaults(pipebench.FaultPolicy{}, time.Now())
	delivered(int(seq - 1))
}

// filesSize adds up the sizes of every file in dir (current and rotated).
func filesSize(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

// duKBytes is what du says dir takes on disk, in KBytes of 1,024.
func duKBytes(t *testing.T, dir string) float64 {
	t.Helper()
	out, err := exec.Command("du", "-s", "-B1", dir).Output()
	if err != nil {
		t.Fatalf("du %s: %v", dir, err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(out))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v / 1024
}
