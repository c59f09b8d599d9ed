package effect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/dynamicpb"

	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/observer/effect"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/sut/healthevents"
)

// quarantine is the test's own gRPC server on a Unix socket: it queues
// each health event it receives and applies them one at a time at a set
// rate, as the reference's quarantine module cordons nodes. Its /effects
// JSON lists each applied event's sequence number and send time but not
// when it was applied, so the observer times effects by its polls; the
// server keeps the true times for the test to compare with.
type quarantine struct {
	mu       sync.Mutex
	queue    []qevent
	applied  []qevent // in order
	peak     int      // the largest backlog, sampled at every enqueue and apply
	appliedT []time.Time
}

type qevent struct {
	seq  uint64
	sent time.Time
}

func startQuarantine(t *testing.T, sock string, rate float64) (q *quarantine, effectsURL string) {
	t.Helper()
	schema, err := healthevents.CompileSchema()
	if err != nil {
		t.Fatal(err)
	}
	md := schema.Report
	q = &quarantine{}
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(md.Parent().FullName()),
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Report", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := dynamicpb.NewMessage(md.Input())
			if err := dec(in); err != nil {
				return nil, err
			}
			var sent time.Time
			if m, ok := metadata.FromIncomingContext(ctx); ok && len(m.Get("pipebench-sent")) > 0 {
				if ns, err := strconv.ParseInt(m.Get("pipebench-sent")[0], 10, 64); err == nil {
					sent = time.Unix(0, ns)
				}
			}
			events := in.Get(md.Input().Fields().ByName("events")).List()
			q.mu.Lock()
			for i := 0; i < events.Len(); i++ {
				ev := events.Get(i).Message()
				q.queue = append(q.queue, qevent{seq: ev.Get(ev.Descriptor().Fields().ByName("sequence")).Uint(), sent: sent})
			}
			q.peak = max(q.peak, len(q.queue))
			q.mu.Unlock()
			return dynamicpb.NewMessage(md.Output()), nil
		}}},
	}, nil)
	lu, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lu)
	t.Cleanup(srv.Stop)

	// The applier: one event every 1/rate, while the queue holds any.
	t.Cleanup(testutil.Every(time.Duration(float64(time.Second)/rate), func(now time.Time) {
		q.mu.Lock()
		if len(q.queue) > 0 {
			q.applied = append(q.applied, q.queue[0])
			q.appliedT = append(q.appliedT, now)
			q.queue = q.queue[1:]
		}
		q.mu.Unlock()
	}))

	mux := http.NewServeMux()
	mux.HandleFunc("/effects", func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
		q.mu.Lock()
		from = min(max(from, 0), len(q.applied))
		type eff struct {
			Seq  uint64 `json:"seq"`
			Sent int64  `json:"sent"` // Unix nanoseconds
		}
		page := struct {
			Effects []eff `json:"effects"`
			Next    int   `json:"next"`
			Backlog int   `json:"backlog"`
		}{Effects: []eff{}, Next: len(q.applied), Backlog: len(q.queue)}
		for _, e := range q.applied[from:] {
			page.Effects = append(page.Effects, eff{Seq: e.seq, Sent: e.sent.UnixNano()})
		}
		q.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(page)
	})
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go hs.Serve(hl)
	t.Cleanup(func() { hs.Close() })
	return q, "http://" + hl.Addr().String() + "/effects"
}

// A blast of N health events through the whole runner, over gRPC on a
// Unix socket, to the test's server applying them one at a time at a set
// rate; the effect observer polls its JSON. The blast's KPIs must match
// what the server did, within one poll interval: the time until all N
// took effect, the effect (completion) rate, the peak backlog, and each
// event's own latency from its send to its effect (p50, p90, p99 of every
// event, not of one poll).
func TestBlastEffectsThroughRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a blast for a few seconds")
	}
	const n, rate, poll = 120, 60.0, 200 * time.Millisecond
	sock := filepath.Join(t.TempDir(), "q.sock")
	q, effectsURL := startQuarantine(t, sock, rate)

	reg := scenariotest.Registry(t, payload.MessageFactory(), grpcdriver.Factory(), effect.Factory())
	res := scenariotest.Run(t, reg, "effect-blast.yaml", fmt.Sprintf(`
name: effect-blast
target: {driver: grpc, endpoint: "unix://%s", method: pipebench.healthevents.v1.HealthEventService/Report, proto_files: [../../examples/healthevents.proto]}
workload:
  generator: grpc-message
  message: {version: 1, events: [{node_name: "node-{{seq}}", sequence: "{{seq}}", severity: SEVERITY_FATAL}]}
observers:
  - {type: effect, url: %q, cursor_param: from, cursor: next, items: effects, seq: seq, sent: sent, backlog: backlog}
interval: %s
drain: 20s
phases:
  - {name: blast, blast: {count: %d, workers: 20}, duration: 30s}
`, sock, effectsURL, poll, n))
	ph := &res.Phases[0]
	q.mu.Lock()
	applied, appliedT, peak := append([]qevent(nil), q.applied...), append([]time.Time(nil), q.appliedT...), q.peak
	q.mu.Unlock()
	if len(applied) != n {
		t.Fatalf("the server applied %d of %d events; status %s %v", len(applied), n, res.Manifest.Status, res.Manifest.Reasons)
	}
	// One poll interval, and the observation's own scheduling on a busy
	// machine: a poll stamped with its tick time may fetch a little later.
	tol := poll.Seconds() + 0.1
	ttc0, _ := ph.Get("time_to_complete")
	cr0, _ := ph.Get("completion_rate")
	pb0, _ := ph.Get("peak_backlog")
	t.Logf("time_to_complete %.3f s, completion_rate %.1f/s, peak_backlog %g; the server: last effect after %.3f s, peak backlog %d",
		ttc0, cr0, pb0, appliedT[n-1].Sub(ph.Started).Seconds(), peak)

	// Time to complete: from the blast's start to its last effect.
	trueTTC := appliedT[n-1].Sub(ph.Started).Seconds()
	ttc, ok := ph.Get("time_to_complete")
	if !ok || ttc < trueTTC-tol || ttc > trueTTC+tol {
		t.Errorf("time_to_complete %.3f s (%v), the server applied the last event %.3f s after the blast began", ttc, ok, trueTTC)
	}
	if want := float64(n) / rate; trueTTC < want*0.9 {
		t.Errorf("the server applied %d events in %.3f s; at %g/s that takes %.3f s", n, trueTTC, rate, want)
	}
	// Effect rate: N over the time to complete.
	cr, _ := ph.Get("completion_rate")
	if lo, hi := float64(n)/(trueTTC+tol), float64(n)/(trueTTC-tol); cr < lo || cr > hi {
		t.Errorf("completion_rate %.1f/s, want %.1f..%.1f/s (the server applied at %g/s)", cr, lo, hi, rate)
	}
	// Peak backlog: the server's own peak, less what it applied within a
	// poll of reaching it.
	pb, _ := ph.Get("peak_backlog")
	if lo := float64(peak) - rate*tol - 1; pb < lo || pb > float64(peak) {
		t.Errorf("peak_backlog %g, the server's peak was %d (want %.0f..%d)", pb, peak, lo, peak)
	}
	// Per-event latency: send to effect, each event's own.
	lat := make([]float64, n)
	for i, e := range applied {
		lat[i] = appliedT[i].Sub(e.sent).Seconds() * 1000
	}
	sort.Float64s(lat)
	for _, c := range []struct {
		kpi string
		q   float64
	}{{"effect_latency_ms.p50", 0.5}, {"effect_latency_ms.p90", 0.9}, {"effect_latency_ms.p99", 0.99}} {
		want := lat[int(math.Ceil(c.q*float64(n)))-1]
		got, ok := ph.Get(c.kpi)
		// Seen by a poll within one interval after the effect, so later by
		// up to one poll; a histogram bucket is 12% wide.
		t.Logf("%s: %.1f ms, the events' own %.1f ms", c.kpi, got, want)
		if !ok || got < want*0.94-tol*1000 || got > want*1.06+tol*1000 {
			t.Errorf("%s = %.1f ms (%v); the events' own %s is %.1f ms", c.kpi, got, ok, c.kpi, want)
		}
		if tot, _ := res.Total.Get(c.kpi); math.Abs(tot-got) > 1e-9 {
			t.Errorf("total %s = %.1f ms, the blast's %.1f ms: every effect was in the blast", c.kpi, tot, got)
		}
	}
	// A per-poll value would be far from the spread of the events: the
	// last event waited about N/rate, the first about 1/rate.
	p50, _ := ph.Get("effect_latency_ms.p50")
	p99, _ := ph.Get("effect_latency_ms.p99")
	if p99 < 1.5*p50 {
		t.Errorf("p50 %.0f ms, p99 %.0f ms: a queue drained at a steady rate spreads latency from 1/rate to N/rate", p50, p99)
	}
}
