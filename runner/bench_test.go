package runner_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// benchRate and benchDuration size BenchmarkOpenModel; override with
// PIPEBENCH_BENCH_RATE and PIPEBENCH_BENCH_DURATION (e.g. 40000 and 10s; or
// 5m for the flat-RSS check).
func benchParams() (int, time.Duration) {
	rate, dur := 40000, 10*time.Second
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	if v, err := time.ParseDuration(os.Getenv("PIPEBENCH_BENCH_DURATION")); err == nil && v > 0 {
		dur = v
	}
	return rate, dur
}

// BenchmarkOpenModel holds an open-model rate (40,000 requests/s by
// default) for a while against a trivial fasthttp server on loopback and
// reports the achieved/target ratio, the generator's CPU (this process's
// user+sys seconds per second of load, server included), the latency
// quantiles and the peak RSS. Run it with:
//
//	taskset -c 0 go test -run '^$' -bench OpenModel -benchtime 1x ./runner/
//
// (taskset pins the generator to one core; the server child then runs on
// the other.) Add -cpuprofile to see where a request's CPU goes.
func BenchmarkOpenModel(b *testing.B) {
	rate, dur := benchParams()
	conns, pipeline := 256, 0
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_BENCH_PIPELINE")); err == nil && v > 0 {
		pipeline, conns = v, 32
	}
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_BENCH_CONNS")); err == nil && v > 0 {
		conns = v
	}
	maxInFlight := 10000 // the scenario default
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_BENCH_MAX_IN_FLIGHT")); err == nil && v > 0 {
		maxInFlight = v
	}
	// PIPEBENCH_BENCH_ADDR aims at a server already running (nginx pinned
	// to the other core, as bench/wrk.sh starts it) instead of the helper.
	addr := os.Getenv("PIPEBENCH_BENCH_ADDR")
	if addr == "" {
		addr = startServerProcess(b)
	}
	reg := registry(b)
	yaml := fmt.Sprintf(`
name: open-model-bench
target: {driver: http, url: "http://%s/", connections: %d, pipeline: %d}
workload: {generator: event, size: 64}
phases:
  - {name: hold, duration: %s, rate: %d/s, max_in_flight: %d}
`, addr, conns, pipeline, dur, rate, maxInFlight)
	for b.Loop() {
		plan := compile(b, reg, yaml)
		run := scenariotest.Bench(b, reg, plan, rate)
		res, p := run.Result, run.Phase
		b.ReportMetric(run.Sent/float64(rate)*100, "achieved%")
		b.ReportMetric(float64(run.MaxRSS)/1024, "maxrss-MB")
		var errs []string
		for _, k := range p.KPIs {
			if k.Name == "errors" && k.Value > 0 {
				errs = append(errs, fmt.Sprintf("%v=%v", k.Labels, k.Value))
			}
		}
		b.Logf("status %s %v; errors %v; GOMAXPROCS %d", res.Manifest.Status, res.Manifest.Reasons, errs, runtime.GOMAXPROCS(0))
	}
}

// startServerProcess runs a trivial fasthttp server in a child process (this
// test binary again), so that the benchmark's rusage is the generator's
// alone. The child exits when its stdin closes.
func startServerProcess(b *testing.B) string {
	b.Helper()
	addr := testutil.FreeAddr(b)
	// With taskset, the server gets the second core to itself, as in the
	// peers' method: run the benchmark itself under `taskset -c 0`.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHTTPServer$")
	// runtime.NumCPU counts the CPUs this process may use, which is one
	// under `taskset -c 0`: ask taskset whether CPU 1 exists instead.
	if ts, err := exec.LookPath("taskset"); err == nil && exec.Command(ts, "-c", "1", "true").Run() == nil {
		cmd = exec.Command(ts, "-c", "1", os.Args[0], "-test.run=^TestHelperHTTPServer$")
	}
	cmd.Env = append(os.Environ(), "PIPEBENCH_HELPER_SERVER="+addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	testutil.Eventually(b, 10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "helper server did not start")
	return addr
}

// TestHelperHTTPServer is not a test: it is the benchmark's server process,
// and skips unless started as one.
func TestHelperHTTPServer(t *testing.T) {
	addr := os.Getenv("PIPEBENCH_HELPER_SERVER")
	if addr == "" {
		t.Skip("helper process for BenchmarkOpenModel")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(200) }}
	go srv.Serve(ln)
	io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	srv.Shutdown()
}
