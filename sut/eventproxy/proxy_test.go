package eventproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/sut/plumbing/natscluster"
)

func TestMain(m *testing.M) {
	natscluster.MaybeRunChild() // the test binary is also the nats-server nodes
	MaybeRunChild()             // and the proxy
	os.Exit(m.Run())
}

func start(t *testing.T, cfg *Config, target string) *Proxy {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := New(*cfg, pipebench.Env{Dir: t.TempDir(), Target: target})
	testutil.Start(t, p.Start, p.Shutdown)
	return p
}

// post sends one request and returns its status.
func post(t *testing.T, url, ct string, hdr map[string]string, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// scrape returns the proxy's metrics by name (summed over labels) and the
// refused counter by reason.
func scrape(t *testing.T, p *Proxy) (map[string]float64, map[string]float64) {
	t.Helper()
	fams := promtest.Families(t, p.Instances()[0].MetricsURL)
	sum, refused := map[string]float64{}, map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			switch {
			case m.Counter != nil:
				sum[name] += m.Counter.GetValue()
				for _, l := range m.Label {
					if l.GetName() == "reason" {
						refused[l.GetValue()] += m.Counter.GetValue()
					}
				}
			case m.Gauge != nil:
				sum[name] += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum[name] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum, refused
}

func binaryCE(seq int) map[string]string {
	s := strconv.Itoa(seq)
	return map[string]string{"ce-specversion": "1.0", "ce-id": s, "ce-type": "com.example.order.created", "ce-source": "/test",
		"ce-pbseq": s, "ce-pbsent": strconv.FormatInt(time.Now().UnixNano(), 10), "Pipebench-Count": "1"}
}

func structuredCE(seq int) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":"%d","type":"com.example.order.created","source":"/test","pbseq":"%d","pbsent":"%d","data":{"n":%d}}`,
		seq, seq, time.Now().UnixNano(), seq)
}

// Every event of every content mode is published after its ack: what the
// client got 2xx for, the proxy counted published, the stream holds, and a
// durable consumer reads, with the headers the sink matches on.
func TestCountsReconcile(t *testing.T) {
	p := start(t, DefaultConfig(), "")
	if !strings.HasPrefix(p.Endpoint(), "http://127.0.0.1:") {
		t.Fatalf("endpoint %q", p.Endpoint())
	}
	ok, events, requests := 0, 0, 0
	for i := 0; i < 60; i++ {
		seq := i * 10
		codes := []int{
			post(t, p.Endpoint(), "application/json", binaryCE(seq), `{"n":1}`),
			post(t, p.Endpoint(), "application/cloudevents+json", nil, structuredCE(seq+1)),
			post(t, p.Endpoint(), "application/cloudevents-batch+json", map[string]string{"Pipebench-Count": "3"},
				"["+structuredCE(seq+2)+","+structuredCE(seq+3)+","+structuredCE(seq+4)+"]"),
			post(t, p.Endpoint(), "application/json", map[string]string{"Pipebench-Seq": strconv.Itoa(seq + 5), "Pipebench-Sent": "1", "Pipebench-Count": "1"}, `{"k":"v"}`),
		}
		for j, c := range codes {
			if c != http.StatusNoContent {
				t.Fatalf("request %d.%d: HTTP %d", i, j, c)
			}
			ok++
		}
		events += 6
		requests += 4
	}
	m, refused := scrape(t, p)
	if m[MetricReceived] != float64(events) || m[MetricPublished] != float64(events) || m[MetricLatency] != float64(requests) || m[MetricInFlight] != 0 {
		t.Errorf("metrics %v, want %d events accepted and published in %d publishes", m, events, requests)
	}
	for r, n := range refused {
		if n != 0 {
			t.Errorf("%v refused for %s", n, r)
		}
	}
	if got := natstest.StreamInfo(t, p.NATSURL(), p.cfg.Stream.Name).State.Msgs; got != uint64(requests) {
		t.Errorf("stream holds %d messages, want %d", got, requests)
	}

	_, j := natstest.JetStream(t, p.NATSURL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := j.CreateOrUpdateConsumer(ctx, "EVENTS", js.ConsumerConfig{Durable: "test", AckPolicy: js.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	got, binary := 0, 0
	for got < requests {
		batch, err := cons.Fetch(requests-got, js.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			if msg.Subject() != "events.com.example.order.created" && msg.Subject() != "events.event" {
				t.Errorf("subject %q", msg.Subject())
			}
			if msg.Headers().Get("Ce-Pbseq") != "" {
				binary++
			}
			msg.Ack()
		}
		if n == 0 {
			break
		}
		got += n
	}
	if got != requests || binary != 60 {
		t.Errorf("consumer read %d messages (%d binary with ce-pbseq), want %d (60)", got, binary, requests)
	}
}

// A stream with discard new and a message limit refuses once full: 507,
// counted as stream_full, and exactly the limit is published.
func TestFullStreamAnswers507(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Stream.MaxMsgs, cfg.Stream.Discard, cfg.Stream.Storage = 50, "new", "memory"
	p := start(t, cfg, "")
	codes := map[int]int{}
	for i := 0; i < 80; i++ {
		codes[post(t, p.Endpoint(), "application/cloudevents+json", nil, structuredCE(i))]++
	}
	if codes[http.StatusNoContent] != 50 || codes[http.StatusInsufficientStorage] != 30 {
		t.Fatalf("statuses %v, want 50×204 and 30×507", codes)
	}
	m, refused := scrape(t, p)
	if m[MetricReceived] != 80 || m[MetricPublished] != 50 || refused["stream_full"] != 30 {
		t.Errorf("metrics %v refused %v", m, refused)
	}
	if got := natstest.StreamInfo(t, p.NATSURL(), p.cfg.Stream.Name).State.Msgs; got != 50 {
		t.Errorf("stream holds %d", got)
	}
}

// With nats gone the proxy still answers, 503, counted as nats_unavailable.
func TestNATSDownAnswers503(t *testing.T) {
	p := start(t, DefaultConfig(), "")
	if c := post(t, p.Endpoint(), "application/cloudevents+json", nil, structuredCE(1)); c != http.StatusNoContent {
		t.Fatalf("HTTP %d before the outage", c)
	}
	p.StopNATS()
	testutil.Eventually(t, 10*time.Second, func() bool { return !p.h.nc.IsConnected() }, "the publisher still looks connected")
	for i := 0; i < 5; i++ {
		if c := post(t, p.Endpoint(), "application/cloudevents+json", nil, structuredCE(2+i)); c != http.StatusServiceUnavailable {
			t.Fatalf("HTTP %d with nats down, want 503", c)
		}
	}
	if _, refused := scrape(t, p); refused["nats_unavailable"] != 5 {
		t.Errorf("refused %v", refused)
	}
}

func TestBadRequests(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBodyBytes = 1000
	p := start(t, cfg, "")
	cases := []struct {
		ct   string
		hdr  map[string]string
		body string
		want int
	}{
		{"application/json", nil, `{not json`, 400},
		{"application/json", map[string]string{"ce-specversion": "1.0", "ce-type": "x"}, `{}`, 400},
		{"application/cloudevents+json", nil, `{"specversion":"1.0","id":"1"}`, 400},
		{"application/cloudevents-batch+json", nil, `[]`, 400},
		{"application/json", nil, `"` + strings.Repeat("x", 2000) + `"`, 413},
	}
	for i, c := range cases {
		if got := post(t, p.Endpoint(), c.ct, c.hdr, c.body); got != c.want {
			t.Errorf("case %d: HTTP %d, want %d", i, got, c.want)
		}
	}
	_, refused := scrape(t, p)
	if refused["bad_request"] != 4 || refused["too_large"] != 1 {
		t.Errorf("refused %v", refused)
	}
	if got := natstest.StreamInfo(t, p.NATSURL(), p.cfg.Stream.Name).State.Msgs; got != 0 {
		t.Errorf("stream holds %d after only bad requests", got)
	}
}

// The instance URL serves the proxy's metrics and the server's monitoring.
func TestInstanceServesMetricsAndMonitoring(t *testing.T) {
	p := start(t, DefaultConfig(), "")
	in := p.Instances()
	if len(in) != 1 || !strings.HasPrefix(in[0].MetricsURL, "http://127.0.0.1:") {
		t.Fatalf("instances %+v", in)
	}
	resp, err := http.Get(in[0].MetricsURL + "/jsz?streams=true")
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Streams int `json:"streams"`
	}
	err = json.NewDecoder(resp.Body).Decode(&j)
	resp.Body.Close()
	if err != nil || j.Streams != 1 {
		t.Errorf("/jsz: %v, %d streams", err, j.Streams)
	}
	if m, _ := scrape(t, p); len(m) == 0 {
		t.Error("no metrics")
	}
}

// The SUT tells a waiting nats sink where to consume, and nothing else.
func TestTellsOnlyANATSSink(t *testing.T) {
	natstest.TellsOnlyANATSSink(t, "EVENTS", func(target string) { start(t, DefaultConfig(), target) })
}

func TestConfigErrors(t *testing.T) {
	c := Config{Prefix: "a.>", Stream: StreamConfig{Name: "a.b", MaxBytes: -1, MaxMsgs: -1, Discard: "both", Storage: "tape", Retention: "never"}, MaxStore: -1}
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"prefix:", "stream.name:", "stream.max_bytes:", "stream.max_msgs:", "stream.discard:", "stream.storage:", "stream.retention:", "max_body_bytes:", "publish_timeout:", "max_store:", "start_timeout:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no %s line in:\n%v", key, err)
		}
	}
}

func TestSubject(t *testing.T) {
	p := &handler{cfg: *DefaultConfig()}
	for in, want := range map[string]string{"com.example.x": "events.com.example.x", "a b*c>": "events.a_b_c_", "..": "events._", "": "events.event"} {
		if got := p.subject(in); got != want {
			t.Errorf("subject(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkPublish posts binary-mode CloudEvents from 4×GOMAXPROCS goroutines through
// the proxy into a memory stream; each answer waits for the JetStream ack.
func BenchmarkPublish(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Stream.Storage = "memory"
	p := New(*cfg, pipebench.Env{Dir: b.TempDir()})
	if err := p.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := strings.Repeat("x", 200)
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		seq := 0
		for pb.Next() {
			seq++
			req, _ := http.NewRequest(http.MethodPost, p.Endpoint(), strings.NewReader(`{"d":"`+body+`"}`))
			for k, v := range binaryCE(seq) {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				b.Errorf("HTTP %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// nodeStorage reads a node's JetStream storage used and its limit from its
// /jsz.
func nodeStorage(t *testing.T, base string) (used, limit float64) {
	t.Helper()
	resp, err := http.Get(base + "/jsz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j struct {
		Storage float64 `json:"storage"`
		Config  struct {
			MaxStorage float64 `json:"max_storage"`
		} `json:"config"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		t.Fatal(err)
	}
	return j.Storage, j.Config.MaxStorage
}

// The proxy and three nats-server nodes as processes of their own: a
// stream of one replica placed on nats-0 fills that node's storage while
// the others stay empty (the eventing reference's F1); beyond it the
// proxy answers 507. What the clients got 2xx for is what the proxy
// counted published; received is published plus refused.
func TestSeparateProcessesOneNodeFills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nats-server processes and the proxy")
	}
	cfg := DefaultConfig()
	cfg.NATS = NATSConfig{Nodes: 3, MaxStore: 1 << 20}
	cfg.Stream.Placement = "nats-0"
	p := start(t, cfg, "")
	in := p.Instances()
	if len(in) != 4 || in[0].Name != "eventproxy-0" || in[0].PID <= 0 || in[0].PID == os.Getpid() || in[1].Name != "nats-0" || in[3].Name != "nats-2" {
		t.Fatalf("instances %+v", in)
	}
	codes := map[int]int{}
	body := strings.Repeat("x", 2000)
	for i := 0; i < 2000 && codes[http.StatusInsufficientStorage] < 20; i++ {
		codes[post(t, p.Endpoint(), "application/json", map[string]string{"Pipebench-Seq": strconv.Itoa(i + 1)}, `{"d":"`+body+`"}`)]++
	}
	if codes[http.StatusNoContent] < 100 || codes[http.StatusInsufficientStorage] < 20 {
		t.Fatalf("statuses %v: want the node to fill and the proxy to answer 507", codes)
	}
	// Every answer is counted once: published for each 204, refused by
	// its reason for every other (a loaded machine may add a transient
	// 503 "nats_unavailable" to the 507s of the full node).
	m, refused := scrape(t, p)
	var sent, refusedAll float64
	for _, n := range codes {
		sent += float64(n)
	}
	for _, n := range refused {
		refusedAll += n
	}
	if m[MetricPublished] != float64(codes[http.StatusNoContent]) || refused["stream_full"] != float64(codes[http.StatusInsufficientStorage]) ||
		refusedAll != sent-float64(codes[http.StatusNoContent]) || m[MetricReceived] != m[MetricPublished]+refusedAll {
		t.Errorf("metrics %v refused %v, statuses %v", m, refused, codes)
	}
	used0, limit0 := nodeStorage(t, in[1].MetricsURL)
	if limit0 != 1<<20 || used0 < 0.9*limit0 {
		t.Errorf("nats-0 holds %v of %v: want it full", used0, limit0)
	}
	for _, nd := range in[2:] {
		if used, _ := nodeStorage(t, nd.MetricsURL); used > 0.1*limit0 {
			t.Errorf("%s holds %v: want it empty", nd.Name, used)
		}
	}
	if c := p.Cluster(); c == nil || len(c.Nodes()) != 3 {
		t.Fatal("no cluster")
	}
}

// The chaos schedule freezes the proxy's process: while frozen it answers
// nothing, after it answers again.
func TestChaosFreezesTheProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a nats-server process and the proxy")
	}
	cfg := DefaultConfig()
	cfg.NATS.Nodes = 1
	cfg.Chaos = []natscluster.Chaos{{At: pipebench.Duration(300 * time.Millisecond), Action: natscluster.ActionFreeze, Target: "proxy", For: pipebench.Duration(time.Second)}}
	p := start(t, cfg, "")
	up := func() bool {
		cl := http.Client{Timeout: 200 * time.Millisecond}
		resp, err := cl.Get(p.Instances()[0].MetricsURL + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return !up() }, "the proxy was never frozen")
	testutil.Eventually(t, 5*time.Second, up, "the proxy was not thawed")
}

func TestSeparateConfigErrors(t *testing.T) {
	c := DefaultConfig()
	c.Stream.Placement = "nats-0"
	c.Chaos = []natscluster.Chaos{{Action: natscluster.ActionFreeze, Target: "proxy", For: pipebench.Duration(time.Second)}}
	err := c.Validate()
	for _, want := range []string{"stream.placement:", "chaos: needs the nodes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in: %v", want, err)
		}
	}
	c = DefaultConfig()
	c.NATS = NATSConfig{Nodes: 3, MaxStorePerNode: []int64{1}}
	c.MaxStore, c.Stream.Replicas = 1<<20, 4
	c.Chaos = []natscluster.Chaos{{Action: natscluster.ActionRestart, Target: "nats-3"}}
	err = c.Validate()
	for _, want := range []string{"nats.max_store_per_node:", "max_store: is the embedded server's", "stream: replicas 4 is more than the 3 node(s)", `target "nats-3"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in: %v", want, err)
		}
	}
	c.NATS.MaxStorePerNode, c.MaxStore, c.Stream.Replicas, c.Chaos[0].Target = nil, 0, 3, "proxy"
	if err := c.Validate(); err != nil {
		t.Errorf("a valid separate config: %v", err)
	}
	if s := c.ScaleTime(0.5).(*Config); len(s.Chaos) != 1 {
		t.Error("chaos lost in ScaleTime")
	}
}
