package promrwdriver

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// cpuSeconds is this process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkGenerateAndEncode is the generator side alone: otlp-metrics
// batches of 500 points (10 attributes) turned into compressed
// remote-write requests on one goroutine, samples per CPU-second of the
// process. pdata is the conversion through pmetric.Metrics (the driver's
// path before the direct one, and still its fallback); direct reads the
// generator's OTLP wire bytes; v2 is direct into a 2.0 request. Run with
// -count to interleave them.
func BenchmarkGenerateAndEncode(b *testing.B) {
	for _, c := range []struct {
		name     string
		v2, pdat bool
	}{{"pdata", false, true}, {"direct", false, false}, {"direct-v2", true, false}} {
		b.Run(c.name, func(b *testing.B) {
			gen, _ := otlpgen.MetricsFactory().New(&otlpgen.MetricsConfig{Producers: 20, Attributes: 10, Type: "gauge"}, pipebench.Env{})
			rel := gen.(pipebench.Releaser)
			w := &work{v2: c.v2, names: map[string]string{}, bnames: map[string][]byte{}}
			n := 0
			cpu := cpuSeconds()
			seq := uint64(1)
			for b.Loop() {
				batch := gen.Next(seq, 500, time.Now())
				seq += 500
				enc := batch.Data.(*otlpgen.Encoded)
				var s int
				if c.pdat {
					md, err := enc.Metrics()
					if err != nil {
						b.Fatal(err)
					}
					_, s = w.encode(md)
				} else {
					var err error
					if _, s, err = w.encodeWire(enc.Body); err != nil {
						b.Fatal(err)
					}
				}
				rel.Release(&batch)
				n += s
			}
			b.ReportMetric(float64(n)/(cpuSeconds()-cpu), "samples/cpu-s")
		})
	}
}

type countArrivals struct{ n atomic.Int64 }

func (a *countArrivals) Arrive(uint64, time.Time, time.Time) { a.n.Add(1) }
func (a *countArrivals) Faulted(int)                         {}
func (a *countArrivals) Unmatched(int)                       {}

// BenchmarkDriverToSink load-tests pipebench's own remote-write sink with
// the driver, both in this process over loopback: samples/s delivered,
// and samples per CPU-second of the whole process (generator, driver and
// sink together; the generator's share alone is
// BenchmarkGenerateAndEncode).
func BenchmarkDriverToSink(b *testing.B) {
	ctx := context.Background()
	a := &countArrivals{}
	sink := promrwsink.New(*promrwsink.DefaultConfig())
	testutil.Start(b, func(ctx context.Context) error { return sink.Start(ctx, a) }, sink.Shutdown)
	cfg := DefaultConfig()
	cfg.Connections = 8
	d, err := New(*cfg, sink.Endpoint())
	if err != nil {
		b.Fatal(err)
	}
	testutil.Start(b, d.Start, d.Shutdown)
	gen, _ := otlpgen.MetricsFactory().New(nil, pipebench.Env{})
	var seq atomic.Uint64
	b.SetParallelism(4)
	cpu := cpuSeconds()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s := seq.Add(500) - 499
			batch := gen.Next(s, 500, time.Now())
			if o := d.Send(ctx, &batch); o.Class != pipebench.ClassOK {
				b.Errorf("send: %+v", o)
				return
			}
		}
	})
	b.StopTimer()
	got := float64(a.n.Load())
	b.ReportMetric(got/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(got/(cpuSeconds()-cpu), "samples/cpu-s")
}
