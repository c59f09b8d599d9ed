package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/browsertest"
	"github.com/pipebench/pipebench/internal/resulttest"
	"github.com/pipebench/pipebench/runner"
)

// growing returns a Snapshot func whose series gain a point per call, like
// a run going on.
func growing() (func() *pipebench.Result, *atomic.Int64) {
	full := resulttest.WithSeries(resulttest.Pipeline("0.162.0", "single", 20000))
	var calls atomic.Int64
	return func() *pipebench.Result {
		n := int(calls.Add(1)) + 2
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

// In a real Chromium: the page refreshes every second, every chart has data
// points, the progress line shows, and no console error is logged.
func TestInChromium(t *testing.T) {
	s := start(t)
	snap, calls := growing()
	s.Update(runner.Progress{Phase: "backpressure", PhaseIndex: 1, Phases: 3, PhaseElapsed: 5 * time.Second,
		PhaseDuration: 15 * time.Second, TargetRate: 20000, SentRate: 19990, DeliveredRate: 6000, QueueSize: 12, Snapshot: snap})
	p := browsertest.Open(t, s.URL())
	p.WaitFor(t, `+document.body.dataset.updates >= 3`, 15*time.Second)
	if c := calls.Load(); c < 3 {
		t.Errorf("the page asked for %d snapshots", c)
	}
	progress := browsertest.Eval[string](t, p, `document.getElementById("progress").textContent`)
	if !strings.Contains(progress, "[2/3 backpressure]") || !strings.Contains(progress, "queue 12") {
		t.Errorf("progress line: %q", progress)
	}
	points := browsertest.Eval[[]int](t, p, `[...document.querySelectorAll("svg.pb-chart")].map(s => +s.dataset.points)`)
	if len(points) < 5 {
		t.Fatalf("charts: %v", points)
	}
	for i, n := range points {
		if n == 0 {
			t.Errorf("chart %d has no points", i)
		}
	}
	p.Screenshot(t, "dashboard.png")
	s.Finish(snap())
	p.WaitFor(t, `document.getElementById("progress").textContent.includes("finished")`, 5*time.Second)
	if errs := p.Errors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
