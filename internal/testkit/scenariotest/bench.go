package scenariotest

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/runner"
)

// BenchRun is what Bench measured of one run.
type BenchRun struct {
	Result *pipebench.Result
	// Phase is the Result's first phase; Sent and OK its sent_rate and
	// accepted_rate.
	Phase    *pipebench.PhaseResult
	Sent, OK float64
	// CPU is the user+system seconds this process used during the run,
	// Wall the run's seconds, and MaxRSS this process's peak RSS in KiB
	// after it.
	CPU, Wall float64
	MaxRSS    int64
}

// Bench runs plan with reg once for a benchmark aiming at rate items/s and
// reports, of its first phase, the target rate (target/s), what was sent
// and accepted per second (sent/s, ok/s), this process's CPU per second of
// the run (cpu-cores) and the latency's p50 and p99 (p50-ms, p99-ms). The
// runner's error fails the benchmark.
func Bench(b *testing.B, reg *pipebench.Registry, plan pipebench.Plan, rate int) BenchRun {
	b.Helper()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	res, err := runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg})
	wall := time.Since(start).Seconds()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err != nil {
		b.Fatal(err)
	}
	p := &res.Phases[0]
	sent, _ := p.Get("sent_rate")
	ok, _ := p.Get("accepted_rate")
	p50, _ := p.Get("latency.p50")
	p99, _ := p.Get("latency.p99")
	cpu := Seconds(after.Utime) + Seconds(after.Stime) - Seconds(before.Utime) - Seconds(before.Stime)
	b.ReportMetric(float64(rate), "target/s")
	b.ReportMetric(sent, "sent/s")
	b.ReportMetric(ok, "ok/s")
	b.ReportMetric(cpu/wall, "cpu-cores")
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	return BenchRun{Result: res, Phase: p, Sent: sent, OK: ok, CPU: cpu, Wall: wall, MaxRSS: after.Maxrss}
}

// Seconds is t in seconds.
func Seconds(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
