package effect

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/sut/healthevents"
	"github.com/pipebench/pipebench/sut/healthevents/service"
)

// A blast of N health events over gRPC on a Unix socket to the embedded
// service applying one effect at a time at a set rate: the observer, polling
// its /effects JSON, must see every effect, the time to apply them all, the
// effect rate and the peak backlog the service was set to give, within one
// poll interval.
func TestBlastEffectsOverUnixSocket(t *testing.T) {
	const n, rate, poll = 80, 40.0, 100 * time.Millisecond
	srv, err := service.New(healthevents.Config{Listen: "unix://" + filepath.Join(t.TempDir(), "he.sock"), HTTPListen: "127.0.0.1:0", EffectRate: rate, QueueSize: 1000, Store: healthevents.StoreConfig{Type: healthevents.StoreNone}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, srv.Start, srv.Shutdown)

	obs, err := Factory().New(&Config{URL: "/effects", Timeout: pipebench.Duration(2 * time.Second), CursorParam: "from", Cursor: "next",
		Items: "effects", Seq: "seq", Sent: "sent", At: "applied", Backlog: "backlog"}, pipebench.Env{Instances: srv.Instances()})
	if err != nil {
		t.Fatal(err)
	}
	o := obs.(*Observer)

	drv, err := grpcdriver.New(grpcdriver.Config{Endpoint: srv.Endpoint(), Method: healthevents.MethodReport,
		Timeout: pipebench.Duration(5 * time.Second), Connections: 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, drv.Start, drv.Shutdown)
	gen, err := payload.NewMessage(map[string]any{"events": []any{map[string]any{"node_name": "node-{{seq % 50}}", "sequence": "{{seq}}"}}})
	if err != nil {
		t.Fatal(err)
	}
	sendStart := time.Now()
	for i := 1; i <= n; i++ {
		b := gen.Next(uint64(i), 1, time.Now())
		if oc := drv.Send(context.Background(), &b); oc.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, oc)
		}
	}

	sendTook := time.Since(sendStart)
	peakBacklog, firstAll := pollEffects(t, o, n, poll)
	s := o.Summary()
	want := checkSpread(t, s, n, rate)
	if el := firstAll.Sub(sendStart); el < want || el > want+want/4+2*poll {
		t.Errorf("all effects seen %v after the blast began, want about %v", el, want)
	}
	effRate := float64(n-1) / s.Last.Sub(s.First).Seconds()
	if effRate < rate*0.8 || effRate > rate*1.05 {
		t.Errorf("effect rate %.1f/s, want %g/s", effRate, rate)
	}
	// The first poll, right after the blast, sees all N waiting but those
	// applied while sending.
	if low := n - rate*(sendTook+poll).Seconds() - 2; peakBacklog < low || peakBacklog > n {
		t.Errorf("peak backlog %g, want %.0f..%d (sending took %v)", peakBacklog, low, n, sendTook)
	}
	// The last event waited for the whole queue ahead of it.
	if s.Max < want-want/10 || s.P50 > s.P99 || s.P99 > s.Max {
		t.Errorf("latency p50 %v p99 %v max %v; the last event should wait about %v", s.P50, s.P99, s.Max, want)
	}
	if all := o.SummaryBetween(s.First, s.Last.Add(time.Nanosecond)); all.Count != n || all.Max != s.Max || all.P50 != s.P50 {
		t.Errorf("SummaryBetween over everything = %+v, Summary = %+v", all, s)
	}
	mid := s.First.Add(s.Last.Sub(s.First) / 2)
	firstHalf, secondHalf := o.SummaryBetween(s.First, mid), o.SummaryBetween(mid, s.Last.Add(time.Nanosecond))
	if firstHalf.Count+secondHalf.Count != n || firstHalf.Max > secondHalf.P50 {
		t.Errorf("halves: %+v then %+v: later effects waited longer in the queue", firstHalf, secondHalf)
	}
	if s.NoSentTime != 0 || s.ClockSkew != 0 {
		t.Errorf("%d effects lacked a send time, %d were stamped before sending", s.NoSentTime, s.ClockSkew)
	}
}

// pollEffects calls o's Observe every poll until it reports n effects,
// for at most 30 s (failing the test then), and returns the peak of the
// backlog it reported meanwhile and when it first reported all n.
func pollEffects(t *testing.T, o pipebench.Observer, n int, poll time.Duration) (peakBacklog float64, allSeen time.Time) {
	t.Helper()
	var count float64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(poll) {
		pts, err := o.Observe(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			switch p.Name {
			case "effect_backlog":
				peakBacklog = max(peakBacklog, p.Value)
			case "effects":
				count = p.Value
			}
		}
		if count == float64(n) {
			return peakBacklog, time.Now()
		}
	}
	t.Fatalf("saw %g effects in 30 s, want %d", count, n)
	return 0, time.Time{}
}

// checkSpread checks that n effects, one every 1/rate seconds, took about
// (n-1)/rate from the first to the last, and returns that span.
func checkSpread(t *testing.T, s Summary, n int, rate float64) time.Duration {
	t.Helper()
	want := time.Duration(float64(n-1) / rate * float64(time.Second))
	if took := s.Last.Sub(s.First); took < want-want/20 || took > want+want/4 {
		t.Errorf("effects took %v from first to last, want about %v", took, want)
	}
	return want
}

func TestBadConfiguration(t *testing.T) {
	_, err := Factory().New(&Config{URL: "localhost", CursorParam: "from"}, pipebench.Env{})
	if err == nil {
		t.Fatal("no error")
	}
	msg := testutil.ErrorText(err)
	for _, want := range []string{"url:", "timeout:", "cursor_param:", "seq:", "sent:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if _, err := Factory().New(&Config{URL: "/effects", Timeout: 1, Seq: "seq", Sent: "sent"}, pipebench.Env{}); err == nil || !strings.Contains(err.Error(), "is a path") {
		t.Errorf("a path without a system under test: %v", err)
	}
}

func TestTimeFormats(t *testing.T) {
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, v := range []any{"2026-01-02T03:04:05Z", float64(want.Unix()), float64(want.UnixMilli()), float64(want.UnixMicro())} {
		got, ok := timeOf(v)
		if !ok || !got.Equal(want) {
			t.Errorf("timeOf(%v) = %v, %v", v, got, ok)
		}
	}
}
