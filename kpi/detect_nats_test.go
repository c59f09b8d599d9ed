package kpi

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

var natsT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func natsSeries(name string, labels map[string]string, vals ...float64) pipebench.Series {
	s := pipebench.Series{Name: name, Labels: labels}
	for i, v := range vals {
		s.Points = append(s.Points, pipebench.TimeValue{T: natsT0.Add(time.Duration(i) * time.Second), V: v})
	}
	return s
}

func natsFind(ds []pipebench.Detection, name string) []pipebench.Detection {
	var out []pipebench.Detection
	for _, d := range ds {
		if d.Detector == name {
			out = append(out, d)
		}
	}
	return out
}

// A stream filling at 10%/s from 20%: the filling detection comes at the
// first rise with an ETA of 7 s, before the full one at 100%.
func TestStorageFillingThenFull(t *testing.T) {
	st := map[string]string{"instance": "nats-0", "stream": "EVENTS"}
	r := &pipebench.Result{Series: []pipebench.Series{natsSeries("storage_used_ratio", st, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1)},
		Phases: []pipebench.PhaseResult{{Name: "load", Started: natsT0, Ended: natsT0.Add(time.Minute)}}}
	ds := DetectNATS(r, NATSDetectOptions{})
	fill, full := natsFind(ds, "storage_filling"), natsFind(ds, "stream_full")
	if len(fill) != 1 || len(full) != 1 {
		t.Fatalf("detections %+v", ds)
	}
	if !fill[0].Began.Equal(natsT0.Add(time.Second)) || fill[0].Value < 6.9 || fill[0].Value > 7.1 || fill[0].Phase != "load" {
		t.Errorf("filling %+v", fill[0])
	}
	if !fill[0].Began.Before(full[0].Began) || !full[0].Began.Equal(natsT0.Add(8*time.Second)) {
		t.Errorf("full %+v after filling %+v", full[0], fill[0])
	}
	if !strings.Contains(fill[0].Message, "full in about 7s") {
		t.Errorf("message %q", fill[0].Message)
	}
}

func TestNodesFull(t *testing.T) {
	n0, n1 := map[string]string{"instance": "nats-0"}, map[string]string{"instance": "nats-1"}
	one := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("node_storage_used_ratio", n0, 0.5, 0.99, 1),
		natsSeries("node_storage_used_ratio", n1, 0.5, 0.6, 0.7),
	}}
	ds := DetectNATS(one, NATSDetectOptions{})
	if f1 := natsFind(ds, "storage_full_node"); len(f1) != 1 || !strings.Contains(f1[0].Series, "nats-0") || len(natsFind(ds, "storage_full_all")) != 0 {
		t.Errorf("F1: %+v", ds)
	}
	all := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("node_storage_used_ratio", n0, 0.5, 0.99, 1),
		natsSeries("node_storage_used_ratio", n1, 0.5, 0.6, 0.99),
	}}
	ds = DetectNATS(all, NATSDetectOptions{})
	if f2 := natsFind(ds, "storage_full_all"); len(f2) != 1 || !f2[0].Began.Equal(natsT0.Add(2*time.Second)) || len(natsFind(ds, "storage_full_node")) != 0 {
		t.Errorf("F2: %+v", ds)
	}
}

// A consumer paused with a backlog: the ack floor stops, pending stays
// above zero; the stall is reported from its first observation. A full
// stream with a stopped consumer is not F3.
func TestDispatchStalled(t *testing.T) {
	c := map[string]string{"instance": "nats-0", "stream": "EVENTS", "consumer": "pipebench"}
	s := map[string]string{"instance": "nats-0", "stream": "EVENTS"}
	r := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("consumer_pending", c, 0, 0, 100, 200, 300, 400, 500, 600, 0),
		natsSeries("consumer_acked_seq", c, 100, 200, 300, 300, 300, 300, 300, 300, 1000),
		natsSeries("storage_used_ratio", s, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1),
	}}
	ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "dispatch_stalled")
	if len(ds) != 1 || !ds[0].Began.Equal(natsT0.Add(3*time.Second)) || ds[0].Value != 200 {
		t.Fatalf("stall %+v", ds)
	}
	r.Series[2] = natsSeries("storage_used_ratio", s, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	if ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("stall reported on a full stream: %+v", ds)
	}
	// Paused on purpose (a planned outage): not a stall either.
	r.Series[2] = natsSeries("storage_used_ratio", s, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)
	r.Series = append(r.Series, natsSeries("consumer_paused", c, 0, 0, 1, 1, 1, 1, 1, 1, 0))
	if ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("stall reported on a paused consumer: %+v", ds)
	}
}

// F3 on a cluster: the stream (reported by its leader, no instance label)
// keeps accepting while its consumer, whose node stopped answering, shows
// no new ack floor: a stall from the first observation without progress.
// Publishes stopped (the generator's F4) or no consumer at all: no F3.
func TestDispatchStalledWhileAccepting(t *testing.T) {
	st := map[string]string{"stream": "EVENTS"}
	c := map[string]string{"stream": "EVENTS", "consumer": "pipebench"}
	r := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("stream_last_seq", st, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000),
		// The consumer's node froze after t=2: its points stop.
		natsSeries("consumer_acked_seq", c, 90, 190, 290),
		natsSeries("node_storage_used_ratio", map[string]string{"instance": "nats-0"}, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1),
	}}
	ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "dispatch_stalled")
	if len(ds) != 1 || !ds[0].Began.Equal(natsT0.Add(3*time.Second)) || ds[0].Value != 110 || ds[0].Series != `stream{stream="EVENTS"}` {
		t.Fatalf("F3 %+v", ds)
	}
	stopped := *r
	stopped.Series = append([]pipebench.Series{natsSeries("stream_last_seq", st, 100, 200, 300, 300, 300, 300, 300, 300, 300, 300)}, r.Series[1:]...)
	if ds := natsFind(DetectNATS(&stopped, NATSDetectOptions{}), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("F3 while nothing was accepted: %+v", ds)
	}
	noConsumer := &pipebench.Result{Series: r.Series[:1]}
	if ds := natsFind(DetectNATS(noConsumer, NATSDetectOptions{}), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("F3 without a consumer: %+v", ds)
	}
	restarted := *r
	start := float64(natsT0.Unix())
	restarted.Series = append(append([]pipebench.Series(nil), r.Series...),
		natsSeries("server_start_time", map[string]string{"instance": "nats-1"}, start, start, start, start+5, start+5, start+5, start+5, start+5, start+5, start+5))
	if ds := natsFind(DetectNATS(&restarted, NATSDetectOptions{}), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("F3 while a node restarted: %+v", ds)
	}
	full := *r
	full.Series = append(append([]pipebench.Series(nil), r.Series[:2]...), natsSeries("node_storage_used_ratio", map[string]string{"instance": "nats-0"}, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1))
	if ds := natsFind(DetectNATS(&full, NATSDetectOptions{}), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("F3 with a full node: %+v", ds)
	}
}

// A node's start time changes between two observations: one restart,
// from the last observation before.
func TestNodeRestart(t *testing.T) {
	start := float64(natsT0.Unix())
	r := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("server_start_time", map[string]string{"instance": "nats-1"}, start, start, start, start+6, start+6),
		natsSeries("server_start_time", map[string]string{"instance": "nats-0"}, start, start, start, start, start),
	}}
	ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "node_restart")
	if len(ds) != 1 || !strings.Contains(ds[0].Series, "nats-1") || !ds[0].Began.Equal(natsT0.Add(2*time.Second)) || ds[0].Value != 4 {
		t.Fatalf("restarts %+v", ds)
	}
}

// The handled rate at 290/s for 30 observations, then 70/s: a drop after
// 30 s (from the load's start), with the levels before and after; a rate
// that only wobbles is no drop.
func TestRateDrop(t *testing.T) {
	var vals []float64
	vals = append(vals, 0) // the first rate spans the start-up
	for i := 0; i < 30; i++ {
		vals = append(vals, 290+float64(i%3))
	}
	for i := 0; i < 20; i++ {
		vals = append(vals, 70+float64(i%5))
	}
	r := &pipebench.Result{Series: []pipebench.Series{natsSeries("handled_rate", map[string]string{"instance": "eventproxy-0"}, vals...)},
		Phases: []pipebench.PhaseResult{{Name: "soak", Started: natsT0, Ended: natsT0.Add(60 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
	ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "rate_drop")
	if len(ds) != 1 || !ds[0].Began.Equal(natsT0.Add(31*time.Second)) {
		t.Fatalf("drop %+v", ds)
	}
	before, _ := r.Total.Get("rate_before_drop")
	after, _ := r.Total.Get("rate_after_drop")
	upFor, _ := r.Total.Get("time_before_drop")
	if before != 291 || after != 72 || upFor != 31 {
		t.Errorf("before %v, after %v, for %v s", before, after, upFor)
	}
	flat := &pipebench.Result{Series: []pipebench.Series{natsSeries("handled_rate", nil, 300, 300, 280, 310, 290, 300, 260, 300, 310, 290, 300, 280)},
		Phases: r.Phases, Total: &pipebench.PhaseResult{Name: "total"}}
	if ds := natsFind(DetectNATS(flat, NATSDetectOptions{}), "rate_drop"); len(ds) != 0 {
		t.Errorf("drop on a steady rate: %+v", ds)
	}
	// The same fall when the plan asked for it (a phase at 70/s after one
	// at 290/s, as the quickstart's recovery phase) is no drop; the same
	// fall against a steady target is one.
	for _, c := range []struct {
		after float64
		want  int
	}{{72, 0}, {290, 1}} {
		target := []float64{0}
		for i := 0; i < 30; i++ {
			target = append(target, 290)
		}
		for i := 0; i < 20; i++ {
			target = append(target, c.after)
		}
		planned := &pipebench.Result{Series: []pipebench.Series{r.Series[0], natsSeries("target_rate", nil, target...)},
			Phases: r.Phases, Total: &pipebench.PhaseResult{Name: "total"}}
		if ds := natsFind(DetectNATS(planned, NATSDetectOptions{}), "rate_drop"); len(ds) != c.want {
			t.Errorf("target %v/s after 30 s: %d drops, want %d", c.after, len(ds), c.want)
		}
	}
}

// The generator's accepted rate runs ahead of the consumer's ack rate from
// the 4th observation on: buffering began there.
func TestBuffering(t *testing.T) {
	r := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("accepted_rate", nil, 600, 600, 600, 800, 800, 800, 800),
		natsSeries("consumer_acked_seq_rate", map[string]string{"stream": "EVENTS", "consumer": "eas"}, 600, 598, 601, 650, 650, 649, 650),
	}, Phases: []pipebench.PhaseResult{{Name: "load", Started: natsT0, Ended: natsT0.Add(7 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
	ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "buffering")
	if began, _ := r.Total.Get("buffering_began"); len(ds) != 1 || began != 3 {
		t.Fatalf("buffering %+v, began %v", ds, began)
	}
	// The consumer paused on purpose: no buffering to report.
	r.Total = &pipebench.PhaseResult{Name: "total"}
	r.Series = append(r.Series, natsSeries("consumer_paused", map[string]string{"stream": "EVENTS", "consumer": "eas"}, 1, 1, 1, 1, 1, 1, 1))
	if ds := natsFind(DetectNATS(r, NATSDetectOptions{}), "buffering"); len(ds) != 0 {
		t.Errorf("buffering reported while the consumer was paused: %+v", ds)
	}
}

// A backlog of 10,000 at a phase's start clears to 1% within 20 s.
func TestOutstandingDrainAndMemorySlope(t *testing.T) {
	var backlog, mem []float64
	for i := 0; i <= 30; i++ {
		backlog = append(backlog, max(0, 10000-500*float64(i)))
	}
	for i := 0; i <= 60; i++ {
		mem = append(mem, 50+float64(i)/60) // 1 MB a minute
	}
	s := map[string]string{"stream": "EVENTS"}
	mem2 := natsSeries("memory_mb", map[string]string{"instance": "nats-0"}, mem...)
	for i := range mem2.Points {
		mem2.Points[i].T = natsT0.Add(time.Duration(i) * 3 * time.Second) // 3 min
	}
	r := &pipebench.Result{Series: []pipebench.Series{natsSeries("stream_messages", s, backlog...), mem2},
		Phases: []pipebench.PhaseResult{{Name: "drain", Started: natsT0, Ended: natsT0.Add(30 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
	DetectNATS(r, NATSDetectOptions{})
	secs, _ := r.Phases[0].Get("outstanding_drain_time", "stream", "EVENTS")
	rate, _ := r.Phases[0].Get("outstanding_drain_rate", "stream", "EVENTS")
	if secs != 20 || rate != 500 {
		t.Errorf("drained in %v s at %v/s, want 20 s at 500/s", secs, rate)
	}
	if slope, _ := r.Total.Get("memory_slope", "instance", "nats-0"); slope < 19.9 || slope > 20.1 {
		t.Errorf("memory slope %v MB/h, want 20", slope)
	}
}
