package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/sinktest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// promConfig scrapes the targets of a file: Debian's prometheus is built
// without kubernetes_sd_configs, so discover (below) plays that part,
// the way the usual annotation-driven job does: the pods of the namespace
// whose prometheus.io/scrape annotation is "true", at their pod address
// and prometheus.io/port, path prometheus.io/path.
const promConfig = `global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: pods
    file_sd_configs:
      - files: [%q]
        refresh_interval: 1s
`

// discover writes, every 200 ms until ctx ends, the scrape targets of the
// pods of ns as their annotations name them (file_sd's JSON).
func discover(ctx context.Context, e *e2e, ns, file string) {
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	for ctx.Err() == nil {
		groups := []group{}
		if l, err := e.c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range l.Items {
				a := p.Annotations
				if a["prometheus.io/scrape"] != "true" || p.Status.PodIP == "" || a["prometheus.io/port"] == "" {
					continue
				}
				groups = append(groups, group{Targets: []string{net.JoinHostPort(p.Status.PodIP, a["prometheus.io/port"])},
					Labels: map[string]string{"__metrics_path__": a["prometheus.io/path"], "pod": p.Name, "namespace": ns}})
			}
		}
		b, _ := json.Marshal(groups)
		os.WriteFile(file+".tmp", b, 0o600)
		os.Rename(file+".tmp", file)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startPrometheus starts Debian's prometheus on 127.0.0.1, scraping the
// annotated pods of ns; it skips the test when the binary is absent.
func startPrometheus(t *testing.T, e *e2e, ns string) string {
	t.Helper()
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.json")
	os.WriteFile(targets, []byte("[]"), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go discover(ctx, e, ns, targets)
	return promtest.Prometheus(t, fmt.Sprintf(promConfig, targets), "the scrape of the shards' metrics")
}

// promValue runs an instant query whose answer is one number.
func promValue(base, q string) (float64, bool) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct{ Value [2]any }
		}
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil || len(body.Data.Result) != 1 {
		return 0, false
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// Live shards: each shard serves the run's metrics on its pod's address,
// the pods found through the API server by their scrape annotations, and
// a real Prometheus scrapes them while they run; what it saw last of
// each shard's sent counter adds up to the merged Result's sent.
func TestShardMetricsScraped(t *testing.T) {
	e := startE2E(t)
	ns := "metrics"
	base := startPrometheus(t, e, ns)
	sink, _ := sinktest.HTTP(t)
	scen := fmt.Sprintf(`
name: k8s-metrics
target: {driver: http, url: %q}
interval: 500ms
drain: 1s
phases:
  - {name: a, duration: 3s, rate: 200/s}
`, sink.Endpoint())
	res, _, log, err := e.launch(t, context.Background(), ns, scen, Setup{Shards: 2, Pods: PodSettings{MetricsPort: 9464, MetricsLinger: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	sent := total(t, res, "sent")
	var seen float64
	ok := testutil.Poll(20*time.Second, func() bool {
		seen, _ = promValue(base, `sum(max_over_time(pipebench_items_sent_total{namespace="`+ns+`"}[5m]))`)
		return seen == sent
	})
	if !ok {
		pods, _ := promValue(base, `count(count by (pod) (max_over_time(pipebench_items_sent_total[5m])))`)
		t.Errorf("Prometheus saw %v items sent by %v pods, the merged Result says %v\n%s", seen, pods, sent, log)
	}
	if n, _ := promValue(base, `count(count by (pod) (max_over_time(pipebench_items_sent_total[5m])))`); n != 2 {
		t.Errorf("Prometheus scraped %v shards, want 2", n)
	}
	if !strings.Contains(log.String(), "k8s: live:") {
		t.Errorf("no live progress:\n%s", log)
	}
}
