package kpi

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
)

func TestRecorderCountsAndLatencyFromSchedule(t *testing.T) {
	r := NewRecorder(2)
	t0 := time.Unix(1000, 0)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				r.Started(1, 10, 0)
				class := pipebench.ClassOK
				if i%10 == 0 {
					class = pipebench.ClassRefused
				}
				// Started 1 ms after it was due (the generator's own
				// lateness), waited 4 ms for a connection, served in 1 ms.
				r.Record(1, pipebench.Sample{
					Scheduled: t0, Started: t0.Add(time.Millisecond), Ended: t0.Add(6 * time.Millisecond),
					Count: 10, Outcome: pipebench.Outcome{Class: class, Code: 503, Detail: "503", Written: t0.Add(5 * time.Millisecond)},
				})
			}
		}(g)
	}
	wg.Wait()
	r.Dropped(1, 10, HeldMaxInFlight, t0)
	s := r.Stats(1)
	if got := s.Items[pipebench.ClassOK]; got != 7200 {
		t.Errorf("ok items = %d, want 7200", got)
	}
	if got := s.Items[pipebench.ClassRefused]; got != 800 {
		t.Errorf("refused items = %d, want 800", got)
	}
	if got := s.Items[pipebench.ClassDropped]; got != 10 {
		t.Errorf("dropped items = %d, want 10", got)
	}
	if got := s.Details["503"]; got != 80 {
		t.Errorf("details[503] = %d, want 80", got)
	}
	// Latency counts from the scheduled time (coordinated omission
	// corrected): the generator's own lateness, the wait for a connection
	// and the service, 6 ms; service time from the write (1 ms); the wait
	// (4 ms) and the lag (1 ms) apart.
	if p50 := s.Latency.ValueAtQuantile(50); p50 < 5995 || p50 > 6005 {
		t.Errorf("latency p50 = %d µs, want 6000", p50)
	}
	if got := s.HeldBack[HeldMaxInFlight]; got != 10 || !s.FirstHeld.Equal(t0) {
		t.Errorf("held back for max_in_flight = %d from %v, want 10 from %v", got, s.FirstHeld, t0)
	}
	if p50 := s.Wait.ValueAtQuantile(50); p50 < 3995 || p50 > 4005 {
		t.Errorf("wait p50 = %d µs, want 4000", p50)
	}
	if p50 := s.Lag.ValueAtQuantile(50); p50 < 995 || p50 > 1005 {
		t.Errorf("lag p50 = %d µs, want 1000", p50)
	}
	if p50 := s.Service.ValueAtQuantile(50); p50 < 995 || p50 > 1005 {
		t.Errorf("service p50 = %d µs, want 1000", p50)
	}
	l := r.Live(1)
	if l.Sent.Load() != 8000 || l.Accepted.Load() != 7200 || l.Failed.Load() != 800 || l.InFlight.Load() != 0 {
		t.Errorf("live = sent %d accepted %d failed %d inflight %d", l.Sent.Load(), l.Accepted.Load(), l.Failed.Load(), l.InFlight.Load())
	}
	if r.Stats(0).Latency.TotalCount() != 0 {
		t.Error("phase 0 got samples of phase 1")
	}
}

func TestArrivalsLossDuplicatesReorderPerPhase(t *testing.T) {
	a := NewArrivals(2, nil)
	a.StartPhase(0, 1)
	a.StartPhase(1, 101)
	sent := time.Unix(2000, 0)
	a.Accept(1, 100)   // phase 0: 1..100
	a.Accept(101, 100) // phase 1: 101..200
	for seq := uint64(1); seq <= 200; seq++ {
		if seq == 50 || seq == 150 || seq == 151 {
			continue // lost
		}
		a.Arrive(seq, sent, sent.Add(20*time.Millisecond))
	}
	a.Arrive(10, sent, sent.Add(30*time.Millisecond))  // duplicate in phase 0
	a.Arrive(300, sent, sent.Add(30*time.Millisecond)) // never accepted: stray
	a.Faulted(7)
	s0, s1 := a.Stats(0, 101), a.Stats(1, 201)
	// Everything arrived while phase 0 was running (SetRunning was never
	// called after the start), so phase 0 delivered all 198 unique items (197 of 1..200, and 300).
	if s0.Delivered != 198 || s0.Lost != 1 || s0.Duplicates != 1 {
		t.Errorf("phase 0: delivered %d lost %d dups %d; want 198 1 1", s0.Delivered, s0.Lost, s0.Duplicates)
	}
	if s1.Lost != 2 || s1.Delivered != 0 {
		t.Errorf("phase 1: lost %d delivered %d, want 2 0", s1.Lost, s1.Delivered)
	}
	if p := s0.E2E.ValueAtQuantile(50); p < 19900 || p > 20100 {
		t.Errorf("e2e p50 = %d µs, want 20000", p)
	}
	if got := a.Outstanding(); got != 3 {
		t.Errorf("outstanding = %d, want 3", got)
	}
	if f, _ := a.Totals(); f != 7 {
		t.Errorf("faulted = %d", f)
	}
	// Arrival of an earlier seq after a later one counts as reordered.
	a.Arrive(50, sent, sent.Add(time.Second))
	if s := a.Stats(0, 101); s.Reordered != 1 || s.Lost != 0 {
		t.Errorf("after late arrival: reordered %d lost %d; want 1 0", s.Reordered, s.Lost)
	}
}

// A sink that judges order itself (per Kafka partition) decides what is
// reordered: interleaved parts are not, a late item of one part is; the
// other counts are as for Arrive.
func TestArriveOrdered(t *testing.T) {
	a := NewArrivals(1, nil)
	a.StartPhase(0, 1)
	a.Accept(1, 6)
	at := time.Unix(3000, 0)
	for _, x := range []struct {
		seq  uint64
		late bool
	}{{2, false}, {1, false}, {4, false}, {3, false}, {6, false}, {5, true}, {5, false}} {
		a.ArriveOrdered(x.seq, at, at.Add(time.Millisecond), x.late)
	}
	if s := a.Stats(0, 7); s.Delivered != 6 || s.Reordered != 1 || s.Duplicates != 1 || s.Lost != 0 {
		t.Errorf("delivered %d reordered %d duplicates %d lost %d; want 6 1 1 0", s.Delivered, s.Reordered, s.Duplicates, s.Lost)
	}
}

func TestBuildAndObservedKPIs(t *testing.T) {
	t0 := time.Unix(3000, 0)
	r := NewRecorder(1)
	for i := 0; i < 100; i++ {
		r.Started(0, 1, 0)
		r.Record(0, pipebench.Sample{Scheduled: t0, Started: t0, Ended: t0.Add(time.Millisecond), Count: 1})
	}
	series := []pipebench.Series{
		{Name: "exporter_queue_size", Labels: map[string]string{"instance": "c-0"}, Points: []pipebench.TimeValue{
			{T: t0.Add(time.Second), V: 5}, {T: t0.Add(2 * time.Second), V: 50}, {T: t0.Add(3 * time.Second), V: 7},
			{T: t0.Add(30 * time.Second), V: 999}, // outside the phase
		}},
		{Name: "memory_mb", Labels: map[string]string{"instance": "c-0"}, Points: []pipebench.TimeValue{{T: t0.Add(time.Second), V: 120}, {T: t0.Add(2 * time.Second), V: 140}}},
		{Name: "receiver_accepted_rate", Labels: map[string]string{"instance": "c-0"}, Points: []pipebench.TimeValue{{T: t0.Add(time.Second), V: 90}, {T: t0.Add(2 * time.Second), V: 110}}},
		{Name: "sent_rate", Points: []pipebench.TimeValue{{T: t0.Add(time.Second), V: 1}}},
	}
	p := Build(PhaseInput{Name: "p", Started: t0, Ended: t0.Add(10 * time.Second), TargetRate: 10, Sends: r.Stats(0)}, series)
	want := map[string]float64{"sent_rate": 10, "accepted_rate": 10, "sent": 100, "target_rate": 10}
	for k, v := range want {
		if got, ok := p.Get(k); !ok || got != v {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, v)
		}
	}
	if got, _ := p.Get("exporter_queue_size.max", "instance", "c-0"); got != 50 {
		t.Errorf("queue max = %v, want 50", got)
	}
	if got, _ := p.Get("exporter_queue_size.last", "instance", "c-0"); got != 7 {
		t.Errorf("queue last = %v, want 7", got)
	}
	if got, _ := p.Get("memory_mb", "instance", "c-0"); got != 140 {
		t.Errorf("memory_mb = %v, want 140", got)
	}
	if got, _ := p.Get("receiver_accepted_rate", "instance", "c-0"); got != 100 {
		t.Errorf("receiver_accepted_rate = %v, want 100", got)
	}
	if _, ok := p.Get("delivered_rate"); ok {
		t.Error("delivered_rate without a sink")
	}
}

func TestDeriverRatesAndUnits(t *testing.T) {
	d := NewDeriver()
	t0 := time.Unix(4000, 0)
	lb := map[string]string{"instance": "x"}
	pts := func(at time.Time, acc, cpu, rss float64) []pipebench.Point {
		return []pipebench.Point{
			{Name: "receiver_accepted", Labels: lb, Kind: pipebench.KindCounter, At: at, Value: acc},
			{Name: "cpu_seconds", Labels: lb, Kind: pipebench.KindCounter, At: at, Value: cpu},
			{Name: "memory_rss_bytes", Labels: lb, Kind: pipebench.KindGauge, At: at, Value: rss},
		}
	}
	if out := d.Add(pts(t0, 100, 1, 1<<20)); len(out) != 3 || out[2].Name != "memory_mb" || out[2].Value != 1 || out[0].Name != "receiver_accepted" || out[0].Value != 100 {
		t.Fatalf("first observation: %+v", out)
	}
	out := d.Add(pts(t0.Add(2*time.Second), 300, 2, 3<<20))
	got := map[string]float64{}
	for _, o := range out {
		got[o.Name] = o.Value
	}
	if got["receiver_accepted_rate"] != 100 || got["cpu_cores"] != 0.5 || got["memory_mb"] != 3 {
		t.Errorf("derived = %v", got)
	}
	// A counter reset (restart) starts over instead of going negative.
	out = d.Add(pts(t0.Add(3*time.Second), 50, 2.5, 3<<20))
	for _, o := range out {
		if o.Name == "receiver_accepted_rate" && o.Value != 50 {
			t.Errorf("after reset rate = %v, want 50", o.Value)
		}
	}
}

// The latency window covers only the sends since the last take.
func TestRecorderLatencyWindow(t *testing.T) {
	r := NewRecorder(1)
	t0 := time.Unix(1000, 0)
	rec := func(lat time.Duration) {
		r.Started(0, 1, 0)
		r.Record(0, pipebench.Sample{Scheduled: t0, Started: t0, Ended: t0.Add(lat), Count: 1})
	}
	if w := r.TakeWindow(); w.Count != 0 {
		t.Fatalf("empty window: %+v", w)
	}
	for i := 1; i <= 100; i++ {
		rec(time.Duration(i) * time.Millisecond)
	}
	w := r.TakeWindow()
	if w.Count != 100 || w.P50 < 49*time.Millisecond || w.P50 > 51*time.Millisecond || w.P99 < 98*time.Millisecond || w.P99 > 100*time.Millisecond {
		t.Errorf("first window: %+v", w)
	}
	rec(2 * time.Second)
	if w := r.TakeWindow(); w.Count != 1 || w.P50 < 1990*time.Millisecond {
		t.Errorf("second window holds only the new send: %+v", w)
	}
	if s := r.Stats(0); s.Latency.TotalCount() != 101 {
		t.Errorf("the phase histogram keeps every send: %d", s.Latency.TotalCount())
	}
}

// A send splits into the generator's own lateness (scheduled to start,
// lag), the wait before the request was written and the service time
// after it; latency is their sum, from the scheduled time, as wrk2 counts.
func TestRecorderSplitsWaitAndService(t *testing.T) {
	r := NewRecorder(1)
	t0 := time.Now()
	r.Started(0, 1, 3*time.Millisecond)
	r.Record(0, pipebench.Sample{
		Scheduled: t0, Started: t0.Add(3 * time.Millisecond), Ended: t0.Add(30 * time.Millisecond), Count: 1,
		Outcome: pipebench.Outcome{Written: t0.Add(10 * time.Millisecond)},
	})
	// A driver that does not report Written: no wait sample, service from
	// the start.
	r.Started(0, 1, 0)
	r.Record(0, pipebench.Sample{Scheduled: t0, Started: t0, Ended: t0.Add(20 * time.Millisecond), Count: 1})
	s := r.Stats(0)
	check := func(name string, got int64, want time.Duration) {
		t.Helper()
		if d := got - want.Microseconds(); d < -30 || d > 30 {
			t.Errorf("%s = %d µs, want %d µs", name, got, want.Microseconds())
		}
	}
	check("latency max", s.Latency.Max(), 30*time.Millisecond)
	check("latency min", s.Latency.Min(), 20*time.Millisecond)
	check("service max", s.Service.Max(), 20*time.Millisecond)
	check("wait max", s.Wait.Max(), 7*time.Millisecond)
	check("lag max", s.Lag.Max(), 3*time.Millisecond)
	if s.Wait.TotalCount() != 1 {
		t.Errorf("wait samples = %d, want 1 (the driver that did not tell has none)", s.Wait.TotalCount())
	}
}

// A send whose driver tells when the answer arrived ends its service time
// there; the time until the send returned is the generator's read lag,
// not the system's. An arrival outside [written, ended] is ignored.
func TestRecorderEndsServiceWhenTheAnswerArrived(t *testing.T) {
	r := NewRecorder(1)
	t0 := time.Now()
	r.Started(0, 1, 0)
	r.Record(0, pipebench.Sample{
		Scheduled: t0, Started: t0, Ended: t0.Add(25 * time.Millisecond), Count: 1,
		Outcome: pipebench.Outcome{Written: t0.Add(2 * time.Millisecond), Answered: t0.Add(22 * time.Millisecond)},
	})
	r.Started(0, 1, 0)
	r.Record(0, pipebench.Sample{
		Scheduled: t0, Started: t0, Ended: t0.Add(10 * time.Millisecond), Count: 1,
		Outcome: pipebench.Outcome{Written: t0.Add(2 * time.Millisecond), Answered: t0.Add(time.Millisecond)},
	})
	s := r.Stats(0)
	if got := s.Latency.Max(); got < 21980 || got > 22020 {
		t.Errorf("latency max %d µs, want 22,000 (to the arrival, not to the return at 25 ms)", got)
	}
	if got := s.Service.Max(); got < 19980 || got > 20020 {
		t.Errorf("service max %d µs, want 20,000 (written at 2 ms, arrived at 22 ms)", got)
	}
	if got := s.Latency.Min(); got < 9990 || got > 10010 {
		t.Errorf("latency min %d µs, want 10,000 (an arrival before the write is ignored)", got)
	}
	if s.ReadLag.TotalCount() != 1 || s.ReadLag.Max() < 2990 || s.ReadLag.Max() > 3010 {
		t.Errorf("read lag: %d samples, max %d µs; want one of 3,000", s.ReadLag.TotalCount(), s.ReadLag.Max())
	}
	tbl := Build(PhaseInput{Name: "p", Started: t0, Ended: t0.Add(time.Second), Sends: s}, nil)
	if v, ok := tbl.Get("read_lag.p99"); !ok || v < 2.99 || v > 3.01 {
		t.Errorf("read_lag.p99 = %v (%v), want 3 ms", v, ok)
	}
}

// Sends starting a second late, or answers waiting a second for the
// generator to read them, make a phase's numbers the generator's: each
// gives a reason; under a second gives none.
func TestValidityGeneratorLag(t *testing.T) {
	ph := pipebench.PlanPhase{Name: "p"}
	for _, tc := range []struct {
		kpi  string
		ms   float64
		want string
	}{
		{"schedule_lag.p99", 1500, "sends started 1500 ms late"},
		{"read_lag.p99", 1500, "pipebench fell behind reading answers: they waited 1500 ms at p99"},
		{"read_lag.p99", 900, ""},
	} {
		var pr pipebench.PhaseResult
		pr.Set(pipebench.KPI{Name: tc.kpi, Value: tc.ms, Unit: pipebench.UnitMillis})
		got := Validity(ph, &pr, SendStats{})
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%s %v ms: reasons %q, want none", tc.kpi, tc.ms, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s %v ms: reasons %q, want one with %q", tc.kpi, tc.ms, got, tc.want)
		}
	}
}

// Items held back because every connection or in-flight slot was busy,
// while pipebench acted later on average than the system answered, are
// pipebench's slowness; items held back because the system refused the
// connection, or its producer buffer was full, are the system's whatever
// pipebench's pace (a collector killed mid-run refuses every send: the run
// fails, it is not invalid).
func TestValiditySlowGeneratorOnlyForBusySlots(t *testing.T) {
	ph := pipebench.PlanPhase{Name: "p", Items: 1000}
	hist := func(us int64) *hdrhistogram.Histogram {
		h := hdrhistogram.New(1, 60_000_000, 3)
		for range 100 {
			h.RecordValue(us)
		}
		return h
	}
	for _, tc := range []struct {
		reason string
		want   bool
	}{
		{HeldMaxInFlight, true},
		{"no free connection", true},
		{"pipeline full", true},
		{"connection refused", false},
		{"unreachable", false},
		{"buffer full", false},
	} {
		s := SendStats{HeldBack: map[string]uint64{tc.reason: 400}, Lag: hist(3200), Service: hist(2600)}
		got := Validity(ph, &pipebench.PhaseResult{}, s)
		if named := len(got) == 1 && strings.Contains(got[0], "held its connections and in-flight slots longer than the system did"); named != tc.want || (!tc.want && len(got) != 0) {
			t.Errorf("400 held back for %q, sends 3.2 ms late against 2.6 ms of service: reasons %q, want pipebench's slowness: %v", tc.reason, got, tc.want)
		}
	}
}
