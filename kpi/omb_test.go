package kpi

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// isQuantile reports whether v is a q-th percentile of the samples xs,
// read straight off them (the independent reading the histogram's
// quantiles are held to), within the histogram's precision (0.2% of the
// value, a microsecond): at most q% of the samples lie below it and at
// least q% at or below it, less one sample (HdrHistogram rounds the rank
// q*n to the nearest, where the nearest-rank definition takes its
// ceiling).
func isQuantile(xs []float64, q, v float64) (below, atOrBelow float64, ok bool) {
	lo, hi := v/1.002-0.001, v*1.002+0.001
	var nb, na int
	for _, x := range xs {
		if x < lo {
			nb++
		}
		if x <= hi {
			na++
		}
	}
	below, atOrBelow = 100*float64(nb)/float64(len(xs)), 100*float64(na)/float64(len(xs))
	return below, atOrBelow, below <= q && q-100/float64(len(xs)) <= atOrBelow
}

// OMB's table from one phase: publish rate in messages and MB/s (bytes of
// the accepted sends only), publish latency, publish delay (how late each
// send started) and end-to-end latency at p50 ... p99.99 and max, each
// quantile within the histogram's precision of the sorted samples.
func TestOMBKPIs(t *testing.T) {
	const n = 20000
	rng := rand.New(rand.NewPCG(1, 2))
	r := NewRecorder(1)
	a := NewArrivals(1, nil)
	a.StartPhase(0, 1)
	a.Accept(1, n)
	t0 := time.Unix(1000, 0)
	var lat, lag, e2e []float64
	var bytes uint64
	for i := 0; i < n; i++ {
		at := t0.Add(time.Duration(i) * 500 * time.Microsecond)
		d := time.Duration(rng.ExpFloat64()*2e6) + 100*time.Microsecond // publish latency, long-tailed
		l := time.Duration(rng.ExpFloat64() * 3e5)                      // publish delay
		class := pipebench.ClassOK
		if i%100 == 7 {
			class = pipebench.ClassRefused // counted, its bytes not accepted
		}
		r.Record(0, pipebench.Sample{Scheduled: at, Started: at.Add(l), Ended: at.Add(l + d), Count: 1, Bytes: 1000 + i%50,
			Outcome: pipebench.Outcome{Class: class}})
		lag = append(lag, float64(l.Microseconds())/1000)
		// Latency counts from the scheduled time: the delay and the
		// publish (pipebench.MeaningLatency).
		lat = append(lat, float64((l+d).Microseconds())/1000)
		if class == pipebench.ClassOK {
			bytes += uint64(1000 + i%50)
			e := time.Duration(rng.ExpFloat64()*5e6) + time.Millisecond
			a.Arrive(uint64(i+1), at, at.Add(e))
			e2e = append(e2e, float64(e.Microseconds())/1000)
		}
	}
	secs := 10.0
	st := a.Stats(0, n+1)
	p := Build(PhaseInput{Name: "load", Started: t0, Ended: t0.Add(time.Duration(secs * float64(time.Second))), Sends: r.Stats(0), Arrivals: &st}, nil)
	get := func(name string) float64 {
		t.Helper()
		v, ok := p.Get(name)
		if !ok {
			t.Fatalf("no KPI %s", name)
		}
		return v
	}
	if got := get("accepted_bytes"); got != float64(bytes) {
		t.Errorf("accepted_bytes %v, want %d", got, bytes)
	}
	if got, want := get("accepted_mb_rate"), float64(bytes)/secs/1e6; math.Abs(got-want) > 1e-9 {
		t.Errorf("accepted_mb_rate %v, want %v", got, want)
	}
	if k := p.All("accepted_mb_rate"); k[0].Unit != pipebench.UnitMBPerSecond {
		t.Errorf("unit %q", k[0].Unit)
	}
	for _, c := range []struct {
		name string
		xs   []float64
	}{{"latency", lat}, {"schedule_lag", lag}, {"e2e_latency", e2e}} {
		for _, q := range Quantiles {
			got := get(c.name + "." + q.Suffix)
			if below, at, ok := isQuantile(c.xs, q.Q, got); !ok {
				t.Errorf("%s.%s = %v: %.3f%% of the samples lie below it, %.3f%% at or below", c.name, q.Suffix, got, below, at)
			}
		}
		if got, want := get(c.name+".max"), slices.Max(c.xs); math.Abs(got-want) > 0.002*want+0.002 {
			t.Errorf("%s.max = %v, want %v", c.name, got, want)
		}
	}
	if _, ok := p.Get("latency.p9999"); !ok {
		t.Error("no latency.p9999")
	}
}

// A series with no reading inside a phase (every scrape of a broker's
// metrics failed in it) keeps its rows: the last reading before the
// phase, marked; a series first read after the phase gives none.
func TestObservedLastReadingStandsIn(t *testing.T) {
	t0 := time.Unix(5000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	broker := map[string]string{"instance": "kafka-1"}
	series := []pipebench.Series{
		{Name: "broker_bytes_in_rate", Labels: broker, Unit: pipebench.UnitPerSecond, Points: []pipebench.TimeValue{{T: at(1), V: 100}, {T: at(2), V: 300}}},
		{Name: "broker_request_queue", Labels: broker, Points: []pipebench.TimeValue{{T: at(1), V: 4}, {T: at(2), V: 2}}},
		{Name: "broker_messages_in", Labels: broker, Kind: pipebench.KindCounter, Points: []pipebench.TimeValue{{T: at(1), V: 10}, {T: at(2), V: 20}}},
		{Name: "later_rate", Points: []pipebench.TimeValue{{T: at(20), V: 1}}},
	}
	fresh := ObservedKPIs(series, at(0), at(3))
	stale := ObservedKPIs(series, at(5), at(10)) // the scrapes at 6..10 s failed
	for _, k := range fresh {
		if k.LastReading {
			t.Errorf("%s marked in a phase with readings", k.Key())
		}
	}
	want := map[string]float64{`broker_bytes_in_rate{instance="kafka-1"}`: 300, `broker_request_queue.max{instance="kafka-1"}`: 2,
		`broker_request_queue.last{instance="kafka-1"}`: 2, `broker_messages_in.total{instance="kafka-1"}`: 20}
	got := map[string]pipebench.KPI{}
	for _, k := range stale {
		got[k.Key()] = k
	}
	if len(got) != len(want) {
		t.Errorf("stale phase: %v, want %v", stale, want)
	}
	for key, v := range want {
		if k, ok := got[key]; !ok || k.Value != v || !k.LastReading {
			t.Errorf("%s = %+v, want %v marked as the last reading", key, k, v)
		}
	}
}
