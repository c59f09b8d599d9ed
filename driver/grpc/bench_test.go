package grpcdriver_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/dynamicpb"

	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	"github.com/pipebench/pipebench/internal/proc/residency"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
)

// BenchmarkUnaryRate holds a fixed rate of unary calls (10k, 20k and 40k
// calls/s; PIPEBENCH_BENCH_RATES="10000,20000" to choose) for
// PIPEBENCH_BENCH_DURATION (default 5s) through the whole runner, against a
// trivial server of the example HealthEventService in a child process, over
// a Unix socket and over TCP (PIPEBENCH_BENCH_CONNS connections, default
// 4). It reports achieved/target, the generator's CPU (this process's
// user+sys seconds per second of load) and the calls answered OK per
// CPU-second it used, which stays comparable on a busy machine.
// Run it with:
//
//	taskset -c 0 go test -run '^$' -bench UnaryRate -benchtime 1x ./driver/grpc/
//
// (taskset pins the generator to one core; the server child then runs on
// the other.) When ghz is on PATH, each case is followed by ghz at the same
// target rate and connections, pinned to the same core, in the same pass.
// The collector runs as under `pipebench run` (residency.Collector; GOGC
// set in the environment wins).
func BenchmarkUnaryRate(b *testing.B) {
	residency.Collector()
	rates := []int{10000, 20000, 40000}
	if v := os.Getenv("PIPEBENCH_BENCH_RATES"); v != "" {
		rates = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				rates = append(rates, n)
			}
		}
	}
	dur := 5 * time.Second
	if v, err := time.ParseDuration(os.Getenv("PIPEBENCH_BENCH_DURATION")); err == nil && v > 0 {
		dur = v
	}
	conns := 4
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_BENCH_CONNS")); err == nil && v > 0 {
		conns = v
	}
	sock := filepath.Join(b.TempDir(), "bench.sock")
	tcp, _ := startServerProcess(b, sock, "")
	reg := scenariotest.Registry(b, payload.MessageFactory(), grpcdriver.Factory())
	ghz, _ := exec.LookPath("ghz")
	if ghz == "" {
		b.Log("ghz is not on PATH: pipebench alone (go install github.com/bojand/ghz/cmd/ghz@v0.120.0 to compare)")
	}
	for _, ep := range []struct{ name, endpoint string }{{"uds", "unix://" + sock}, {"tcp", tcp}} {
		for _, rate := range rates {
			// pipebench, then ghz at the same target rate and connections:
			// one interleaved pass (A B A B ...) over the rates.
			b.Run(fmt.Sprintf("%s/%d/pipebench", ep.name, rate), func(b *testing.B) {
				yaml := fmt.Sprintf(`
name: grpc-unary-bench
target: {driver: grpc, endpoint: %q, method: pipebench.healthevents.v1.HealthEventService/Report, proto_files: [../../examples/healthevents.proto], connections: %d}
workload:
  generator: grpc-message
  message: {version: 1, events: [{node_name: "node-{{seq %% 100}}", sequence: "{{seq}}", severity: SEVERITY_FATAL}]}
phases:
  - {name: hold, duration: %s, rate: %d/s}
`, ep.endpoint, conns, dur, rate)
				for b.Loop() {
					plan := scenariotest.Plan(b, reg, "bench.yaml", yaml)
					run := scenariotest.Bench(b, reg, plan, rate)
					p := run.Phase
					b.ReportMetric(run.OK/float64(rate)*100, "achieved%")
					b.ReportMetric(run.OK*p.Ended.Sub(p.Started).Seconds()/max(run.CPU, 1e-9), "calls/cpu-s")
					b.Logf("status %s %v; GOMAXPROCS %d", run.Result.Manifest.Status, run.Result.Manifest.Reasons, runtime.GOMAXPROCS(0))
				}
			})
			if ghz == "" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d/ghz", ep.name, rate), func(b *testing.B) {
				for b.Loop() {
					runGhz(b, ghz, ep.endpoint, rate, conns, dur)
				}
			})
		}
	}
}

// runGhz runs ghz against endpoint at rate calls/s for dur with conns
// connections (and 50 concurrent workers per connection, so that the rate
// and not the concurrency limits it), on the generator's core when taskset
// can put it there, and reports what it achieved and the CPU it used.
func runGhz(b *testing.B, ghz, endpoint string, rate, conns int, dur time.Duration) {
	args := []string{ghz, "--insecure", "--proto", "../../examples/healthevents.proto",
		"--call", "pipebench.healthevents.v1.HealthEventService/Report",
		"-d", `{"version":1,"events":[{"node_name":"node-1","sequence":1,"severity":"SEVERITY_FATAL"}]}`,
		"--rps", strconv.Itoa(rate), "-z", dur.String(), "--connections", strconv.Itoa(conns), "-c", strconv.Itoa(50 * conns),
		"--cpus", "1", "-O", "json", endpoint}
	if ts, err := exec.LookPath("taskset"); err == nil && exec.Command(ts, "-c", "0", "true").Run() == nil {
		args = append([]string{ts, "-c", "0"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("ghz: %v\n%s", err, errb.String())
	}
	wall := time.Since(start).Seconds()
	var rep struct {
		Count        int64            `json:"count"`
		Rps          float64          `json:"rps"`
		StatusCodes  map[string]int64 `json:"statusCodeDistribution"`
		Distribution []struct {
			Percentage int
			Latency    float64
		} `json:"latencyDistribution"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		b.Fatalf("ghz output: %v\n%.300s", err, out.String())
	}
	okRate := float64(rep.StatusCodes["OK"]) / dur.Seconds()
	cpu := 0.0
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = scenariotest.Seconds(ru.Utime) + scenariotest.Seconds(ru.Stime)
	}
	b.ReportMetric(float64(rate), "target/s")
	b.ReportMetric(rep.Rps, "sent/s")
	b.ReportMetric(okRate, "ok/s")
	b.ReportMetric(okRate/float64(rate)*100, "achieved%")
	b.ReportMetric(cpu/wall, "cpu-cores")
	b.ReportMetric(float64(rep.StatusCodes["OK"])/max(cpu, 1e-9), "calls/cpu-s")
	for _, d := range rep.Distribution {
		switch d.Percentage {
		case 50:
			b.ReportMetric(d.Latency/1e6, "p50-ms")
		case 99:
			b.ReportMetric(d.Latency/1e6, "p99-ms")
		}
	}
}

// startServerProcess runs the trivial server in a child process (this test
// binary again, on CPU 1 when taskset can put it there), listening on the
// Unix socket sock and on a TCP port it returns, with the process. With
// arrivals set, the child writes there when each call arrived (Unix
// nanoseconds, 8 bytes each, little-endian) once it ends. The child exits
// when its stdin closes (at the test's end, or when stop is called).
//
// PIPEBENCH_BENCH_SERVER=host:port,/path.sock names a server already
// running (TestHelperGRPCServer started by hand, or by a script that
// counts the generator's system calls alone): the benchmarks use it
// instead, and the process is nil.
func startServerProcess(tb testing.TB, sock, arrivals string) (string, *serverProcess) {
	tb.Helper()
	if v := os.Getenv("PIPEBENCH_BENCH_SERVER"); v != "" && arrivals == "" {
		addr, s, ok := strings.Cut(v, ",")
		if !ok {
			tb.Fatalf("PIPEBENCH_BENCH_SERVER=%q: write host:port,/path.sock", v)
		}
		if b, ok := tb.(*testing.B); ok {
			b.Logf("the server at %s and %s, started outside", addr, s)
		}
		if err := os.Symlink(s, sock); err != nil {
			tb.Fatal(err)
		}
		return addr, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{os.Args[0], "-test.run=^TestHelperGRPCServer$"}
	if ts, err := exec.LookPath("taskset"); err == nil && exec.Command(ts, "-c", "1", "true").Run() == nil {
		args = append([]string{ts, "-c", "1"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "PIPEBENCH_HELPER_GRPC="+addr+","+sock, "PIPEBENCH_HELPER_ARRIVALS="+arrivals)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, stdin: stdin}
	tb.Cleanup(p.stop)
	testutil.Eventually(tb, 20*time.Second, func() bool {
		c1, err1 := net.Dial("tcp", addr)
		c2, err2 := net.Dial("unix", sock)
		if c1 != nil {
			c1.Close()
		}
		if c2 != nil {
			c2.Close()
		}
		return err1 == nil && err2 == nil
	}, "the helper server did not take connections on %s and %s", addr, sock)
	return addr, p
}

// serverProcess is the helper server's process.
type serverProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	once  sync.Once
}

// stop ends the process (running it again first, if it was stopped) and
// waits for it.
func (p *serverProcess) stop() {
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.stdin.Close()
		p.cmd.Wait()
	})
}

// TestHelperGRPCServer is not a test: it is the benchmark's server process,
// and skips unless started as one. It decodes each request and answers an
// empty acknowledgement.
func TestHelperGRPCServer(t *testing.T) {
	spec := os.Getenv("PIPEBENCH_HELPER_GRPC")
	if spec == "" {
		t.Skip("helper process for BenchmarkUnaryRate")
	}
	addr, sock, _ := strings.Cut(spec, ",")
	_, md := grpcdriver.HealthSchema(t)
	out := os.Getenv("PIPEBENCH_HELPER_ARRIVALS")
	var mu sync.Mutex
	var arrivals []byte
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(md.Parent().FullName()),
		Methods: []grpc.MethodDesc{{MethodName: "Report", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			if out != "" {
				mu.Lock()
				arrivals = binary.LittleEndian.AppendUint64(arrivals, uint64(time.Now().UnixNano()))
				mu.Unlock()
			}
			in := dynamicpb.NewMessage(md.Input())
			if err := dec(in); err != nil {
				return nil, err
			}
			return dynamicpb.NewMessage(md.Output()), nil
		}}},
	}, nil)
	lt, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	lu, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// The bound address, for a script that asked for port 0.
	fmt.Printf("LISTEN %s\n", lt.Addr())
	go srv.Serve(lt)
	go srv.Serve(lu)
	io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	srv.Stop()
	if out != "" {
		mu.Lock()
		defer mu.Unlock()
		if err := os.WriteFile(out, arrivals, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
