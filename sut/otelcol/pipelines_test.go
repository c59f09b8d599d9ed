package otelcol

import (
	"strconv"
	"strings"
	"testing"

	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	promobs "github.com/pipebench/pipebench/observer/prometheus"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/report"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
)

// Three pipelines of a real collector export every span to the sink, and
// the sink fails 70% of the second pipeline's requests only: the table
// shows that pipeline's pending spans (its queue and retries), faults and exporter queue, and the other two
// pipelines deliver every span once (no duplicates, no loss), although
// each span arrives three times in all.
func TestThreePipelinesFaultOnOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector")
	}
	reg := scenariotest.Registry(t, otlpgen.TracesFactory(), otlpdriver.Factory(), otlpsink.Factory(), Factory(), promobs.Factory())
	// Retries wait 2 s and the drain lasts 1 s, so what the sink failed
	// on p2 near the end is still in the collector when the run ends;
	// two consumers per exporter, so p2's retries back its queue up.
	res := scenariotest.Run(t, reg, "three-pipelines.yaml", `
name: three-pipelines
sut:
  type: otelcol
  pipelines: 3
  num_consumers: 2
  batch: {timeout: 100ms}
  retry_on_failure: {enabled: true, initial_interval: 2s, max_interval: 2s, max_elapsed_time: 5m}
target: {driver: otlp}
workload: {generator: otlp-traces, batch: 100}
sink: {type: otlp}
observers: [{type: prometheus, preset: otelcol}]
interval: 500ms
drain: 1s
phases:
  - {name: load, duration: 3s, rate: 1000/s, faults: {pipeline: p2, error_ratio: 0.7}}
`)
	tot := res.Total
	get := func(name string, labels ...string) float64 {
		t.Helper()
		v, ok := tot.Get(name, labels...)
		if !ok {
			t.Fatalf("the total has no %s%v; it has %v", name, labels, tot.KPIs)
		}
		return v
	}
	sent := get("sent")
	if sent != 3000 {
		t.Fatalf("sent %v, want 3000", sent)
	}
	for _, p := range []string{"p1", "p3"} {
		if d, l, dup, f := get("pipeline_delivered", "pipeline", p), get("pipeline_lost", "pipeline", p), get("pipeline_duplicates", "pipeline", p), get("pipeline_faulted", "pipeline", p); d != sent || l != 0 || dup != 0 || f != 0 {
			t.Errorf("%s: delivered %v lost %v duplicates %v faulted %v, want %v 0 0 0", p, d, l, dup, f, sent)
		}
	}
	d2, l2, f2 := get("pipeline_delivered", "pipeline", "p2"), get("pipeline_lost", "pipeline", "p2"), get("pipeline_faulted", "pipeline", "p2")
	p2held := get("pipeline_pending_at_end", "pipeline", "p2")
	// What p2's exporter still holds (its queue and the requests it
	// retries, in spans) is pending, not lost: lost is only what the
	// collector dropped, which its counters say (none here).
	if p2held == 0 || f2 == 0 || d2+l2+p2held != sent || l2 != get("lost_confirmed") {
		t.Errorf("p2: delivered %v lost %v pending %v faulted %v (the collector dropped %v), want them adding up to %v", d2, l2, p2held, f2, get("lost_confirmed"), sent)
	}
	// The total's terms are the pipelines' added: p2's alone here.
	pending := get("pending_at_end")
	if dup, del, lost := get("duplicates"), get("delivered"), get("lost"); dup != 0 || del != sent || pending != p2held || lost != l2 {
		t.Errorf("totals: duplicates %v delivered %v lost %v pending %v; want 0, %v (each span once), lost %v and pending %v (p2's)", dup, del, lost, pending, sent, l2, p2held)
	}
	// The table: a group per pipeline, the loss and the queue on p2 alone.
	phases, rows := report.Table(res)
	col := len(phases) - 1 // the total
	cell := func(group, label string) string {
		for _, r := range rows {
			if r.Group == group && r.Label == label {
				return r.Cells[col]
			}
		}
		t.Errorf("the table has no row %q %q", group, label)
		return ""
	}
	num := func(s string) float64 {
		var sum float64
		for _, part := range strings.Split(s, ", ") {
			v, err := strconv.ParseFloat(strings.ReplaceAll(part, ",", ""), 64)
			if err != nil {
				t.Errorf("cell %q: %v", s, err)
			}
			sum += v
		}
		return sum
	}
	if num(cell("pipeline p2", "pending at end")) != p2held || num(cell("pipeline p2", "lost")) != l2 {
		t.Errorf("p2's pending cell %q and lost cell %q, want %v and %v", cell("pipeline p2", "pending at end"), cell("pipeline p2", "lost"), p2held, l2)
	}
	for _, p := range []string{"p1", "p3"} {
		if cell("pipeline "+p, "lost") != "0" || cell("pipeline "+p, "duplicates") != "0" {
			t.Errorf("%s: lost %q duplicates %q, want 0 and 0", p, cell("pipeline "+p, "lost"), cell("pipeline "+p, "duplicates"))
		}
	}
	q2 := num(cell("pipeline p2", "exporter queue max"))
	for _, p := range []string{"p1", "p3"} {
		if q := num(cell("pipeline "+p, "exporter queue max")); q2 <= q {
			t.Errorf("exporter queue max: p2 %v, %s %v; want p2's queue to back up alone", q2, p, q)
		}
	}
	if f := num(cell("pipeline p2", "faulted by sink")); f != f2 || f == 0 {
		t.Errorf("p2's faulted cell is %v, want %v", f, f2)
	}
	t.Logf("sent %v; p2 delivered %v pending %v lost %v faulted %v, queue max %v", sent, d2, p2held, l2, f2, q2)
}
