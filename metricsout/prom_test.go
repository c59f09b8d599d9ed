package metricsout_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// prom is a real Prometheus 2.x server started for a test.
type prom struct {
	base string
	// at, when set, is the time instant queries are evaluated at
	// (Unix seconds, as Prometheus gives it): a later scrape that timed
	// out on a loaded machine marks the series stale after it, not at it.
	at string
}

// scrapeJob is one job of a test Prometheus: its targets, and whether the
// series' own job and instance labels win (a collector's exporter).
type scrapeJob struct {
	name        string
	targets     []string
	honorLabels bool
}

// startPrometheus starts Debian's prometheus on 127.0.0.1 with a temporary
// configuration and storage, scraping jobs every 250 ms (native: with
// native histograms), and returns once every target is known to its scrape
// loop. It skips the test when the binary is absent.
func startPrometheus(t *testing.T, native bool, jobs ...scrapeJob) *prom {
	t.Helper()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 250ms\n  scrape_timeout: 250ms\nscrape_configs:\n")
	for _, j := range jobs {
		fmt.Fprintf(&cfg, "  - job_name: %q\n    honor_labels: %v\n    static_configs:\n      - targets: [%s]\n", j.name, j.honorLabels, quoteAll(j.targets))
	}
	args := []string{"--storage.tsdb.retention.time=1h"}
	if native {
		args = append(args, "--enable-feature=native-histograms")
	}
	p := &prom{base: promtest.Prometheus(t, cfg.String(), "the tests against a real Prometheus", args...)}
	// Service discovery hands new targets to the scrape loop only every
	// few seconds: wait until every one is known.
	want := 0
	for _, j := range jobs {
		want += len(j.targets)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		var body struct {
			Data struct{ ActiveTargets []struct{ ScrapeURL string } }
		}
		if err := getJSON(p.base+"/api/v1/targets", &body); err != nil {
			return false
		}
		return len(body.Data.ActiveTargets) == want
	}, "prometheus never took its %d targets", want)
	return p
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// sample is one series of a query's answer.
type sample struct {
	Metric map[string]string
	Value  float64
	At     string // instant queries: the evaluation time
	Points int    // range queries: how many
}

// query runs an instant PromQL query now and returns its series; an error
// of the query fails the test.
func (p *prom) query(t *testing.T, q string) []sample {
	t.Helper()
	out, err := p.tryQuery(q)
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	return out
}

func (p *prom) tryQuery(q string) ([]sample, error) {
	var body struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	u := p.base + "/api/v1/query?query=" + url.QueryEscape(q)
	if p.at != "" {
		u += "&time=" + p.at
	}
	if err := getJSON(u, &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s", body.Error)
	}
	var out []sample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v", r.Value[1])
		}
		at, _ := r.Value[0].(float64)
		out = append(out, sample{Metric: r.Metric, Value: v, At: strconv.FormatFloat(at, 'f', 3, 64)})
	}
	return out, nil
}

// one runs an instant query that must give exactly one series, and returns
// its value.
func (p *prom) one(t *testing.T, q string) float64 {
	t.Helper()
	s := p.query(t, q)
	if len(s) != 1 {
		t.Fatalf("query %s: %d series, want 1: %v", q, len(s), s)
	}
	return s[0].Value
}

// rangeQuery runs a PromQL range query over [from, to] at step and returns
// its series with their number of points.
func (p *prom) rangeQuery(q string, from, to time.Time, step time.Duration) ([]sample, error) {
	v := url.Values{"query": {q}, "start": {strconv.FormatFloat(float64(from.UnixMilli())/1000, 'f', 3, 64)},
		"end": {strconv.FormatFloat(float64(to.UnixMilli())/1000, 'f', 3, 64)}, "step": {step.String()}}
	var body struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Metric map[string]string
				Values [][2]any
			}
		}
	}
	if err := getJSON(p.base+"/api/v1/query_range?"+v.Encode(), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s", body.Error)
	}
	var out []sample
	for _, r := range body.Data.Result {
		out = append(out, sample{Metric: r.Metric, Points: len(r.Values)})
	}
	return out, nil
}

// labelValues answers a Grafana label_values(SELECTOR, LABEL) variable
// query as Grafana asks Prometheus: the label's values among the series
// the selector matches.
func (p *prom) labelValues(selector, label string, from, to time.Time) ([]string, error) {
	v := url.Values{"match[]": {selector}, "start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix()+1, 10)}}
	var body struct {
		Status, Error string
		Data          []string
	}
	if err := getJSON(p.base+"/api/v1/label/"+label+"/values?"+v.Encode(), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s", body.Error)
	}
	return body.Data, nil
}
