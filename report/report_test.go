package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	csvreport "github.com/pipebench/pipebench/report/csv"
	"github.com/pipebench/pipebench/report/jsonreport"
	"github.com/pipebench/pipebench/report/junit"
	"github.com/pipebench/pipebench/report/markdown"
	"github.com/pipebench/pipebench/report/text"
)

func render(t *testing.T, r pipebench.Reporter, res *pipebench.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r.Report(&b, res); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestText(t *testing.T) {
	resulttest.Golden(t, "text", render(t, text.New(text.Options{}), resulttest.Pipeline("0.100.0", "single pipeline", 20134)))
	resulttest.Golden(t, "text-ascii", render(t, text.New(text.Options{ASCII: true}), resulttest.Pipeline("0.100.0", "single pipeline", 20134)))
}

func TestMarkdownSingleRun(t *testing.T) {
	resulttest.Golden(t, "md-single", render(t, markdown.New(markdown.Options{}), resulttest.Pipeline("0.92", "single pipeline", 21146)))
}

// The kyma traces table: three versions, four cases, the reference's
// columns and two-row header.
func TestMarkdownVersionsByCases(t *testing.T) {
	var results []*pipebench.Result
	for _, v := range []string{"0.99.0", "0.100.0", "0.92"} {
		for i, c := range []string{"Single Pipeline", "Multi Pipeline", "Single Pipeline Backpressure", "Multi Pipeline Backpressure"} {
			r := resulttest.Pipeline(v, c, 19000+float64(i*1000))
			r.Phases = r.Phases[:1]
			if strings.Contains(c, "Backpressure") {
				r.Phases = resulttest.Pipeline(v, c, 9000).Phases[1:2]
			}
			results = append(results, r)
		}
	}
	var b bytes.Buffer
	if err := markdown.Render(&b, markdown.Build(results, markdown.Options{})); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[3], "| 0.92 |") || !strings.HasPrefix(lines[5], "| 0.100.0 |") {
		t.Errorf("rows must be versions in numeric order:\n%s", out)
	}
	if !strings.Contains(lines[2], "Receiver Accepted Spans/sec") {
		t.Errorf("second header row lacks the reference columns:\n%s", lines[2])
	}
	resulttest.Golden(t, "md-versions", b.Bytes())
}

func TestMarkdownPhasesAsRows(t *testing.T) {
	cols := []markdown.Column{{Header: "Event Rate", KPI: "target_rate"}, {Header: "P50 Latency", KPI: "latency.p50"}, {Header: "P75 Latency", KPI: "latency.p75"}, {Header: "P99 Latency", KPI: "latency.p99"}}
	resulttest.Golden(t, "md-phases", render(t, markdown.New(markdown.Options{Layout: markdown.LayoutPhases, Columns: cols}), resulttest.Pipeline("v0.4.0", "burst", 500)))
}

func TestCSV(t *testing.T) {
	resulttest.Golden(t, "csv", render(t, csvreport.New(), resulttest.Pipeline("0.100.0", "single", 20134)))
}

func TestJUnitIsValidXML(t *testing.T) {
	out := render(t, junit.New(), resulttest.Pipeline("0.100.0", "single", 20134))
	var v struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Suites[0].Tests != 3 || v.Suites[0].Failures != 1 {
		t.Errorf("suite %+v", v.Suites[0])
	}
	resulttest.Golden(t, "junit", out)
}

func TestJSONRoundTrips(t *testing.T) {
	in := resulttest.Pipeline("0.100.0", "single", 20134)
	out := render(t, jsonreport.New(), in)
	var back pipebench.Result
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	again := render(t, jsonreport.New(), &back)
	if !bytes.Equal(out, again) {
		t.Error("JSON does not round-trip")
	}
	resulttest.Golden(t, "json", out)
}

// The eventing table: a row per run, the first column labelling it, the
// run's own values beside KPIs of its total and of a named phase.
func TestMarkdownRunsAsRows(t *testing.T) {
	cols := []markdown.Column{
		{Header: "cluster", KPI: "@label:cluster"},
		{Header: "K6 rps", KPI: "sent_rate"},
		{Header: "EPP rps", KPI: "accepted_rate", Phase: "backpressure"},
		{Header: "JS Crashed", KPI: "@crashed"},
		{Header: "version", KPI: "@version"},
		{Header: "test duration", KPI: "@duration"},
		{Header: "Failure type", KPI: "@failure"},
		{Header: "Memory (MB)", KPI: "memory_mb", Agg: markdown.AggInstances, Phase: "sustained"},
	}
	var results []*pipebench.Result
	for i, rate := range []float64{500, 250, 350} {
		r := resulttest.Pipeline("2.7.0", fmt.Sprintf("rate %v", rate), rate)
		r.Manifest.Labels = map[string]string{"cluster": []string{"ssd", "hdd", "ssd"}[i]}
		r.Manifest.Ended = r.Manifest.Started.Add(time.Duration(i+1) * 95 * time.Minute)
		tot := r.Phases[0]
		tot.Name = "total"
		r.Total = &tot
		if i != 1 {
			at := r.Manifest.Started.Add(time.Hour)
			r.Detections = []pipebench.Detection{{Detector: "storage_full_all", Began: at.Add(time.Minute)}, {Detector: "storage_full_node", Began: at}, {Detector: "storage_full_node", Began: at.Add(time.Second)}}
		}
		results = append(results, r)
	}
	// A rerun of a case replaces its row.
	again := resulttest.Pipeline("2.7.0", "rate 250", 251)
	again.Manifest.Started = again.Manifest.Started.Add(time.Hour)
	again.Manifest.Ended = again.Manifest.Started.Add(2 * time.Hour)
	again.Manifest.Labels = map[string]string{"cluster": "hdd"}
	again.Total = &again.Phases[0]
	results = append(results, again)
	var b bytes.Buffer
	if err := markdown.Render(&b, markdown.BuildRuns(results, markdown.Options{Layout: markdown.LayoutRuns, Columns: cols})); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| cluster | K6 rps | EPP rps | JS Crashed | version | test duration | Failure type | Memory (MB) |",
		"| ssd | 500 | 500 | yes | 2.7.0 | 1 h 35 min | full storage (F1); full storage (F2) | 137, 139 |",
		"| hdd | 251 | 251 | no | 2.7.0 | 2 h |  | 137, 139 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") != 5 {
		t.Errorf("want a header, a separator and 3 rows:\n%s", out)
	}
	resulttest.Golden(t, "md-runs", b.Bytes())
}
