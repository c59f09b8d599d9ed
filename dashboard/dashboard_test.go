package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/browsertest"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	"github.com/pipebench/pipebench/runner"
)

// growing returns a Snapshot (or Partial) func whose series gain a point
// per call, like a run going on in which the sink refuses items.
func growing() (func() *pipebench.Result, *atomic.Int64) {
	full := resulttest.WithFaults(resulttest.WithSeries(resulttest.Pipeline("0.162.0", "single", 20000)))
	var calls atomic.Int64
	return func() *pipebench.Result {
		n := int(calls.Add(1)) + 14 // into the second phase, where the sink refuses
		r := *full
		r.Series = nil
		for _, s := range full.Series {
			s.Points = s.Points[:min(n, len(s.Points))]
			r.Series = append(r.Series, s)
		}
		return &r
	}, &calls
}

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

func getLive(t *testing.T, s *Server) Live {
	t.Helper()
	resp, err := http.Get(s.URL() + "api/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l Live
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLiveJSON(t *testing.T) {
	s := start(t)
	if l := getLive(t, s); l.Done || len(l.Charts) != 0 || l.Progress != "starting…" {
		t.Errorf("before the first progress: %+v", l)
	}
	snap, _ := growing()
	s.Update(runner.Progress{Phase: "backpressure", PhaseIndex: 1, Phases: 3, TargetRate: 20000, SentRate: 19990, QueueSize: 12, Snapshot: snap})
	l := getLive(t, s)
	if !strings.Contains(l.Progress, "[2/3 backpressure]") || len(l.Charts) < 5 {
		t.Fatalf("live: %q, %d charts", l.Progress, len(l.Charts))
	}
	first := l.Charts[0].Points
	if l2 := getLive(t, s); l2.Charts[0].Points <= first {
		t.Errorf("the charts did not grow: %d then %d points", first, l2.Charts[0].Points)
	}
	// With the run so far (Partial), the KPI table comes too.
	s.Update(runner.Progress{Phase: "backpressure", PhaseIndex: 1, Phases: 3, Snapshot: snap, Partial: snap})
	if l := getLive(t, s); !strings.Contains(l.Table, "<table") || !strings.Contains(l.Table, "backpressure") {
		t.Errorf("live KPI table: %q", l.Table)
	}
	s.Finish(snap())
	if l := getLive(t, s); !l.Done || !strings.HasPrefix(l.Progress, "finished") {
		t.Errorf("after Finish: %q done=%v", l.Progress, l.Done)
	}
	// A suite's next case: the page goes live again.
	s.Begin()
	if l := getLive(t, s); l.Done || l.Progress != "starting…" {
		t.Errorf("after Begin: %q done=%v", l.Progress, l.Done)
	}
	s.Update(runner.Progress{Phase: "sustained", PhaseIndex: 0, Phases: 1, Snapshot: snap})
	if l := getLive(t, s); l.Done || !strings.Contains(l.Progress, "sustained") {
		t.Errorf("the next case's progress: %q done=%v", l.Progress, l.Done)
	}
}

func TestBadAddress(t *testing.T) {
	if _, err := Start("127.0.0.1:99999"); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("bad port: %v", err)
	}
}

// In a real Chromium: the page refreshes every second with the KPI table
// of the run so far and every chart (values on hover; a zoom stays across
// refreshes), the progress line shows, and no console error is logged.
func TestInChromium(t *testing.T) {
	s := start(t)
	snap, calls := growing()
	s.Update(runner.Progress{Phase: "backpressure", PhaseIndex: 1, Phases: 3, PhaseElapsed: 5 * time.Second,
		PhaseDuration: 15 * time.Second, TargetRate: 20000, SentRate: 19990, DeliveredRate: 6000, QueueSize: 12, Snapshot: snap, Partial: snap})
	p := browsertest.Open(t, s.URL())
	p.WaitFor(t, `+document.body.dataset.updates >= 3`, 15*time.Second)
	if c := calls.Load(); c < 3 {
		t.Errorf("the page asked for %d snapshots", c)
	}
	progress := browsertest.Eval[string](t, p, `document.getElementById("progress").textContent`)
	if !strings.Contains(progress, "[2/3 backpressure]") || !strings.Contains(progress, "queue 12") {
		t.Errorf("progress line: %q", progress)
	}
	table := browsertest.Eval[string](t, p, `document.querySelector("#kpis-0 table") ? document.querySelector("#kpis-0 table").innerText : ""`)
	if !strings.Contains(table, "backpressure") || !strings.Contains(table, "20,000") {
		t.Errorf("live KPI table: %q", table)
	}
	type info struct {
		ID     string `json:"id"`
		Points int    `json:"points"`
	}
	charts := browsertest.Eval[[]info](t, p, `[...document.querySelectorAll("svg.pb-chart")].map(s => ({id: s.id, points: +s.dataset.points}))`)
	var ids []string
	for _, c := range charts {
		ids = append(ids, c.ID)
		if c.Points == 0 {
			t.Errorf("chart %s has no points", c.ID)
		}
	}
	for _, id := range []string{"chart-rates", "chart-failures", "chart-e2e", "chart-distribution", "chart-lost"} {
		if !slices.Contains(ids, id) {
			t.Errorf("no %s among %q", id, ids)
		}
	}
	// A zoom stays while the page refreshes.
	browsertest.Eval[bool](t, p, `(() => { const s = document.getElementById("chart-rates"); s.scrollIntoView();
		const [l, top, w, h] = s.dataset.plot.split(" ").map(Number), m = s.getScreenCTM();
		const at = (f) => ({bubbles: true, button: 0, clientX: m.a * (l + f * w) + m.e, clientY: m.d * (top + h / 2) + m.f});
		s.dispatchEvent(new MouseEvent("mousedown", at(0.3)));
		document.dispatchEvent(new MouseEvent("mousemove", at(0.6)));
		document.dispatchEvent(new MouseEvent("mouseup", at(0.6)));
		return true })()`)
	zoomed := browsertest.Eval[string](t, p, `document.querySelector("#chart-rates .pb-xaxis text").textContent`)
	n := browsertest.Eval[int](t, p, `+document.body.dataset.updates`)
	p.WaitFor(t, `+document.body.dataset.updates >= `+strconv.Itoa(n+2), 10*time.Second)
	if got := browsertest.Eval[string](t, p, `document.querySelector("#chart-rates .pb-xaxis text").textContent`); got != zoomed || zoomed == "0s" {
		t.Errorf("after a refresh the zoomed axis starts at %q, before it at %q", got, zoomed)
	}
	p.Screenshot(t, "dashboard.png")
	s.Finish(snap())
	p.WaitFor(t, `document.getElementById("progress").textContent.includes("finished")`, 5*time.Second)
	if errs := p.Errors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
