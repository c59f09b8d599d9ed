package kpi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
)

// shardOf is a shard's Result of a 10 s plan at 1 s that ran from
// started for ran, with a series of points.
func shardOf(ran time.Duration, points int) *pipebench.Result {
	t0 := time.Unix(1_800_000_000, 0)
	r := &pipebench.Result{Schema: pipebench.ResultSchema,
		Manifest: pipebench.Manifest{RunID: "s", Started: t0, Ended: t0.Add(ran)},
		Plan: pipebench.Plan{Interval: pipebench.Duration(time.Second), Drain: pipebench.Duration(5 * time.Second), Shard: &pipebench.Shard{Index: 0, Count: 2},
			Phases: []pipebench.PlanPhase{{Name: "p", Duration: pipebench.Duration(10 * time.Second), Items: 100, Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 10}}}},
		Phases: []pipebench.PhaseResult{{Name: "p", KPIs: []pipebench.KPI{{Name: "sent", Value: 100, Unit: pipebench.UnitCount}}}},
	}
	s := pipebench.Series{Name: "queue", Points: make([]pipebench.TimeValue, points)}
	for i := range s.Points {
		s.Points[i] = pipebench.TimeValue{T: t0.Add(time.Duration(i) * time.Second), V: 1}
	}
	r.Series = []pipebench.Series{s}
	return r
}

func decode(t *testing.T, r *pipebench.Result) error {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	_, err = DecodeShard(bytes.NewReader(b))
	return err
}

// DecodeShard holds a shard to what a run of its plan records: a series of
// more points than its length at its interval is refused, but a shard that
// waited an hour for its shared start (its observers on) is not; never
// more than a run keeps of a series; a histogram of another range than
// the recorder's (whose decoding would allocate what its header asks) and
// more messages than a run keeps are refused.
func TestDecodeShardBounds(t *testing.T) {
	if err := decode(t, shardOf(20*time.Second, 900)); err != nil {
		t.Errorf("a shard within its plan: %v", err)
	}
	if err := decode(t, shardOf(20*time.Second, 1100)); err == nil || !strings.Contains(err.Error(), "more than the 979 points") {
		t.Errorf("more points than its plan's length: %v", err)
	}
	if err := decode(t, shardOf(time.Hour+time.Minute, 3700)); err != nil {
		t.Errorf("a shard that waited an hour for its start: %v", err)
	}
	if err := decode(t, shardOf(10*time.Hour, 5000)); err == nil || !strings.Contains(err.Error(), "more than the 4160 points") {
		t.Errorf("more points than a run keeps: %v", err)
	}
	wide := hdrhistogram.New(1, 1<<50, 5)
	wide.RecordValue(7)
	enc, err := wide.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	r := shardOf(20*time.Second, 1)
	r.Phases[0].Histograms = map[string]string{"latency": string(enc)}
	if err := decode(t, r); err == nil || !strings.Contains(err.Error(), "not the recorder's") {
		t.Errorf("a histogram of another range: %v", err)
	}
	r = shardOf(20*time.Second, 1)
	r.Errors = map[string][]string{"error": {"a", "b", "c", "d"}}
	if err := decode(t, r); err == nil || !strings.Contains(err.Error(), "more than the 3 a run keeps") {
		t.Errorf("four messages of a class: %v", err)
	}
	r = shardOf(20*time.Second, 1)
	r.Phases = append(r.Phases, r.Phases[0], r.Phases[0])
	if err := decode(t, r); err == nil || !strings.Contains(err.Error(), "more rows than the 1 phases of its plan") {
		t.Errorf("three rows of a one-phase plan: %v", err)
	}
}
