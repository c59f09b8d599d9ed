package natsobs

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
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
	ds := Detector{}.Detect(r)
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
	ds := Detector{}.Detect(one)
	if f1 := natsFind(ds, "storage_full_node"); len(f1) != 1 || !strings.Contains(f1[0].Series, "nats-0") || len(natsFind(ds, "storage_full_all")) != 0 {
		t.Errorf("F1: %+v", ds)
	}
	all := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("node_storage_used_ratio", n0, 0.5, 0.99, 1),
		natsSeries("node_storage_used_ratio", n1, 0.5, 0.6, 0.99),
	}}
	ds = Detector{}.Detect(all)
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
	ds := natsFind(Detector{}.Detect(r), "dispatch_stalled")
	if len(ds) != 1 || !ds[0].Began.Equal(natsT0.Add(3*time.Second)) || ds[0].Value != 200 {
		t.Fatalf("stall %+v", ds)
	}
	r.Series[2] = natsSeries("storage_used_ratio", s, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	if ds := natsFind(Detector{}.Detect(r), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("stall reported on a full stream: %+v", ds)
	}
	// Paused on purpose (a planned outage): not a stall either.
	r.Series[2] = natsSeries("storage_used_ratio", s, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)
	r.Series = append(r.Series, natsSeries("consumer_paused", c, 0, 0, 1, 1, 1, 1, 1, 1, 0))
	if ds := natsFind(Detector{}.Detect(r), "dispatch_stalled"); len(ds) != 0 {
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
	ds := natsFind(Detector{}.Detect(r), "dispatch_stalled")
	if len(ds) != 1 || !ds[0].Began.Equal(natsT0.Add(3*time.Second)) || ds[0].Value != 110 || ds[0].Series != `stream{stream="EVENTS"}` {
		t.Fatalf("F3 %+v", ds)
	}
	stopped := *r
	stopped.Series = append([]pipebench.Series{natsSeries("stream_last_seq", st, 100, 200, 300, 300, 300, 300, 300, 300, 300, 300)}, r.Series[1:]...)
	if ds := natsFind(Detector{}.Detect(&stopped), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("F3 while nothing was accepted: %+v", ds)
	}
	noConsumer := &pipebench.Result{Series: r.Series[:1]}
	if ds := natsFind(Detector{}.Detect(noConsumer), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("F3 without a consumer: %+v", ds)
	}
	restarted := *r
	start := float64(natsT0.Unix())
	restarted.Series = append(append([]pipebench.Series(nil), r.Series...),
		natsSeries("server_start_time", map[string]string{"instance": "nats-1"}, start, start, start, start+5, start+5, start+5, start+5, start+5, start+5, start+5))
	if ds := natsFind(Detector{}.Detect(&restarted), "dispatch_stalled"); len(ds) != 0 {
		t.Errorf("F3 while a node restarted: %+v", ds)
	}
	full := *r
	full.Series = append(append([]pipebench.Series(nil), r.Series[:2]...), natsSeries("node_storage_used_ratio", map[string]string{"instance": "nats-0"}, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1))
	if ds := natsFind(Detector{}.Detect(&full), "dispatch_stalled"); len(ds) != 0 {
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
	ds := natsFind(Detector{}.Detect(r), "node_restart")
	if len(ds) != 1 || !strings.Contains(ds[0].Series, "nats-1") || !ds[0].Began.Equal(natsT0.Add(2*time.Second)) || ds[0].Value != 4 {
		t.Fatalf("restarts %+v", ds)
	}
}

// The generator's accepted rate runs ahead of the consumer's ack rate from
// the 4th observation on: buffering began there.
func TestBuffering(t *testing.T) {
	r := &pipebench.Result{Series: []pipebench.Series{
		natsSeries("accepted_rate", nil, 600, 600, 600, 800, 800, 800, 800),
		natsSeries("consumer_acked_seq_rate", map[string]string{"stream": "EVENTS", "consumer": "eas"}, 600, 598, 601, 650, 650, 649, 650),
	}, Phases: []pipebench.PhaseResult{{Name: "load", Started: natsT0, Ended: natsT0.Add(7 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
	ds := natsFind(Detector{}.Detect(r), "buffering")
	if began, _ := r.Total.Get("buffering_began"); len(ds) != 1 || began != 3 {
		t.Fatalf("buffering %+v, began %v", ds, began)
	}
	// The consumer paused on purpose: no buffering to report.
	r.Total = &pipebench.PhaseResult{Name: "total"}
	r.Series = append(r.Series, natsSeries("consumer_paused", map[string]string{"stream": "EVENTS", "consumer": "eas"}, 1, 1, 1, 1, 1, 1, 1))
	if ds := natsFind(Detector{}.Detect(r), "buffering"); len(ds) != 0 {
		t.Errorf("buffering reported while the consumer was paused: %+v", ds)
	}
}

// A backlog of 10,000 at a phase's start clears to 1% within 20 s.
func TestOutstandingDrain(t *testing.T) {
	var backlog []float64
	for i := 0; i <= 30; i++ {
		backlog = append(backlog, max(0, 10000-500*float64(i)))
	}
	s := map[string]string{"stream": "EVENTS"}
	r := &pipebench.Result{Series: []pipebench.Series{natsSeries("stream_messages", s, backlog...)},
		Phases: []pipebench.PhaseResult{{Name: "drain", Started: natsT0, Ended: natsT0.Add(30 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
	Detector{}.Detect(r)
	secs, _ := r.Phases[0].Get("outstanding_drain_time", "stream", "EVENTS")
	rate, _ := r.Phases[0].Get("outstanding_drain_rate", "stream", "EVENTS")
	if secs != 20 || rate != 500 {
		t.Errorf("drained in %v s at %v/s, want 20 s at 500/s", secs, rate)
	}
}

// A stream's storage filling at 1 MB/s against a 1,000 MB limit: the ETA
// at the slope is about 941 s after 59 MB; at 98% of the limit it is
// full. Where either is found, the ratio's storage_filling and
// stream_full on the same stream are not reported again.
func TestStorageFillAgainstItsLimit(t *testing.T) {
	st := map[string]string{"instance": "nats-0", "stream": "EVENTS"}
	bytes := func(perSecond float64, n int) pipebench.Series {
		var vals []float64
		for i := 0; i < n; i++ {
			vals = append(vals, float64(i)*perSecond)
		}
		return natsSeries("storage_used_bytes", st, vals...)
	}
	limit := func(n int) pipebench.Series {
		var vals []float64
		for i := 0; i < n; i++ {
			vals = append(vals, 1e9)
		}
		return natsSeries("storage_limit_bytes", st, vals...)
	}
	ratio := natsSeries("storage_used_ratio", st, 0, 0.001, 0.002, 0.3, 0.5, 0.99)
	r := &pipebench.Result{Series: []pipebench.Series{bytes(1e6, 60), limit(60)}}
	fill := natsFind(Detector{}.Detect(r), "storage_fill")
	if len(fill) != 1 || fill[0].Value < 930 || fill[0].Value > 950 {
		t.Fatalf("storage_fill %+v, want an ETA of about 941 s", fill)
	}
	r = &pipebench.Result{Series: []pipebench.Series{bytes(2e8, 6), limit(6), ratio}}
	ds := Detector{}.Detect(r)
	if full := natsFind(ds, "storage_full"); len(full) != 1 || !full[0].Began.Equal(natsT0.Add(5*time.Second)) {
		t.Errorf("storage_full %+v", full)
	}
	if len(natsFind(ds, "stream_full")) != 0 || len(natsFind(ds, "storage_filling")) != 0 {
		t.Errorf("the same stream reported twice: %+v", ds)
	}
	r.Series = []pipebench.Series{ratio}
	if ds := (Detector{}).Detect(r); len(natsFind(ds, "stream_full")) != 1 || len(natsFind(ds, "storage_filling")) != 1 {
		t.Errorf("without bytes against a limit, the ratio's own findings: %+v", ds)
	}
}

// A stream's cap is the run's subject when its messages reached it: only
// then does the total say stream_cap_reached (the chef suite's Cap
// column), with the cap; a cap never come near gives nothing, nor one
// reached before the load began.
func TestCapsReached(t *testing.T) {
	l := map[string]string{"stream": "EVENTS"}
	for _, c := range []struct {
		peaks []float64
		want  bool
	}{{[]float64{0, 0, 5000, 10000, 0}, true}, {[]float64{0, 0, 4000, 0, 0}, false}, {[]float64{10000, 0, 0, 0, 0}, false}} {
		r := &pipebench.Result{Series: []pipebench.Series{natsSeries("stream_max_msgs", l, 10000, 10000, 10000, 10000, 10000), natsSeries("stream_messages", l, c.peaks...)},
			Phases: []pipebench.PhaseResult{{Name: "load", Started: natsT0.Add(time.Second), Ended: natsT0.Add(3 * time.Second)}}, Total: &pipebench.PhaseResult{Name: "total"}}
		Detector{}.Detect(r)
		v, ok := r.Total.Get("stream_cap_reached", "stream", "EVENTS")
		if ok != c.want || (ok && v != 10000) {
			t.Errorf("messages %v: stream_cap_reached %v %v, want %v", c.peaks, v, ok, c.want)
		}
		if !c.want {
			continue
		}
		// A merged run's series carry their shard's label; the total
		// merged from the shards already says the cap was reached, once.
		for i := range r.Series {
			r.Series[i].Labels = map[string]string{"stream": "EVENTS", "shard": "1"}
		}
		Detector{}.Detect(r)
		if got := r.Total.All("stream_cap_reached"); len(got) != 1 {
			t.Errorf("merged: stream_cap_reached %+v, want the shards' one", got)
		}
	}
}

// A consumer that says it is paused is not stalled: the observer's
// Detector is a PauseReporter, which kpi's general stall detector asks;
// the same gap with the consumer not paused is a stall.
func TestPausedConsumerIsNoStall(t *testing.T) {
	c := map[string]string{"instance": "nats-0", "stream": "EVENTS", "consumer": "c"}
	var sent, delivered, paused []float64
	for i := 0; i < 60; i++ {
		sent = append(sent, 1000)
		gap := i >= 20 && i < 31
		delivered = append(delivered, map[bool]float64{true: 0, false: 1000}[gap])
		paused = append(paused, map[bool]float64{true: 1, false: 0}[i >= 19 && i < 32])
	}
	r := &pipebench.Result{Series: []pipebench.Series{natsSeries("sent_rate", nil, sent...), natsSeries("delivered_rate", nil, delivered...)},
		Phases: []pipebench.PhaseResult{{Name: "load", Started: natsT0, Ended: natsT0.Add(time.Minute)}}}
	reg := pipebench.NewRegistry()
	if err := reg.Observers.Register(Factory()); err != nil {
		t.Fatal(err)
	}
	detectors := reg.Detectors(pipebench.Plan{Observers: []pipebench.Component{{Type: "nats"}, {Type: "nats"}}})
	if len(detectors) != 1 {
		t.Fatalf("the registry found %d detectors for a plan with two nats observers, want 1", len(detectors))
	}
	if len(natsFind(kpi.DetectAll(r, detectors), "stall")) != 1 {
		t.Fatal("a gap of 11 s without a paused consumer is no stall")
	}
	r.Series = append(r.Series, natsSeries("consumer_paused", c, paused...))
	if ds := natsFind(kpi.DetectAll(r, detectors), "stall"); len(ds) != 0 {
		t.Errorf("a paused consumer reported as a stall: %+v", ds)
	}
	if ds := natsFind(kpi.DetectAll(r, nil), "stall"); len(ds) != 1 {
		t.Errorf("without the observer's Detector, the gap is a stall: %+v", ds)
	}
}
