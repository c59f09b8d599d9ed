package metricsout_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/metricsout"
	"github.com/pipebench/pipebench/sut/all"
)

// httpScenario is a short run with failures (the sink refuses a fifth of
// the requests), so that every family has series.
const httpScenario = `name: otlp-both
version: e2e
target: {driver: http}
workload: {generator: event, size: 64}
sink: {type: http}
interval: 300ms
drain: 2s
phases:
  - {name: load, duration: 1500ms, rate: 200/s, faults: {error_ratio: 0.2, error_status: 503}}
`

// The same run's metrics pushed over OTLP/gRPC (host:port) and over
// OTLP/HTTP (a URL with /v1/metrics; then one from the standard variables
// OTEL_EXPORTER_OTLP_ENDPOINT with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)
// arrive in a real collector with the Prometheus exporter as the same
// series: the same names and labels but for run_id and job, and each run's
// counters equal to its Result. OTEL_SERVICE_NAME names the job, and
// OTEL_RESOURCE_ATTRIBUTES' service.namespace prefixes it.
func TestOTLPOverHTTPAndGRPCArriveAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three short scenarios against a collector")
	}
	grpcAddr, httpAddr, metricsURL := startCollectorHTTP(t)
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	run := func(endpoint string) *pipebench.Result {
		t.Helper()
		plan := scenariotest.Plan(t, reg, "both.yaml", httpScenario)
		ctx := context.Background()
		lv, err := execute.StartLive(ctx, execute.LiveOptions{OTLPMetrics: endpoint}, plan)
		if err != nil {
			t.Fatal(err)
		}
		out := execute.Run(ctx, plan, execute.Params{Registry: reg, Keep: execute.Keep{NoStore: true},
			Progress: lv.Update, Show: func(r *pipebench.Result) error { lv.Finish(r); return nil }})
		lv.Stop()
		if out.Result == nil {
			t.Fatalf("no result: %v", out.Err)
		}
		return out.Result
	}
	type pushed struct {
		how  string
		res  *pipebench.Result
		job  string
		seen map[string]bool // series without run_id and job
	}
	var runs []*pushed
	runs = append(runs, &pushed{how: "grpc " + grpcAddr, res: run(grpcAddr), job: "pipebench"})
	t.Setenv("OTEL_SERVICE_NAME", "pb-http")
	runs = append(runs, &pushed{how: "http url", res: run("http://" + httpAddr + "/v1/metrics"), job: "pb-http"})
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+httpAddr)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.namespace=bench,team=perf")
	if got := metricsout.EndpointFromEnv(); got != "http://"+httpAddr+"/v1/metrics" {
		t.Fatalf("EndpointFromEnv = %q", got)
	}
	runs = append(runs, &pushed{how: "http from the environment", res: run(metricsout.EndpointFromEnv()), job: "bench/pb-http"})
	os.Unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT") // t.Setenv restores them at the end

	for _, r := range runs {
		id := string(r.res.Manifest.RunID)
		testutil.Eventually(t, 30*time.Second, func() bool {
			for _, line := range scrapeText(t, metricsURL)[metricsout.MetricFinished] {
				if strings.Contains(line, `run_id="`+id+`"`) && strings.HasSuffix(line, " 1") {
					return true
				}
			}
			return false
		}, "the collector never had the final values of the %s run", r.how)
	}
	page := scrapeText(t, metricsURL)
	for _, r := range runs {
		id := `run_id="` + string(r.res.Manifest.RunID) + `"`
		r.seen = map[string]bool{}
		for name, lines := range page {
			for _, l := range lines {
				if !strings.Contains(l, id) {
					continue
				}
				if !strings.Contains(l, `job="`+r.job+`"`) {
					t.Errorf("%s: %s has not job %q", r.how, l, r.job)
				}
				r.seen[name+" "+stripLabels(l, "run_id", "job", "instance")] = true
			}
		}
		sent, _ := r.res.Total.Get("sent")
		if got := sampleOf(t, page[metricsout.MetricSent], id); got != sent {
			t.Errorf("%s: %s %v, the Result sent %v", r.how, metricsout.MetricSent, got, sent)
		}
		refused, _ := r.res.Total.Get("errors", "class", "refused")
		if refused == 0 {
			t.Errorf("%s: no refusals: the failure series prove nothing", r.how)
		}
	}
	t.Logf("%d series over gRPC, %d and %d over OTLP/HTTP", len(runs[0].seen), len(runs[1].seen), len(runs[2].seen))
	if len(runs[0].seen) < 20 {
		t.Fatalf("only %d series over gRPC", len(runs[0].seen))
	}
	for _, r := range runs[1:] {
		if a, b := keys(runs[0].seen), keys(r.seen); !slices.Equal(a, b) {
			t.Errorf("series over gRPC and over %s differ:\nonly gRPC: %q\nonly %s: %q", r.how, minus(a, r.seen), r.how, minus(b, runs[0].seen))
		}
	}
}

// stripLabels removes the labels named from a sample line's label set and
// drops its value: the series' identity across runs.
func stripLabels(line string, names ...string) string {
	i, j := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if i < 0 || j < i {
		return ""
	}
	var keep []string
	for _, kv := range splitLabels(line[i+1 : j]) {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			keep = append(keep, kv)
		}
	}
	sort.Strings(keep)
	return "{" + strings.Join(keep, ",") + "}"
}

// splitLabels splits a label set on the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			cur.WriteByte(c)
			i++
			cur.WriteByte(s[i])
			continue
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// sampleOf is the value of the one sample line among lines with label.
func sampleOf(t *testing.T, lines []string, label string) float64 {
	t.Helper()
	for _, l := range lines {
		if strings.Contains(l, label) {
			var v float64
			f := strings.Fields(l)
			if _, err := fmt.Sscan(f[len(f)-1], &v); err == nil {
				return v
			}
		}
	}
	t.Fatalf("no sample with %s in %q", label, lines)
	return 0
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func minus(a []string, b map[string]bool) []string {
	var out []string
	for _, k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	return out
}
