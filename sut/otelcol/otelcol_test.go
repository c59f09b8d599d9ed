package otelcol

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	procobs "github.com/pipebench/pipebench/observer/process"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
)

// startOTLPSink starts an OTLP sink with cfg, recording in the Arrivals
// returned, and shuts it down when the test ends.
func startOTLPSink(t *testing.T, cfg otlpsink.Config) (*testutil.Arrivals, *otlpsink.Sink) {
	t.Helper()
	arr := &testutil.Arrivals{}
	sink := otlpsink.New(cfg, 1)
	testutil.Start(t, func(ctx context.Context) error { return sink.Start(ctx, arr) }, sink.Shutdown)
	return arr, sink
}

// startCollector makes the collector of cfg through the factory, starts
// it, and shuts it down when the test ends.
func startCollector(t *testing.T, cfg *Config, env pipebench.Env) pipebench.SUT {
	t.Helper()
	sut, err := Factory().New(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, sut.Start, sut.Shutdown)
	return sut
}

// sendOverBothProtocols sends batches of perBatch spans through the OTLP
// driver over gRPC, then as many over HTTP, aimed at the collector's
// endpoints (with connections each; 0 keeps the default), numbered from 1,
// and returns the number of spans sent.
func sendOverBothProtocols(t *testing.T, sut pipebench.SUT, perBatch, batches, connections int) int {
	t.Helper()
	ctx := context.Background()
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	seq := uint64(1)
	for _, protocol := range []string{"grpc", "http"} {
		dcfg := otlpdriver.DefaultConfig()
		dcfg.Protocol = protocol
		if connections > 0 {
			dcfg.Connections = connections
		}
		drv, err := otlpdriver.Factory().New(dcfg, pipebench.Env{Target: sut.Endpoint(), Targets: sut.(pipebench.MultiEndpoint).Endpoints()})
		if err != nil {
			t.Fatal(err)
		}
		if err := drv.Start(ctx); err != nil {
			t.Fatalf("%s: %v", protocol, err)
		}
		for i := 0; i < batches; i++ {
			b := gen.Next(seq, perBatch, time.Now())
			seq += uint64(perBatch)
			if o := drv.Send(ctx, &b); o.Class != pipebench.ClassOK {
				t.Fatalf("%s send %d: %+v", protocol, i, o)
			}
		}
		drv.Shutdown(ctx)
	}
	return int(seq - 1)
}

// Spans sent to the real collector arrive at the real OTLP sink, every one,
// and the collector's own metrics count them; with the sink failing, the
// exporter queue fills.
func TestCollectorEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	ctx := context.Background()
	arr, sink := startOTLPSink(t, otlpsink.Config{GRPCListen: "127.0.0.1:0"})
	cfg := defaultConfig()
	cfg.Batch.Timeout = pipebench.Duration(50 * time.Millisecond)
	cfg.Env = map[string]string{"GOMEMLIMIT": "300MiB", "GOGC": "50"}
	sut := startCollector(t, cfg, pipebench.Env{Target: sink.Endpoint(), Dir: t.TempDir()})
	if in := sut.Instances(); len(in) != 1 || in[0].PID == 0 || in[0].PID == os.Getpid() {
		t.Fatalf("instances %+v: the collector must be its own process", in)
	}
	// sut.env reaches the collector's process, as /proc says.
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", sut.Instances()[0].PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"GOMEMLIMIT=300MiB", "GOGC=50"} {
		if !strings.Contains("\x00"+string(environ)+"\x00", "\x00"+kv+"\x00") {
			t.Errorf("the collector's environment lacks %s", kv)
		}
	}
	drv, err := otlpdriver.New(otlpdriver.Config{Protocol: "grpc", Compression: "none", Timeout: pipebench.Duration(5 * time.Second), Connections: 1}, sut.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Shutdown(ctx)
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	for i := 0; i < 20; i++ {
		b := gen.Next(uint64(1+i*100), 100, time.Now())
		if o := drv.Send(ctx, &b); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	arr.WaitDistinct(t, 10*time.Second, 2000, "spans")
	metrics := scrape(t, sut.Instances()[0].MetricsURL)
	for _, want := range []string{"otelcol_receiver_accepted_spans", "otelcol_exporter_sent_spans", "otelcol_exporter_queue_size", "otelcol_process_memory_rss"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("collector metrics lack %s", want)
		}
	}
	// The backend fails every request: the exporter queue must fill.
	sink.SetFaults(pipebench.FaultPolicy{ErrorRatio: 1, ErrorStatus: 503}, time.Now())
	for i := 0; i < 50; i++ {
		b := gen.Next(uint64(100000+i*100), 100, time.Now())
		drv.Send(ctx, &b)
		time.Sleep(20 * time.Millisecond)
	}
	if !testutil.Poll(10*time.Second, func() bool { _, f := arr.Count(); return f > 0 }) {
		t.Fatal("the sink never faulted a request")
	}
	if !testutil.Poll(10*time.Second, func() bool {
		return strings.Contains(scrape(t, sut.Instances()[0].MetricsURL), "otelcol_exporter_queue_size{") && queueSize(scrape(t, sut.Instances()[0].MetricsURL)) > 0
	}) {
		t.Error("the exporter queue did not fill while the backend failed")
	}
}

func scrape(t *testing.T, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func queueSize(metrics string) float64 {
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "otelcol_exporter_queue_size{") {
			f := strings.Fields(l)
			var v float64
			if _, err := fmtSscan(f[len(f)-1], &v); err == nil {
				return v
			}
		}
	}
	return 0
}

func TestConfigValidateAndYAML(t *testing.T) {
	c := &Config{Receiver: "kafka", Pipelines: 0, Signal: "spans", Exporter: "kafka", ConfigFile: "/nonexistent.yaml",
		Env: map[string]string{"1X": "a", "PIPEBENCH_SINK": "b"}, Prometheus: Scrape{Jobs: []string{"nodes"}}}
	err := c.Validate()
	for _, want := range []string{"receiver:", "pipelines:", "signal:", "exporter:", "queue_size:", "config_file:", `env: "1X"`, "env: PIPEBENCH_SINK", "prometheus.scrape_interval:", "prometheus.jobs:", "filelog.poll_interval:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %s", err, want)
		}
	}
	col := &Collector{cfg: *defaultConfig(), sink: "127.0.0.1:9"}
	col.cfg.Pipelines = 3
	y := col.YAML()
	for _, want := range []string{"otlp/p3:", "traces/p3:", "exporters: [otlp/p2]", "x-pipebench-pipeline: p2", "sending_queue:", "retry_on_failure:", "prometheus:"} {
		if !strings.Contains(y, want) {
			t.Errorf("yaml lacks %s:\n%s", want, y)
		}
	}
	// An agent through a gateway: the gateway exports remote write; a log
	// agent keeps its offsets and its queue on disk.
	for _, tc := range []struct {
		cfg  func(*Config)
		want []string
		err  string
	}{
		{func(c *Config) {
			c.Receiver, c.Gateway, c.GatewayExporter = ReceiverPrometheus, true, ExporterRemoteWrite
		}, []string{"prometheus/app-pods:", "role=pod", "prometheus/app-services:", "role=service", "metrics/p1:"}, ""},
		{func(c *Config) { c.Receiver, c.Exporter = ReceiverFilelog, "otlphttp" }, []string{"filelog:", "storage: file_storage", "file_storage:", "extensions: [file_storage]", `field: attributes["pb.seq"]`, "logs/p1:"}, ""},
		{func(c *Config) { c.Receiver, c.Replicas = ReceiverFilelog, 2 }, nil, "replicas:"},
		{func(c *Config) { c.Gateway = true }, nil, "gateway:"},
		{func(c *Config) { c.Exporter = ExporterRemoteWrite }, nil, "exporter: prometheusremotewrite exports metrics"},
		{func(c *Config) { c.GatewayExporter = "otlp" }, nil, "gateway_exporter: set gateway"},
		{func(c *Config) { c.GoMemLimit, c.Env = "1GiB", map[string]string{"GOMEMLIMIT": "2GiB"} }, nil, "gomemlimit:"},
	} {
		cfg := *defaultConfig()
		tc.cfg(&cfg)
		err := cfg.Validate()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: %v, want %s", cfg, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		y := newCollector(cfg, "http://127.0.0.1:9/api/v1/write", t.TempDir(), "").YAML()
		for _, want := range tc.want {
			if !strings.Contains(y, want) {
				t.Errorf("yaml lacks %s:\n%s", want, y)
			}
		}
	}
	// One pipeline: no header, so the sink's single-pipeline path is
	// unchanged.
	col.cfg.Pipelines = 1
	if y := col.YAML(); strings.Contains(y, "x-pipebench-pipeline") || !strings.Contains(y, "otlp/p1:") {
		t.Errorf("one pipeline:\n%s", y)
	}
}

func fmtSscan(s string, v *float64) (int, error) { return fmt.Sscan(s, v) }

// With exporter: otlphttp the collector exports to the sink's OTLP/HTTP
// listener: every span arrives exactly once, whether the driver sent it
// over gRPC or over HTTP (aimed through the collector's Endpoints).
func TestCollectorOTLPHTTPExporterDelivers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	arr, sink := startOTLPSink(t, otlpsink.Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"})
	cfg := defaultConfig()
	cfg.Exporter = "otlphttp"
	cfg.Batch.Timeout = pipebench.Duration(50 * time.Millisecond)
	// The runner passes the sink's Endpoint (its gRPC listener) as Target
	// and both listeners as Targets: otlphttp must take the HTTP one.
	sut := startCollector(t, cfg, pipebench.Env{Target: sink.Endpoint(), Targets: sink.Endpoints(), Dir: t.TempDir()})
	want := sendOverBothProtocols(t, sut, 100, 50, 0)
	arr.WaitDistinct(t, 20*time.Second, want, "spans")
	arr.ExpectEachOnce(t, 1, uint64(want), "span")
}

// The exporter's endpoint follows its protocol; a sink without a listener
// of that protocol is a usage error, not a run that loses everything.
func TestSinkEndpointFollowsTheExporter(t *testing.T) {
	both := map[string]string{"grpc": "127.0.0.1:4317", "http": "http://127.0.0.1:4318"}
	for _, tc := range []struct {
		exporter string
		env      pipebench.Env
		want     string
	}{
		{"otlp", pipebench.Env{Target: "127.0.0.1:4317", Targets: both}, "127.0.0.1:4317"},
		{"otlphttp", pipebench.Env{Target: "127.0.0.1:4317", Targets: both}, "http://127.0.0.1:4318"},
		{"otlp", pipebench.Env{Target: "127.0.0.1:5"}, "127.0.0.1:5"},
		{"otlphttp", pipebench.Env{Target: "http://127.0.0.1:6"}, "http://127.0.0.1:6"},
		{"otlphttp", pipebench.Env{Target: "127.0.0.1:4317"}, ""},
		{"otlp", pipebench.Env{Target: "http://127.0.0.1:4318"}, ""},
		{"otlp", pipebench.Env{}, ""},
	} {
		got, err := sinkEndpoint(tc.exporter, tc.env)
		if tc.want == "" {
			if err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
				t.Errorf("%s with %+v: %q, %v; want a usage error", tc.exporter, tc.env, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s with %+v: %q, %v; want %q", tc.exporter, tc.env, got, err, tc.want)
		}
	}
}

// Two replicas: two collector processes, each with its own PID, memory and
// metrics; the driver's connections spread over both; every span reaches
// the sink exactly once, and the replicas' accepted spans add up to what
// was sent.
func TestTwoReplicasShareTheLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two collectors")
	}
	ctx := context.Background()
	arr, sink := startOTLPSink(t, otlpsink.Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"})
	cfg := defaultConfig()
	cfg.Replicas = 2
	cfg.Batch.Timeout = pipebench.Duration(50 * time.Millisecond)
	sut := startCollector(t, cfg, pipebench.Env{Target: sink.Endpoint(), Targets: sink.Endpoints(), Dir: t.TempDir()})
	in := sut.Instances()
	if len(in) != 2 || in[0].PID == 0 || in[1].PID == 0 || in[0].PID == in[1].PID || in[0].MetricsURL == in[1].MetricsURL {
		t.Fatalf("instances %+v: want two processes with their own metrics", in)
	}
	if eps := strings.Split(sut.Endpoint(), ","); len(eps) != 2 || eps[0] == eps[1] {
		t.Fatalf("endpoint %q: want both replicas' receivers", sut.Endpoint())
	}
	want := sendOverBothProtocols(t, sut, 50, 40, 2)
	arr.WaitDistinct(t, 20*time.Second, want, "spans")
	arr.ExpectEachOnce(t, 1, uint64(want), "span")
	// Each replica accepted a share, and the shares add up.
	var accepted []float64
	if !testutil.Poll(10*time.Second, func() bool {
		accepted = accepted[:0]
		sum := 0.0
		for _, i := range in {
			v := metricValue(scrape(t, i.MetricsURL), "otelcol_receiver_accepted_spans")
			accepted = append(accepted, v)
			sum += v
		}
		return sum == float64(want)
	}) {
		t.Fatalf("replicas accepted %v spans, want %d in all", accepted, want)
	}
	for i, v := range accepted {
		if v == 0 {
			t.Errorf("collector-%d accepted nothing: the driver did not spread its connections (%v)", i, accepted)
		}
	}
	// Memory and CPU are per instance: two separate processes, each with
	// its own resident memory, adding up to the pair's.
	obs, err := procobs.New(procobs.Config{}, in)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := obs.Observe(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mem := map[string]float64{}
	for _, p := range pts {
		if p.Name == "memory_rss_bytes" {
			mem[p.Labels["instance"]] = p.Value
		}
	}
	if len(mem) != 2 || mem["collector-0"] <= 0 || mem["collector-1"] <= 0 {
		t.Fatalf("memory per instance %v: want collector-0 and collector-1", mem)
	}
	t.Logf("accepted spans per replica %v; resident memory per replica %.0f, %.0f MB (together %.0f MB)",
		accepted, mem["collector-0"]/1e6, mem["collector-1"]/1e6, (mem["collector-0"]+mem["collector-1"])/1e6)
}

// metricValue sums the samples of one metric in a Prometheus exposition.
func metricValue(exposition, name string) float64 {
	sum := 0.0
	for _, l := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			f := strings.Fields(l)
			var v float64
			if _, err := fmt.Sscan(f[len(f)-1], &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func TestReplicasValidate(t *testing.T) {
	c := defaultConfig()
	c.Replicas = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "replicas:") {
		t.Errorf("replicas 0: %v", err)
	}
	c.Replicas = 99
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "replicas:") {
		t.Errorf("replicas 99: %v", err)
	}
}
