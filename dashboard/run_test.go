package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/dashboard"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	"github.com/pipebench/pipebench/internal/testkit/browsertest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/payload"
	htmlreport "github.com/pipebench/pipebench/report/html"
	"github.com/pipebench/pipebench/runner"
	httpsink "github.com/pipebench/pipebench/sink/http"
)

// A real run (HTTP to pipebench's sink on loopback, which refuses a third
// of the sends in the second phase) in a real Chromium, live and then as
// its HTML report: the live page shows the KPI table and the charts while
// the run goes on; the report has every chart of what went wrong (the
// refusals and the sink's faults by class, end-to-end latency, the
// distributions, where items went missing); neither logs a console error.
func TestARealRunInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 4 s scenario in Chromium")
	}
	reg := scenariotest.Registry(t, payload.EventFactory(), httpdriver.Factory(), httpsink.Factory())
	plan := scenariotest.Plan(t, reg, "real.yaml", `name: real-run
target: {driver: http, timeout: 2s}
workload: {generator: event, size: 64}
sink: {type: http}
interval: 250ms
drain: 3s
phases:
  - {name: steady, duration: 2s, rate: 300/s}
  - name: refusing
    duration: 2s
    rate: 300/s
    faults: {error_ratio: 0.3, error_status: 503}
`)
	s, err := dashboard.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	p := browsertest.Open(t, s.URL())

	var res *pipebench.Result
	done := make(chan error, 1)
	go func() {
		var err error
		res, err = runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg, Progress: s.Update})
		done <- err
	}()
	// While the run goes on: the KPI table of the phases so far.
	p.WaitFor(t, `document.querySelector("#kpis-0 table") && +document.body.dataset.updates >= 2`, 20*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.Finish(res)
	p.WaitFor(t, `document.getElementById("progress").textContent.includes("finished")`, 10*time.Second)
	p.Screenshot(t, "dashboard-real-run.png")
	if errs := p.Errors(); len(errs) > 0 {
		t.Errorf("console errors on the live page: %q", errs)
	}
	if v, _ := res.Total.Get("errors", "class", "refused"); v == 0 {
		t.Fatalf("the sink refused nothing: the test proves nothing (%s)", res.Manifest.Status)
	}

	var b strings.Builder
	if err := htmlreport.Write(&b, res); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := browsertest.Open(t, "file://"+path)
	type line struct {
		Chart string `json:"chart"`
		Name  string `json:"name"`
	}
	lines := browsertest.Eval[[]line](t, r, `[...document.querySelectorAll("svg.pb-chart")].flatMap(s =>
		[...s.querySelectorAll("path.pb-line, rect.pb-bar")].map(l => ({chart: s.id, name: l.dataset.name + (l.dataset.category ? " · " + l.dataset.category : "")})))`)
	byChart := map[string][]string{}
	for _, l := range lines {
		byChart[l.Chart] = append(byChart[l.Chart], l.Name)
	}
	for chart, want := range map[string][]string{
		"chart-rates":            {"target", "sent", "answered ok", "delivered"},
		"chart-failures":         {"sends refused", "sink faults"},
		"chart-e2e":              {"p50", "p90", "p99"},
		"chart-latency":          {"p50", "p90", "p99"},
		"chart-backlog":          {"backlog"},
		"chart-distribution":     {"whole run"},
		"chart-e2e-distribution": {"whole run"},
		"chart-lost":             {"events lost · sends failed", "events lost · not delivered"},
	} {
		for _, w := range want {
			if !slices.Contains(byChart[chart], w) {
				t.Errorf("%s: no %q among %q", chart, w, byChart[chart])
			}
		}
	}
	// The target holds from the first phase's start to the load's planned
	// end: no dip at the phase boundary. (A sample whose interval runs past
	// the planned end holds less: the load ended within it.)
	dips := browsertest.Eval[[]float64](t, r, fmt.Sprintf(`(() => {
		const s = document.getElementById("chart-rates"), marks = [...s.querySelectorAll(".pb-phase")].map(m => +m.dataset.x);
		const p = [...s.querySelectorAll("path.pb-line")].find(l => l.dataset.name === "target");
		const x = p.dataset.x.split(",").map(Number), y = p.dataset.y.split(",").map(Number);
		return x.filter((v, i) => v > marks[0] && v <= marks[0] + %g && y[i] !== 300);
	})()`, plan.Duration().Seconds()))
	if len(dips) > 0 {
		t.Errorf("the target is not 300/s at %v s", dips)
	}
	r.Screenshot(t, "report-real-run.png")
	if errs := r.Errors(); len(errs) > 0 {
		t.Errorf("console errors in the report: %q", errs)
	}
}
