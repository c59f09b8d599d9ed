package grpcdriver

import (
	"context"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// BenchmarkSend is the driver alone: closed-loop unary calls from
// GOMAXPROCS*64 goroutines to the in-process test server over a Unix
// socket (server and client share the CPUs). It reports calls/s.
func BenchmarkSend(b *testing.B) {
	s := startServer(b, "unix")
	d, err := New(Config{Endpoint: s.target, Method: "pipebench.healthevents.v1.HealthEventService/Report",
		ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: pipebench.Duration(5 * time.Second), Connections: 4}, "")
	if err != nil {
		b.Fatal(err)
	}
	testutil.Start(b, d.Start, d.Shutdown)
	g := newGen(b, map[string]any{"version": uint64(1), "events": []any{map[string]any{"node_name": "node-{{seq % 100}}", "sequence": "{{seq}}", "severity": "SEVERITY_FATAL"}}})
	b.SetParallelism(64)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bt := g.Next(1, 1, time.Now())
			if o := d.Send(context.Background(), &bt); o.Class != pipebench.ClassOK {
				b.Errorf("%+v", o)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
