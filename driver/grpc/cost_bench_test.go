package grpcdriver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/payload"
)

// BenchmarkCallCost is what a unary call costs the generator, in figures a
// busy machine does not move: heap allocations and bytes a call, and the
// most goroutines alive at once, through the whole runner at a fixed rate
// (PIPEBENCH_BENCH_RATE, default 2000 calls/s, for PIPEBENCH_BENCH_DURATION,
// default 3s) against the benchmark's server in a child process (so that
// only the generator's allocations count), over a Unix socket and TCP. Run
// it under strace -c -f or callgrind for system calls and instructions a
// call:
//
//	go test -run '^$' -bench CallCost -benchtime 1x ./driver/grpc/
func BenchmarkCallCost(b *testing.B) {
	rate := 2000
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	dur := 3 * time.Second
	if v, err := time.ParseDuration(os.Getenv("PIPEBENCH_BENCH_DURATION")); err == nil && v > 0 {
		dur = v
	}
	sock := filepath.Join(b.TempDir(), "bench.sock")
	tcp, _ := startServerProcess(b, sock, "")
	reg := scenariotest.Registry(b, payload.MessageFactory(), grpcdriver.Factory())
	for _, ep := range []struct{ name, endpoint string }{{"uds", "unix://" + sock}, {"tcp", tcp}} {
		b.Run(ep.name, func(b *testing.B) {
			yaml := fmt.Sprintf(`
name: grpc-call-cost
target: {driver: grpc, endpoint: %q, method: pipebench.healthevents.v1.HealthEventService/Report, proto_files: [../../examples/healthevents.proto], connections: 4}
workload:
  generator: grpc-message
  message: {version: 1, events: [{node_name: "node-{{seq %% 100}}", sequence: "{{seq}}", severity: SEVERITY_FATAL}]}
phases:
  - {name: hold, duration: %s, rate: %d/s}
`, ep.endpoint, dur, rate)
			for b.Loop() {
				plan := scenariotest.Plan(b, reg, "bench.yaml", yaml)
				var peak atomic.Int64
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					t := time.NewTicker(10 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							if n := int64(runtime.NumGoroutine()); n > peak.Load() {
								peak.Store(n)
							}
						}
					}
				}()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				run := scenariotest.Bench(b, reg, plan, rate)
				runtime.ReadMemStats(&m1)
				close(stop)
				<-sampled
				calls := run.OK * run.Phase.Ended.Sub(run.Phase.Started).Seconds()
				if calls < 1 {
					b.Fatalf("no call answered: %v", run.Result.Manifest.Reasons)
				}
				b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/calls, "allocs/call")
				b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/calls, "B/call")
				b.ReportMetric(float64(peak.Load()), "goroutines-max")
				b.ReportMetric(run.CPU/calls*1e6, "cpu-µs/call")
				b.ReportMetric(calls, "calls")
			}
		})
	}
}

// BenchmarkSendChild is the driver alone, without the runner: closed-loop
// unary calls (Send) from 64 goroutines to the benchmark's server in a
// child process over TCP, 4 connections; with -benchmem it counts the
// generator's allocations only. Under callgrind (valgrind runs the child
// natively), the difference between two -benchtime counts is the
// instructions a call costs, whatever the machine's load.
func BenchmarkSendChild(b *testing.B) {
	sock := filepath.Join(b.TempDir(), "bench.sock")
	tcp, _ := startServerProcess(b, sock, "")
	d, err := grpcdriver.New(grpcdriver.Config{Endpoint: tcp, Method: "pipebench.healthevents.v1.HealthEventService/Report",
		ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: pipebench.Duration(5 * time.Second), Connections: 4}, "")
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	g, err := payload.NewMessage(map[string]any{"version": uint64(1), "events": []any{map[string]any{"node_name": "node-{{seq % 100}}", "sequence": "{{seq}}", "severity": "SEVERITY_FATAL"}}})
	if err != nil {
		b.Fatal(err)
	}
	var seq atomic.Uint64
	b.SetParallelism(64 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			bt := g.Next(n, 1, time.Now())
			if o := d.Send(context.Background(), &bt); o.Class != pipebench.ClassOK {
				b.Errorf("%+v", o)
				return
			}
			g.Release(&bt)
		}
	})
}
