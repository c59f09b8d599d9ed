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
