package truth_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/schedule"
)

// server holds every request for hold and answers every failEvery-th with
// 503; it counts requests and records in µs the truth of each: from when
// the request reached the server's socket (the kernel's receive timestamp,
// on Linux) to the write of its answer, so that the server's own delays
// (its scheduler, its timers) are in the truth and only the loopback is
// not. A server in another process (PIPEBENCH_TRUTH_SERVER_CPU) is reached
// at addr and asked for its truth at ctl/truth.
type server struct {
	hold      time.Duration
	failEvery uint64
	n, failed atomic.Uint64
	mu        sync.Mutex
	truth     *hdrhistogram.Histogram
	addr, ctl string
	child     bool
}

// TestMain runs the truth server alone when this binary is started as
// one (PIPEBENCH_TRUTH_CHILD=HOLD,EVERY): it prints its address and serves
// until its standard input closes.
func TestMain(m *testing.M) {
	if v := os.Getenv("PIPEBENCH_TRUTH_CHILD"); v != "" {
		hold, every, _ := strings.Cut(v, ",")
		d, _ := time.ParseDuration(hold)
		e, _ := strconv.ParseUint(every, 10, 64)
		s := &server{hold: d, failEvery: max(e, 1), truth: newHist()}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ctl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go s.serve(ln)
		go (&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			truth, n, failed := s.reset()
			enc, _ := truth.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			json.NewEncoder(w).Encode(childTruth{N: n, Failed: failed, Hist: enc})
		})}).Serve(ctl)
		fmt.Println(ln.Addr().String(), ctl.Addr().String())
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childTruth is what a server in another process reports at /truth.
type childTruth struct {
	N, Failed uint64
	Hist      []byte
}

// startChild starts the truth server as another process of this binary,
// pinned to CPU cpu when taskset is there (the generator's own process is
// pinned by the caller: taskset -c 0 go test ...).
func startChild(tb testing.TB, hold time.Duration, failEvery uint64, cpu string) *server {
	tb.Helper()
	var cmd *exec.Cmd
	if ts, err := exec.LookPath("taskset"); err == nil && cpu != "" {
		cmd = exec.Command(ts, "-c", cpu, os.Args[0])
	} else {
		cmd = exec.Command(os.Args[0])
	}
	cmd.Env = append(os.Environ(), fmt.Sprintf("PIPEBENCH_TRUTH_CHILD=%s,%d", hold, failEvery))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("the truth server process said nothing: %v", err)
	}
	addr, ctl, _ := strings.Cut(strings.TrimSpace(line), " ")
	return &server{hold: hold, failEvery: failEvery, addr: addr, ctl: ctl, child: true}
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

func startServer(tb testing.TB, hold time.Duration, failEvery uint64) *server {
	tb.Helper()
	s := &server{hold: hold, failEvery: failEvery, truth: newHist()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go s.serve(ln)
	tb.Cleanup(func() { ln.Close() })
	return s
}

// serve answers the connections ln accepts until it is closed.
func (s *server) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.conn(c.(*net.TCPConn))
	}
}

var (
	answerOK  = []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	answer503 = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
)

// conn answers the HTTP/1.1 requests of one connection in order: each is
// held until hold after it arrived, then answered.
func (s *server) conn(c *net.TCPConn) {
	defer c.Close()
	rd := newStampedReader(c)
	var buf []byte
	var first time.Time // when the first byte of the request in buf arrived
	for {
		n, err := parseRequest(buf)
		if n == 0 {
			if err != nil {
				return
			}
			b, at, err := rd.read()
			if err != nil {
				return
			}
			if len(buf) == 0 {
				first = at
			}
			buf = append(buf, b...)
			continue
		}
		buf = buf[:copy(buf, buf[n:])]
		arrived := first
		if len(buf) > 0 {
			first = time.Now() // a pipelined request: it came with this one
		}
		k := s.n.Add(1)
		time.Sleep(time.Until(arrived.Add(s.hold)))
		answer := answerOK
		if k%s.failEvery == 0 {
			answer = answer503
			s.failed.Add(1)
		}
		held := time.Since(arrived)
		s.mu.Lock()
		s.truth.RecordValue(max(held.Microseconds(), 1))
		s.mu.Unlock()
		if _, err := c.Write(answer); err != nil {
			return
		}
	}
}

// parseRequest returns the length of the whole request at the start of b
// (head and Content-Length body), 0 while it is incomplete; an error for
// what is not an HTTP/1.1 request.
func parseRequest(b []byte) (int, error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) > 64<<10 {
			return 0, errors.New("request head over 64 KiB")
		}
		return 0, nil
	}
	length := 0
	for _, line := range bytes.Split(b[:end], []byte("\r\n"))[1:] {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Length") {
			v, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil || v < 0 {
				return 0, fmt.Errorf("Content-Length %q", value)
			}
			length = v
		}
	}
	if n := end + 4 + length; len(b) >= n {
		return n, nil
	}
	return 0, nil
}

// reset starts a new measurement and returns the last one's truth.
func (s *server) reset() (truth *hdrhistogram.Histogram, n, failed uint64) {
	if s.child {
		resp, err := http.Get("http://" + s.ctl + "/truth")
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var ct childTruth
		if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil {
			panic(err)
		}
		h, err := hdrhistogram.Decode(ct.Hist)
		if err != nil {
			panic(err)
		}
		return h, ct.N, ct.Failed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	truth, s.truth = s.truth, newHist()
	return truth, s.n.Swap(0), s.failed.Swap(0)
}

// driver builds pipebench's http driver against s; stamp takes answers'
// arrival times from the kernel (kernel_timestamps).
func (s *server) driver(tb testing.TB, conns int, stamp bool) pipebench.Driver {
	tb.Helper()
	f := httpdriver.Factory()
	cfg := f.NewConfig().(*httpdriver.Config)
	cfg.URL, cfg.Connections, cfg.KernelTimestamps = "http://"+s.addr+"/", conns, stamp
	drv, err := f.New(cfg, pipebench.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := drv.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { drv.Shutdown(context.Background()) })
	return drv
}

// measured is what one mode measured: latency and lag quantiles, sends
// and failures.
type measured struct {
	lat, lag, wait, readLag *hdrhistogram.Histogram
	sent, failed            uint64
}

// drive runs the open-model executor's loop over drv at rate for d with
// clock; old selects the former latency (from the scheduled time, the
// generator's own lateness included) over the recorder's.
func drive(tb testing.TB, drv pipebench.Driver, rate float64, d time.Duration, clock schedule.Clock, old bool) measured {
	ph := pipebench.PlanPhase{Duration: pipebench.Duration(d), BatchSize: 1,
		Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: pipebench.Rate(rate)}}
	p, err := schedule.New(ph)
	if err != nil {
		tb.Fatal(err)
	}
	rec := kpi.NewRecorder(1)
	var mu sync.Mutex
	oldLat := newHist()
	body := []byte(`{"seq":1}`)
	var wg sync.WaitGroup
	schedule.RunWith(context.Background(), p, time.Now(), clock, func(n uint64, at time.Time) bool {
		rec.Started(0, 1, time.Since(at))
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := pipebench.Batch{Seq: n + 1, Count: 1, Scheduled: at, ContentType: "application/json", Body: body}
			started := time.Now()
			out := drv.Send(context.Background(), &b)
			ended := time.Now()
			rec.Record(0, pipebench.Sample{Scheduled: at, Started: started, Ended: ended, Count: 1, Bytes: len(body), Outcome: out})
			if old {
				mu.Lock()
				oldLat.RecordValue(max(ended.Sub(at).Microseconds(), 1))
				mu.Unlock()
			}
		}()
		return true
	})
	wg.Wait()
	st := rec.Stats(0)
	m := measured{lat: st.Latency, lag: st.Lag, wait: st.Wait, readLag: st.ReadLag}
	if old {
		m.lat = oldLat
	}
	for c := range pipebench.NumClasses {
		m.sent += st.Items[c]
	}
	m.failed = m.sent - st.Items[pipebench.ClassOK]
	return m
}

// runWhole runs the whole runner against s at rate for d.
func runWhole(tb testing.TB, s *server, rate float64, d time.Duration, conns int) measured {
	reg := scenariotest.Registry(tb, payload.EventFactory(), httpdriver.Factory())
	res := scenariotest.Run(tb, reg, "truth.yaml", fmt.Sprintf(`
name: truth
target: {driver: http, url: "http://%s/", connections: %d}
workload: {generator: event, size: 64}
phases:
  - {name: hold, duration: %s, rate: %s/s}
`, s.addr, conns, d, strconv.FormatFloat(rate, 'f', -1, 64)))
	p := &res.Phases[0]
	get := func(name string, labels ...string) float64 { v, _ := p.Get(name, labels...); return v }
	h := func(name string) *hdrhistogram.Histogram {
		// The Result carries quantiles, not the histogram: rebuild one
		// holding p50 and p99 at their ranks, enough for the table.
		out := newHist()
		out.RecordValues(int64(get(name+".p50")*1000), 50)
		out.RecordValues(int64(get(name+".p99")*1000), 49)
		out.RecordValues(int64(get(name+".max")*1000), 1)
		return out
	}
	m := measured{lat: h("latency"), wait: h("wait"), lag: newHist(), sent: uint64(get("sent"))}
	m.lag.RecordValues(int64(get("schedule_lag.p99")*1000), 100)
	m.readLag = newHist()
	m.readLag.RecordValues(int64(get("read_lag.p99")*1000), 100)
	for _, c := range []string{"refused", "timeout", "error"} {
		m.failed += uint64(get("errors", "class", c))
	}
	return m
}

func us(h *hdrhistogram.Histogram, q float64) int64 { return h.ValueAtQuantile(q) }

// BenchmarkTruth prints pipebench's latency error against the truth at
// 500/s, 2,000/s and 10,000/s, before and after, interleaved. Environment:
// PIPEBENCH_TRUTH_SECONDS per run (default 3), PIPEBENCH_TRUTH_HOLD the
// server's hold (default 20ms; 0s shows the floor: loopback and parsing),
// PIPEBENCH_TRUTH_RATES (default 500,2000,10000),
// PIPEBENCH_TRUTH_SERVER_CPU=N the server in a process of its own pinned
// to CPU N, as on an idle core of its own (pin the generator elsewhere:
// taskset -c 0 go test ...).
func BenchmarkTruth(b *testing.B) {
	secs := 3
	if v, err := strconv.Atoi(os.Getenv("PIPEBENCH_TRUTH_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	d := time.Duration(secs) * time.Second
	hold := 20 * time.Millisecond
	if v, err := time.ParseDuration(os.Getenv("PIPEBENCH_TRUTH_HOLD")); err == nil && v >= 0 {
		hold = v
	}
	rates := []float64{500, 2000, 10000}
	if v := os.Getenv("PIPEBENCH_TRUTH_RATES"); v != "" {
		rates = rates[:0]
		for _, f := range strings.Split(v, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || r <= 0 {
				b.Fatalf("PIPEBENCH_TRUTH_RATES: %q is not a positive rate", f)
			}
			rates = append(rates, r)
		}
	}
	const every, conns = 10, 400
	var s *server
	if cpu, ok := os.LookupEnv("PIPEBENCH_TRUTH_SERVER_CPU"); ok {
		s = startChild(b, hold, every, cpu)
	} else {
		s = startServer(b, hold, every)
	}
	drv, user := s.driver(b, conns, true), s.driver(b, conns, false)
	for b.Loop() {
		where := "in this process"
		if s.child {
			where = "in a process of its own (CPU " + os.Getenv("PIPEBENCH_TRUTH_SERVER_CPU") + ")"
		}
		fmt.Printf("server %s: every request held %v, every %dth answered 503; %d connections; %v per run; µs\n", where, hold, every, conns, d)
		fmt.Printf("%7s %-7s %5s | %8s %8s | %8s %8s | %7s %7s | %7s %7s %7s | %s\n",
			"rate/s", "mode", "round", "true p50", "true p99", "pb p50", "pb p99", "err p50", "err p99", "lag p99", "readp99", "waitp99", "counts (sent/failed, server's)")
		for _, rate := range rates {
			for round := 1; round <= 2; round++ {
				for _, mode := range []string{"before", "user", "after", "runner"} {
					s.reset()
					var m measured
					switch mode {
					case "before":
						m = drive(b, drv, rate, d, schedule.Coarse, true)
					case "user":
						m = drive(b, user, rate, d, schedule.Precise, false)
					case "after":
						m = drive(b, drv, rate, d, schedule.Precise, false)
					default:
						m = runWhole(b, s, rate, d, conns)
					}
					truth, n, failed := s.reset()
					exact := "exact"
					if m.sent != n || m.failed != failed {
						exact = "DIFFER"
					}
					fmt.Printf("%7.0f %-7s %5d | %8d %8d | %8d %8d | %+7d %+7d | %7d %7d %7d | %d/%d, %d/%d %s\n",
						rate, mode, round, us(truth, 50), us(truth, 99), us(m.lat, 50), us(m.lat, 99),
						us(m.lat, 50)-us(truth, 50), us(m.lat, 99)-us(truth, 99), us(m.lag, 99), us(m.readLag, 99), us(m.wait, 99),
						m.sent, m.failed, n, failed, exact)
				}
			}
		}
	}
}

// The server's counters and pipebench's agree exactly through the whole
// runner (no timing asserted: the machine may be busy).
func TestExactCountsAgainstKnownServer(t *testing.T) {
	s := startServer(t, 5*time.Millisecond, 10)
	m := runWhole(t, s, 500, time.Second, 16)
	_, n, failed := s.reset()
	if m.sent != 500 || n != 500 || m.failed != 50 || failed != 50 {
		t.Errorf("pipebench sent %d failed %d; server received %d failed %d; want 500 and 50", m.sent, m.failed, n, failed)
	}
}
