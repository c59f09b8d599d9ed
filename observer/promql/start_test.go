package promql

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// With start, the observer starts a Prometheus that scrapes the system
// under test's instances (a job each) and answers the queries and the
// stages; the same expressions asked of that Prometheus directly give the
// same numbers; Close stops it.
func TestStartsPrometheusForTheRun(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	addr, h, g, c := target(t)
	for i := 0; i < 10; i++ {
		h.Observe(0.07)
	}
	g.Set(5)
	c.Add(30)
	cfg := defaultConfig()
	cfg.Start = &StartConfig{}
	cfg.Queries = []Query{{Name: "inserts", Query: "sum(test_inserts_total)", Kind: "counter"}}
	cfg.Stages = []Stage{{Name: "Requests [B]", Histogram: "test_request_duration_seconds", Queue: "test_queue_depth", Mode: "sequential"}}
	obs, err := Factory().New(cfg, pipebench.Env{Dir: t.TempDir(), Instances: []pipebench.Instance{{Name: "sut-0", MetricsURL: "http://" + addr + "/metrics"}}})
	if err != nil {
		t.Fatal(err)
	}
	o := obs.(*Observer)
	got := map[string]pipebench.Point{}
	testutil.Eventually(t, 20*time.Second, func() bool {
		pts, _ := o.Observe(context.Background(), time.Now())
		for _, p := range pts {
			got[p.Name] = p
		}
		return len(got) == 4
	}, "points %v", got)
	if p := got["inserts"]; p.Value != 30 || p.Kind != pipebench.KindCounter {
		t.Errorf("inserts %+v", p)
	}
	if p := got[StageSeconds]; p.Value < 0.69 || p.Value > 0.71 || p.Labels["stage"] != "Requests [B]" || p.Labels["mode"] != "sequential" || p.Labels["job"] != "" {
		t.Errorf("stage seconds %+v, want the histogram's sum 0.7 labelled with its stage", p)
	}
	if p := got[StageEvents]; p.Value != 10 {
		t.Errorf("stage events %+v", p)
	}
	if p := got[StageQueue]; p.Value != 5 {
		t.Errorf("stage queue %+v", p)
	}
	// The same expression asked directly, with the job the observer gave
	// the instance.
	resp, err := http.Get(o.URL() + "/api/v1/query?query=" + url.QueryEscape(`sum(test_request_duration_seconds_count{job="sut-0"})`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"10"`) {
		t.Errorf("direct query: %s", body)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(o.URL() + "/-/ready"); err == nil {
		t.Error("Prometheus still answers after Close")
	}
}

func TestStartConfigProblems(t *testing.T) {
	cfg := defaultConfig()
	cfg.URL = "http://127.0.0.1:9090"
	cfg.Start = &StartConfig{ScrapeInterval: pipebench.Duration(time.Millisecond), Targets: []string{"nope"}}
	cfg.Stages = []Stage{{Name: "x", Mode: "sideways"}}
	err := cfg.Validate()
	for _, want := range []string{"url: leave it out with start", "start.scrape_interval", `start.targets: "nope"`, "give a histogram, a queue or a phase", `mode "sideways"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
