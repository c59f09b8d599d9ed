package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/observer/promql"
	"github.com/pipebench/pipebench/report/markdown"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/scenario"
)

// The FQM reference's "Peak Backlog (Prometheus)" column of the blast
// suite (its 10% case, 150 cordons at 50/s): filled from the run's own
// Prometheus (the one the promql observer starts), the peak of its
// readings over the whole run, the drain included (a blast sends in a
// moment and the backlog peaks after), equal to a direct PromQL query of
// that Prometheus over the run within one of its samples; the table's
// cell shows it.
func TestFQMPeakBacklogFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a blast with its store and Prometheus")
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	reg := suitetest.Registry(t)
	// The promql observer the run builds, kept for the test to ask its
	// Prometheus directly.
	var obs *promql.Observer
	pf, _ := reg.Observers.Lookup("promql")
	inner := pf.New
	pf.New = func(cfg any, env pipebench.Env) (pipebench.Observer, error) {
		o, err := inner(cfg, env)
		if p, ok := o.(*promql.Observer); ok {
			obs = p
		}
		return o, err
	}
	wrapped := pipebench.NewCatalog[pipebench.Observer](reg.Observers.Kind())
	for _, n := range reg.Observers.Names() {
		f, _ := reg.Observers.Lookup(n)
		if n == "promql" {
			f = pf
		}
		_ = wrapped.Register(f)
	}
	reg.Observers = wrapped
	// The test's direct query, at the run's last observation (before
	// the run stops its Prometheus): the raw samples of the backlog from
	// the run's start to then (one series: the service's one instance).
	started := time.Now()
	type sample struct {
		at time.Time
		v  float64
	}
	rd := testutil.NewReading(func(ctx context.Context, _ pipebench.Env) ([]sample, error) {
		if obs == nil {
			return nil, fmt.Errorf("no promql observer")
		}
		q := url.Values{"query": {fmt.Sprintf("healthevents_quarantine_backlog[%ds]", int(time.Since(started).Seconds())+2)}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, obs.URL()+"/api/v1/query?"+q.Encode(), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var ans struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Data   struct {
				Result []struct {
					Values [][2]json.RawMessage `json:"values"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
			return nil, err
		}
		if ans.Status != "success" || len(ans.Data.Result) != 1 {
			return nil, fmt.Errorf("%s %s: %d series", ans.Status, ans.Error, len(ans.Data.Result))
		}
		var out []sample
		for _, r := range ans.Data.Result {
			for _, v := range r.Values {
				var ts float64
				var s string
				json.Unmarshal(v[0], &ts)
				json.Unmarshal(v[1], &s)
				f, _ := strconv.ParseFloat(s, 64)
				out = append(out, sample{time.Unix(0, int64(ts*1e9)), f})
			}
		}
		return out, nil
	})
	if err := reg.Observers.Register(rd.Factory("reading")); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if v, ok := suitetest.NoAPIServer[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
	sc, err := builtins.ScenarioWith("builtin:nvsentinel-blast-10", scenario.Params{Registry: reg, Env: lookup})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	plan.Observers = append(plan.Observers, pipebench.Component{Type: "reading"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	samples, _, err := rd.Last()
	if err != nil || len(samples) == 0 {
		t.Fatalf("the direct query: %v, %d samples", err, len(samples))
	}
	peak, at := math.Inf(-1), 0
	for i, s := range samples {
		if s.v > peak {
			peak, at = s.v, i
		}
	}
	got, ok := res.Total.Get("quarantine_backlog.max")
	// Within one sample: the run's instant queries see every raw sample
	// (they are twice as frequent), but the peak may fall just before
	// the first of them or after the last.
	within := map[float64]bool{peak: true}
	for _, i := range []int{at - 1, at + 1} {
		if i >= 0 && i < len(samples) {
			within[samples[i].v] = true
		}
	}
	t.Logf("the run's peak %v (ok %v); Prometheus's samples %v", got, ok, samples)
	if !ok || !within[got] || peak <= 0 {
		t.Errorf("Peak Backlog (Prometheus) %v, the direct query's peak %v (samples around it %v)", got, peak, within)
	}
	// The suite's column shows it.
	s, err := builtins.Suite("builtin:nvsentinel-blast")
	if err != nil {
		t.Fatal(err)
	}
	o := s.TableOptions()
	var b bytes.Buffer
	if err := markdown.Render(&b, markdown.BuildRuns([]*pipebench.Result{res}, o)); err != nil {
		t.Fatal(err)
	}
	rows := suitetest.Rows(t, "## t\n"+b.String(), "t")
	col := -1
	for i, h := range rows[0] {
		if h == "Peak Backlog (Prometheus)" {
			col = i
		}
	}
	if col < 0 || suitetest.Number(t, rows[1], col) != got {
		t.Errorf("the table's Peak Backlog (Prometheus) cell is not %v:\n%s", got, b.String())
	}
}
