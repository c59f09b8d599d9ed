package natse2e

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/suitetest"
)

// The chef reference's cap and drains at 2% of its scale (as --duration
// 33s does): the cap of outstanding messages scales with the run (2,000),
// the stream keeps every message until the consumer acknowledged it, so
// with the consumer paused the cap is reached and publishes beyond it are
// refused and counted; then the full cap clears with the load removed and
// the consumer at 500/s (about 4 s here, the reference's "less than 5
// minutes" at its scale), and with 100/s of headroom (about 20 s, "less
// than 25 minutes"). The cap and the backlog are read from the server's
// /jsz (the nats observer).
func TestChefCapAndDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("a 35 s run through nats-server")
	}
	f := 0.02
	res := suitetest.RunBuiltin(t, "chef-drain", time.Duration(f*1640*float64(time.Second)), 500*time.Millisecond, 5*time.Second)
	byPhase := map[string]map[string]float64{}
	for _, p := range res.Phases {
		m := map[string]float64{}
		for _, k := range p.KPIs {
			if _, seen := m[k.Name]; !seen {
				m[k.Name] = k.Value
			}
		}
		for _, k := range p.All("errors") {
			if k.Labels["class"] == "refused" {
				m["refused"] = k.Value
			}
		}
		byPhase[p.Name] = m
	}
	fill, idle, refill, headroom := byPhase["fill"], byPhase["drain-idle"], byPhase["refill"], byPhase["drain-headroom"]
	t.Logf("cap %v; fill: outstanding %v, refused %v; cleared at 500/s in %v s, with 100/s headroom in %v s (refill refused %v)",
		fill["stream_max_msgs.max"], fill["stream_messages.max"], fill["refused"], idle["outstanding_drain_time"], headroom["outstanding_drain_time"], refill["refused"])
	outstanding, _ := res.Total.Get("stream_messages.max", "instance", "nats-0", "stream", "EVENTS")
	if fill["stream_max_msgs.max"] != 2000 || outstanding != 2000 || fill["refused"] < 200 {
		t.Errorf("cap %v, outstanding at most %v, refused %v: want the cap of 2,000 reached and publishes refused beyond it",
			fill["stream_max_msgs.max"], outstanding, fill["refused"])
	}
	if d := idle["outstanding_drain_time"]; d < 3 || d > 4.8 {
		t.Errorf("the full cap cleared at 500/s in %v s, want about 4", d)
	}
	if d := headroom["outstanding_drain_time"]; d < 16 || d > 22 {
		t.Errorf("the full cap cleared with 100/s of headroom in %v s, want about 20", d)
	}
	if lost, _ := res.Total.Get("lost"); lost != 0 {
		t.Errorf("%v lost", lost)
	}
	if !strings.Contains(strings.Join(res.Summary, "\n"), "refused") {
		t.Errorf("the summary does not say publishes were refused:\n%s", strings.Join(res.Summary, "\n"))
	}
}

// The chef-capacity scenario at a ninth of its length: 3,000 supervisors'
// connections held, services every 30 s (18,000, then 24,000 = 800/s, then
// 15,000) through them; buffering begins in the 800/s phase, where the
// generator's rate and the consumer's part, and every event is delivered
// (or still pending in the stream when the drain ends).
func TestChefCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s run with 3,000 connections through nats-server")
	}
	res := suitetest.RunBuiltin(t, "chef-capacity", 20*time.Second, 500*time.Millisecond, 10*time.Second)
	get := func(name string) float64 { v, _ := res.Total.Get(name); return v }
	t.Logf("connections %v, buffering began at %v s, sent %v, delivered %v, pending %v; summary:\n%s",
		get("connections_open.max"), get("buffering_began"), get("sent"), get("delivered"), get("pending_at_end"), strings.Join(res.Summary, "\n"))
	if got := get("connections_open.max"); got != 3000 {
		t.Errorf("connections open %v, want 3,000", got)
	}
	if b, ok := res.Total.Get("buffering_began"); !ok || b < 6 || b > 13.4 {
		t.Errorf("buffering began at %v s (%v), want in the 800/s phase (6.7-13.3 s)", b, ok)
	}
	if sent, del, pend, lost := get("accepted"), get("delivered"), get("pending_at_end"), get("lost"); del+pend != sent || lost != 0 {
		t.Errorf("accepted %v, delivered %v, pending %v, lost %v", sent, del, pend, lost)
	}
}
