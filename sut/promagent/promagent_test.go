package promagent

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	promscrapedriver "github.com/pipebench/pipebench/driver/promscrape"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// Debian's Prometheus in agent mode scrapes the prometheus-scrape driver
// and remote-writes to the remote-write sink: every item arrives exactly
// once, also while the sink fails half the requests (the agent retries).
func TestAgentDeliversEveryItemOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus is not installed (Debian: apt-get install prometheus); skipping the agent test")
	}
	ctx := context.Background()
	a := &testutil.Arrivals{}
	sink := promrwsink.New(*promrwsink.DefaultConfig())
	testutil.Start(t, func(ctx context.Context) error { return sink.Start(ctx, a) }, sink.Shutdown)
	f := Factory()
	cfg := f.NewConfig().(*Config)
	// The scrape timeout is the interval: a scrape slowed past it by a
	// loaded machine is discarded by Prometheus with the items it served
	// (at 200 ms often; at 1 s once in a full test run).
	cfg.ScrapeInterval = pipebench.Duration(2 * time.Second)
	cfg.Queue.BatchSendDeadline = pipebench.Duration(100 * time.Millisecond)
	sut, err := f.New(cfg, pipebench.Env{Target: sink.Endpoint(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, sut.Start, sut.Shutdown)
	in := sut.Instances()
	if len(in) != 1 || in[0].PID == 0 || in[0].MetricsURL == "" {
		t.Fatalf("instances %+v", in)
	}
	drv, err := promscrapedriver.Factory().New(promscrapedriver.DefaultConfig(), pipebench.Env{Target: sut.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer drv.Shutdown(ctx)
	seq := uint64(1)
	send := func(batches int) {
		for i := 0; i < batches; i++ {
			b := pipebench.Batch{Seq: seq, Count: 50}
			seq += 50
			if o := drv.Send(ctx, &b); o.Class != pipebench.ClassOK {
				t.Fatalf("send: %+v", o)
			}
		}
	}
	// What the sink and the agent say when an item is missing.
	state := testutil.Lazy(func() string {
		n, faulted := a.Count()
		return fmt.Sprintf("%d at the sink (%d faulted); the agent's own counters:\n%s", n, faulted, agentCounters(in[0].MetricsURL))
	})
	send(40)
	testutil.Eventually(t, 30*time.Second, func() bool { n, _ := a.Count(); return n == int(seq-1) }, "all %d items at the sink: %s", seq-1, state)
	sink.SetFaults(pipebench.FaultPolicy{ErrorRatio: 0.5, ErrorStatus: 503}, time.Now())
	send(40)
	testutil.Eventually(t, 60*time.Second, func() bool { n, _ := a.Count(); return n == int(seq-1) }, "all %d items at the sink despite the faults: %s", seq-1, state)
	n, faulted := a.Count()
	if faulted == 0 {
		t.Error("the sink faulted nothing")
	}
	a.ExpectEachOnce(t, 1, seq-1, "item")
	t.Logf("%d items delivered once each; %d samples faulted and retried by the agent", n, faulted)
}

// agentCounters returns the lines of the agent's /metrics page that count
// its scrapes and its remote-write samples.
func agentCounters(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") && (strings.Contains(line, "scrape") || strings.Contains(line, "remote_storage_samples")) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestConfig(t *testing.T) {
	c := &Config{Binary: "", ScrapeInterval: 0, Targets: []string{"x"}, TargetsSD: "ftp://x"}
	err := c.Validate()
	for _, key := range []string{"binary:", "scrape_interval:", "targets:", "targets_sd:", "queue:", "start_timeout:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate: %v lacks %s", err, key)
		}
	}
	if _, err := Factory().New(defaultConfig(), pipebench.Env{Target: "127.0.0.1:4317"}); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("a non-URL sink: %v, want a usage error", err)
	}
	d := defaultConfig()
	d.Binary = "no-such-prometheus-binary"
	sut, err := Factory().New(d, pipebench.Env{Target: "http://127.0.0.1:1/api/v1/write", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := sut.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("a missing binary: %v", err)
	}
	ag := &Agent{cfg: *defaultConfig(), sink: "http://127.0.0.1:9/api/v1/write", scrapePort: 5}
	ag.cfg.Targets = []string{"127.0.0.1:9100"}
	ag.cfg.TargetsSD = "http://127.0.0.1:9100/targets"
	y := ag.YAML()
	for _, want := range []string{"127.0.0.1:5", "job_name: producers", "http_sd_configs", "remote_write:", "max_samples_per_send: 500"} {
		if !strings.Contains(y, want) {
			t.Errorf("YAML lacks %s:\n%s", want, y)
		}
	}
}
