package schedule

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipebench/pipebench"
)

func rate(r float64) pipebench.Rate          { return pipebench.Rate(r) }
func dur(d time.Duration) pipebench.Duration { return pipebench.Duration(d) }

func constant(r float64, d time.Duration) pipebench.PlanPhase {
	return pipebench.PlanPhase{Duration: dur(d), BatchSize: 1, Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: rate(r)}}
}

func mustNew(t *testing.T, ph pipebench.PlanPhase) *Pacer {
	t.Helper()
	p, err := New(ph)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPacerProfiles(t *testing.T) {
	cases := []struct {
		name  string
		ph    pipebench.PlanPhase
		sends uint64
		at    map[uint64]time.Duration // send -> due offset
		due   map[time.Duration]uint64 // elapsed -> sends due
	}{
		{
			name: "1/s", ph: constant(1, 10*time.Second), sends: 10,
			at:  map[uint64]time.Duration{0: 0, 1: time.Second, 9: 9 * time.Second},
			due: map[time.Duration]uint64{0: 1, 999 * time.Millisecond: 1, time.Second: 2, 20 * time.Second: 10},
		},
		{
			name: "0.5/s", ph: constant(0.5, 10*time.Second), sends: 5,
			at:  map[uint64]time.Duration{0: 0, 1: 2 * time.Second, 4: 8 * time.Second},
			due: map[time.Duration]uint64{1900 * time.Millisecond: 1, 2 * time.Second: 2},
		},
		{
			name: "1000/s", ph: constant(1000, 2*time.Second), sends: 2000,
			at:  map[uint64]time.Duration{1: time.Millisecond, 1999: 1999 * time.Millisecond},
			due: map[time.Duration]uint64{500 * time.Millisecond: 501},
		},
		{
			name: "1e6/s", ph: constant(1e6, time.Second), sends: 1000000,
			at: map[uint64]time.Duration{999999: 999999 * time.Microsecond},
		},
		{
			name: "batch 10 divides the send rate", ph: func() pipebench.PlanPhase { p := constant(1000, time.Second); p.BatchSize = 10; return p }(),
			sends: 100, at: map[uint64]time.Duration{1: 10 * time.Millisecond},
		},
		{
			name: "ramp 0 to 10/s over 10s: 50 sends, quadratic", ph: pipebench.PlanPhase{Duration: dur(10 * time.Second), BatchSize: 1,
				Profile: pipebench.Profile{Kind: pipebench.ProfileRamp, From: 0, To: 10}},
			sends: 50,
			// N(t) = t²/2 -> send n at sqrt(2n)
			at: map[uint64]time.Duration{0: 0, 2: 2 * time.Second, 8: 4 * time.Second, 18: 6 * time.Second},
		},
		{
			name: "steps", ph: pipebench.PlanPhase{BatchSize: 1, Profile: pipebench.Profile{Kind: pipebench.ProfileSteps, Steps: []pipebench.Step{
				{Rate: 10, Duration: dur(time.Second)}, {Rate: 0, Duration: dur(time.Second)}, {Rate: 100, Duration: dur(time.Second)}}}},
			sends: 110,
			at:    map[uint64]time.Duration{9: 900 * time.Millisecond, 10: 2 * time.Second, 11: 2010 * time.Millisecond},
			due:   map[time.Duration]uint64{1500 * time.Millisecond: 10},
		},
		{
			name: "burst: 100/s with 1000/s for 1s every 5s, over 10s", ph: pipebench.PlanPhase{Duration: dur(10 * time.Second), BatchSize: 1,
				Profile: pipebench.Profile{Kind: pipebench.ProfileBurst, Rate: 100, Burst: &pipebench.Burst{Rate: 1000, For: dur(time.Second), Every: dur(5 * time.Second)}}},
			sends: 2*1000 + 2*400,
			at:    map[uint64]time.Duration{999: 999 * time.Millisecond, 1000: time.Second, 1400: 5 * time.Second},
		},
		{
			name: "stagger: 100/s reached after 2s", ph: func() pipebench.PlanPhase {
				p := constant(100, 4*time.Second)
				p.Stagger = dur(2 * time.Second)
				return p
			}(),
			sends: 300, // 100 in the stagger (triangle) + 200 after
			at:    map[uint64]time.Duration{0: 0, 25: time.Second, 100: 2 * time.Second, 200: 3 * time.Second},
		},
		{
			name: "rate 0", ph: constant(0, 5*time.Second), sends: 0,
			due: map[time.Duration]uint64{time.Second: 0},
		},
		{
			name: "blast", ph: pipebench.PlanPhase{Duration: dur(time.Minute), BatchSize: 2, Profile: pipebench.Profile{Kind: pipebench.ProfileBlast, Count: 751, Workers: 50}},
			sends: 376, at: map[uint64]time.Duration{375: 0},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustNew(t, c.ph)
			if p.Sends() != c.sends {
				t.Fatalf("Sends = %d, want %d", p.Sends(), c.sends)
			}
			for n, want := range c.at {
				got, ok := p.At(n)
				if !ok || absDiff(got, want) > time.Microsecond {
					t.Errorf("At(%d) = %v %v, want %v", n, got, ok, want)
				}
			}
			if _, ok := p.At(c.sends); ok {
				t.Errorf("At(%d) past the last send reported ok", c.sends)
			}
			for el, want := range c.due {
				if got := p.Due(el); got != want {
					t.Errorf("Due(%v) = %d, want %d", el, got, want)
				}
			}
			// Monotone schedule.
			var prev time.Duration
			for n := uint64(0); n < p.Sends(); n += 1 + p.Sends()/1000 {
				at, _ := p.At(n)
				if at < prev {
					t.Fatalf("At(%d) = %v < previous %v", n, at, prev)
				}
				prev = at
			}
		})
	}
}

func TestPacerRateAt(t *testing.T) {
	p := mustNew(t, pipebench.PlanPhase{Duration: dur(10 * time.Second), BatchSize: 5,
		Profile: pipebench.Profile{Kind: pipebench.ProfileRamp, From: 100, To: 200}})
	if r := p.RateAt(5 * time.Second); r < 149.99 || r > 150.01 {
		t.Errorf("RateAt(5s) = %v items/s, want 150", r)
	}
	if r := p.RateAt(11 * time.Second); r != 0 {
		t.Errorf("RateAt past the end = %v", r)
	}
}

func TestPacerRejectsBadRates(t *testing.T) {
	for _, ph := range []pipebench.PlanPhase{
		constant(-1, time.Second),
		{Duration: dur(time.Second), Profile: pipebench.Profile{Kind: pipebench.ProfileBurst, Rate: 1}},
		{Duration: dur(time.Second), Profile: pipebench.Profile{Kind: "zigzag"}},
	} {
		if _, err := New(ph); err == nil {
			t.Errorf("New(%+v) accepted", ph.Profile)
		}
	}
}

// In virtual time: 40,000/s for 2 s, every send emitted once, in order, never
// before it is due, each with its scheduled time.
func TestRunVirtualTime40k(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, constant(40000, 2*time.Second))
		start := time.Now()
		var next uint64
		var maxLate time.Duration
		n := RunWith(context.Background(), p, start, Coarse, func(i uint64, at time.Time) bool {
			if i != next {
				t.Fatalf("send %d emitted, want %d", i, next)
			}
			next++
			want, _ := p.At(i)
			if !at.Equal(start.Add(want)) {
				t.Fatalf("send %d scheduled %v, want %v", i, at.Sub(start), want)
			}
			now := time.Now()
			if now.Before(at) {
				t.Fatalf("send %d emitted %v early", i, at.Sub(now))
			}
			if late := now.Sub(at); late > maxLate {
				maxLate = late
			}
			return true
		})
		if n != 80000 || next != 80000 {
			t.Fatalf("emitted %d (%d), want 80000", n, next)
		}
		if maxLate > 0 {
			t.Errorf("virtual time: a send was emitted %v late", maxLate)
		}
	})
}

func TestRunStopsOnCancelAndOnFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, constant(10, time.Hour))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n := RunWith(ctx, p, time.Now(), Coarse, func(uint64, time.Time) bool { return true })
		if n < 100 || n > 101 {
			t.Errorf("after 10s at 10/s emitted %d, want 100 or 101", n)
		}
		n = RunWith(context.Background(), p, time.Now(), Coarse, func(i uint64, _ time.Time) bool { return i < 4 })
		if n != 5 {
			t.Errorf("stopping at the 5th send emitted %d", n)
		}
	})
}

// BenchmarkRun100k drives a pacer at 100,000 sends/s in real time for one
// second and reports the achieved rate and how late sends were emitted.
func BenchmarkRun100k(b *testing.B) {
	for b.Loop() {
		p, _ := New(constant(100000, time.Second))
		start := time.Now()
		lates := make([]time.Duration, 0, 100000)
		n := Run(context.Background(), p, start, func(_ uint64, at time.Time) bool {
			lates = append(lates, time.Since(at))
			return true
		})
		el := time.Since(start).Seconds()
		var max time.Duration
		slices.Sort(lates)
		if len(lates) > 0 {
			max = lates[len(lates)-1]
		}
		b.ReportMetric(float64(n)/el, "sends/s")
		b.ReportMetric(float64(lates[len(lates)*99/100].Microseconds()), "p99-late-µs")
		b.ReportMetric(float64(max.Microseconds()), "max-late-µs")
	}
}

func absDiff(a, b time.Duration) time.Duration {
	if a > b {
		return a - b
	}
	return b - a
}

// In virtual time: 600 producers every 3 s, aligned, emit all 600 at each
// period's start and none in between; staggered, one every 5 ms.
func TestRunProducers(t *testing.T) {
	for _, c := range []struct {
		align   string
		atStart uint64 // sends emitted at each period's start
	}{{pipebench.AlignAligned, 600}, {pipebench.AlignStaggered, 1}} {
		synctest.Test(t, func(t *testing.T) {
			ph := pipebench.PlanPhase{Name: "p", Duration: pipebench.Duration(9 * time.Second), BatchSize: 1,
				Profile: pipebench.Profile{Kind: pipebench.ProfileProducers, Count: 600, Every: pipebench.Duration(3 * time.Second), Align: c.align}}
			p := mustNew(t, ph)
			start := time.Now()
			perInstant := map[time.Duration]uint64{}
			n := RunWith(context.Background(), p, start, Coarse, func(i uint64, at time.Time) bool {
				if now := time.Now(); now.Before(at) || now.Sub(at) > 0 {
					t.Fatalf("send %d emitted at %v, due %v", i, now.Sub(start), at.Sub(start))
				}
				perInstant[at.Sub(start)]++
				return true
			})
			if n != 1800 {
				t.Fatalf("%s: emitted %d, want 1,800", c.align, n)
			}
			for _, period := range []time.Duration{0, 3 * time.Second, 6 * time.Second} {
				if perInstant[period] != c.atStart {
					t.Errorf("%s: %d sends at %s, want %d", c.align, perInstant[period], period, c.atStart)
				}
			}
			if c.align == pipebench.AlignStaggered && perInstant[5*time.Millisecond] != 1 {
				t.Errorf("staggered: no send at 5 ms")
			}
		})
	}
}

// In virtual time: run with a flush calls it after the sends of each
// wake-up, before it waits, so no send is held across a wait, and once
// more before it returns.
func TestRunFlushesEachWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustNew(t, constant(1000, time.Second))
		var held, flushes, wakeUps int
		var last time.Time
		n := run(context.Background(), p, time.Now(), time.Time{}, Coarse, func(uint64, time.Time) bool {
			if now := time.Now(); !now.Equal(last) {
				if held != 0 {
					t.Fatalf("%d sends of the wake-up before were not flushed before the wait", held)
				}
				last = now
				wakeUps++
			}
			held++
			return true
		}, func() {
			flushes++
			held = 0
		})
		if n != 1000 || held != 0 {
			t.Fatalf("emitted %d, %d held at the end", n, held)
		}
		if flushes < wakeUps {
			t.Errorf("%d flushes for %d wake-ups", flushes, wakeUps)
		}
	})
}

// With a tick, the pacer wakes up at most once a tick and emits the sends
// due by then together, each with its own scheduled time, never early and
// at most a tick late (virtual time).
func TestRunTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ph := constant(10000, time.Second)
		ph.Tick = pipebench.Duration(time.Millisecond)
		p := mustNew(t, ph)
		start := time.Now()
		var wakeUps int
		var last time.Time
		var maxLate time.Duration
		n := RunWith(context.Background(), p, start, Coarse, func(i uint64, at time.Time) bool {
			want, _ := p.At(i)
			if !at.Equal(start.Add(want)) {
				t.Fatalf("send %d scheduled %v, want %v", i, at.Sub(start), want)
			}
			now := time.Now()
			if now.Before(at) {
				t.Fatalf("send %d emitted %v early", i, at.Sub(now))
			}
			maxLate = max(maxLate, now.Sub(at))
			if !now.Equal(last) {
				if !last.IsZero() && now.Sub(last) < time.Millisecond {
					t.Fatalf("woke up %v after the wake-up before, within the 1ms tick", now.Sub(last))
				}
				last = now
				wakeUps++
			}
			return true
		})
		if n != 10000 {
			t.Fatalf("emitted %d, want 10000", n)
		}
		if wakeUps > 1001 || wakeUps < 990 {
			t.Errorf("%d wake-ups in 1 s with a 1ms tick, want about 1,000", wakeUps)
		}
		if maxLate >= time.Millisecond {
			t.Errorf("a send left %v late, want under the 1ms tick", maxLate)
		}
	})
}

// The real clock with a tick: however the machine is loaded, the pacer
// wakes up no more often than once a tick.
func TestRunTickPrecise(t *testing.T) {
	ph := constant(20000, 300*time.Millisecond)
	ph.Tick = pipebench.Duration(2 * time.Millisecond)
	p := mustNew(t, ph)
	var flushes int
	n := RunFlushed(context.Background(), p, time.Now(), time.Time{}, func(uint64, time.Time) bool { return true }, func() { flushes++ })
	if n != 6000 {
		t.Fatalf("emitted %d, want 6000", n)
	}
	// One flush a wake-up and one at the end; 300 ms hold 150 ticks.
	if flushes > 152 {
		t.Errorf("%d wake-ups in 300 ms with a 2ms tick, want at most 151", flushes)
	}
}
