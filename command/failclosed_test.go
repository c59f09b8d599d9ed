package command

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/sinktest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/store"
)

// readingAt tells where process pid is in the file at path: whether it has
// the file open, and its offset there (/proc/PID/fdinfo).
func readingAt(pid int, path string) (open bool, pos int64) {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			b, _ := os.ReadFile(strings.Replace(fd, "/fd/", "/fdinfo/", 1))
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "pos:"); ok {
					pos, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				}
			}
			return true, pos
		}
	}
	return false, 0
}

// writeBig writes res with series of points added until its JSON holds
// about mb MiB: points every interval from the first phase's start, in
// series of at most per points, one series more each time.
func writeBig(t *testing.T, path string, res *pipebench.Result, mb, per int, interval time.Duration) {
	t.Helper()
	const pointBytes = 27 // [1764400000123,12345.5],
	points := mb << 20 / pointBytes
	start := res.Manifest.Started
	for i := 0; points > 0; i++ {
		n := min(per, points)
		s := pipebench.Series{Name: "bulk_gauge", Labels: map[string]string{"instance": "i-" + strconv.Itoa(i)}, Kind: pipebench.KindGauge,
			Points: make([]pipebench.TimeValue, n)}
		for j := range s.Points {
			s.Points[j] = pipebench.TimeValue{T: start.Add(time.Duration(j) * interval), V: float64(j) + 0.5}
		}
		res.Series = append(res.Series, s)
		points -= n
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := json.NewEncoder(w).Encode(res); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// Reading a large Result and rendering it are honoured at once: a signal
// while report reads an 80 MiB Result, and one while it renders it as
// HTML, end the command within a second or so (exit 1), and leave no
// report file, complete or partial.
func TestSignalWhileReadingOrRendering(t *testing.T) {
	if testing.Short() {
		t.Skip("writes an 80 MiB Result")
	}
	if _, err := os.Stat("/proc/self/fdinfo"); err != nil {
		t.Skip("needs /proc")
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	writeBig(t, big, resulttest.Pipeline("1.0", "big", 20000), 80, 200_000, time.Second)
	fi, _ := os.Stat(big)
	for i, when := range []string{"reading", "rendering"} {
		sig := everySignal[i]
		t.Run(when, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "page.html")
			c := startLimited(t, nil, "report", big, "--format", "html", "--out", page)
			pid := c.cmd.Process.Pid
			seen := false
			ready := func() bool {
				open, pos := readingAt(pid, big)
				seen = seen || open
				if when == "reading" {
					return open && pos > 0 && pos < fi.Size()/2
				}
				return seen && !open // read whole and closed: rendering
			}
			ended := false
			testutil.Eventually(t, 60*time.Second, func() bool {
				select {
				case <-c.done:
					ended = true
					return true
				default:
				}
				return ready()
			}, "report never got to %s", when)
			if ended {
				t.Skipf("report ended (exit %d) before it could be seen %s: the machine is faster than this test", c.cmd.ProcessState.ExitCode(), when)
			}
			c.cmd.Process.Signal(sig)
			code, took := c.wait(t, 30*time.Second)
			if code == 0 && when == "rendering" {
				t.Skipf("report rendered the page before the %s came (%s): nothing to stop", sig, took)
			}
			if code != pipebench.ExitFailure || took > 3*time.Second {
				t.Errorf("a %s while %s: exit %d after %s, want 1 within a second or so; stderr:\n%s", sig, when, code, took, c.stderr.String())
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(page), "*"))
			if len(left) > 0 {
				t.Errorf("left %v", left)
			}
			t.Logf("%s: ended %s after the %s, peak RSS %d MiB", when, took.Round(time.Millisecond), sig, c.maxRSS()>>20)
		})
	}
}

// shards runs the two shards of a short plan against a real sink and
// returns their Result files.
func shards(t *testing.T, dir string) []string {
	t.Helper()
	sink, _ := sinktest.HTTP(t)
	scen := writeScenario(t, dir, scenariotest.TwoPhases("merge-bounds", sink.Endpoint(), 2, 40, 40))
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	outs := []string{filepath.Join(dir, "s1.json"), filepath.Join(dir, "s2.json")}
	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, stderr, code := cli(t, "run", scen, "--shard", fmt.Sprintf("%d/2", i+1), "--start-at", start, "--out", outs[i], "--no-store", "--quiet")
			if code != 0 {
				errs[i] = fmt.Sprintf("shard %d: exit %d: %s", i+1, code, stderr)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	return outs
}

// merge checks every shard against its slice of the plan and reads the
// shards within what their plan can record: a shard claiming 10^12 items
// sent of a 40-item slice is refused naming both numbers; a shard stuffed
// to 69 MiB with points its plan's length cannot hold is refused while it
// is read, in little memory; two shards of a little less than their plan
// allows (60 MiB each) merge under the 4 GiB limit, and a signal during
// that merge ends it at once.
func TestMergeHeldToThePlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two shards and writes large files")
	}
	dir := t.TempDir()
	outs := shards(t, dir)
	read := func(p string) *pipebench.Result { return readJSONResult(t, p) }

	inflated := filepath.Join(dir, "inflated.json")
	r := read(outs[1])
	for i := range r.Phases {
		for j := range r.Phases[i].KPIs {
			if k := &r.Phases[i].KPIs[j]; k.Name == "sent" || k.Name == "accepted" {
				k.Value = 1e12
			}
		}
	}
	writeBig(t, inflated, r, 0, 1, time.Second)
	_, stderr, code := cli(t, "merge", outs[0], inflated, "--no-store")
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "sent is 1,000,000,000,000, more than the") || !strings.Contains(stderr, "items its slice of the plan sends") {
		t.Errorf("a shard claiming 10^12 sent of a 40-item slice: exit %d\n%s", code, stderr)
	}

	// What the child is before it reads anything: the test binary holds
	// every plug-in.
	base := startLimited(t, nil, "version")
	base.wait(t, 30*time.Second)
	baseline := base.maxRSS()

	stuffed := filepath.Join(dir, "stuffed.json")
	writeBig(t, stuffed, read(outs[1]), 69, 1_000_000, time.Millisecond)
	c := startLimited(t, nil, "merge", outs[0], stuffed, "--no-store")
	code, took := c.wait(t, 60*time.Second)
	if code != pipebench.ExitUsage || !strings.Contains(c.stderr.String(), "points a series of this Result can hold") {
		t.Errorf("a shard stuffed with points: exit %d\n%s", code, c.stderr.String())
	}
	t.Logf("a 69 MiB shard stuffed with points refused after %s, peak RSS %d MiB (%d MiB before reading)", took.Round(time.Millisecond), c.maxRSS()>>20, baseline>>20)
	if rss := c.maxRSS() - baseline; rss > 300<<20 {
		t.Errorf("refusing a stuffed 69 MiB shard took %d MiB", rss>>20)
	}

	// Within the plan's bounds: 1s of load, 30s of drain, 15 minutes of
	// waiting, at 1s: 946 points a series at most.
	var large []string
	for i, p := range outs {
		l := filepath.Join(dir, fmt.Sprintf("large%d.json", i+1))
		writeBig(t, l, read(p), 60, 900, time.Second)
		large = append(large, l)
	}
	merged := filepath.Join(dir, "merged.json")
	c = startLimited(t, nil, append([]string{"merge", "--out", merged, "--no-store", "--format", "csv"}, large...)...)
	code, took = c.wait(t, 5*time.Minute)
	if code != 0 {
		t.Fatalf("merge of two large shards within their plan: exit %d\n%s", code, c.stderr.String())
	}
	fi, _ := os.Stat(merged)
	t.Logf("two 60 MiB shards merged in %s, peak RSS %d MiB (%d MiB before reading), merged Result %d MiB", took.Round(time.Millisecond), c.maxRSS()>>20, baseline>>20, fi.Size()>>20)

	c = startLimited(t, nil, append([]string{"merge", "--no-store"}, large...)...)
	testutil.Eventually(t, 60*time.Second, func() bool { open, pos := readingAt(c.cmd.Process.Pid, large[0]); return open && pos > 0 },
		"merge never read the first shard")
	c.cmd.Process.Signal(syscall.SIGTERM)
	code, took = c.wait(t, 30*time.Second)
	if code != pipebench.ExitFailure || took > 3*time.Second {
		t.Errorf("SIGTERM during a merge: exit %d after %s\n%s", code, took, c.stderr.String())
	}
}

// SIGQUIT (Ctrl-\) during a run cuts it short at once and keeps what was
// measured, as a second Ctrl-C does (exit 130), with no goroutine dump.
func TestQuitKeepsTheResult(t *testing.T) {
	dir := t.TempDir()
	scen := writeScenario(t, dir, `
name: long
target: {driver: http}
sink: {type: http}
drain: 30s
phases:
  - {name: only, duration: 60s, rate: 200/s}
`)
	out := filepath.Join(dir, "result.json")
	c := startLimited(t, nil, "run", scen, "--out", out, "--no-store")
	c.stderr.waitFor(t, "  sent ")
	c.cmd.Process.Signal(syscall.SIGQUIT)
	code, took := c.wait(t, 30*time.Second)
	if code != pipebench.ExitCut || took > 10*time.Second || strings.Contains(c.stderr.String(), "goroutine ") || !strings.Contains(c.stderr.String(), "cut short") {
		t.Errorf("SIGQUIT: exit %d after %s, want %d with the Result kept; stderr:\n%s", code, took, pipebench.ExitCut, c.stderr.String())
	}
	res := readJSONResult(t, out)
	if sent, _ := res.Phases[0].Get("sent"); res.Manifest.Status != pipebench.StatusAborted || sent < 100 {
		t.Errorf("the Result: %s, sent %v", res.Manifest.Status, sent)
	}
}

// gateRun is a saved run of a version, its p99 latency set.
func gateRun(version string, i int, p99 float64) *pipebench.Result {
	r := resulttest.Pipeline(version, "single", 20000)
	r.Phases = r.Phases[:1]
	r.Manifest.RunID = fmt.Sprintf("%s-%d", version, i)
	r.Manifest.Status = pipebench.StatusCompleted
	r.Manifest.Started = time.Date(2026, 11, 1, 0, i, 0, 0, time.UTC)
	for j := range r.Phases[0].KPIs {
		if r.Phases[0].KPIs[j].Name == "latency.p99" {
			r.Phases[0].KPIs[j].Value = p99
		}
	}
	return r
}

// gate fails closed: with one run a side, a p99 seven times worse is not
// decided and the gate exits 97 (0 with --allow-undecided); with one
// baseline replicate an outlier it does not pass; with three clean
// replicates a side it decides (0 when nothing changed, 99 for the
// regression); a run the history holds damaged is left out and named,
// and does not stop the gate.
func TestGateFailsClosed(t *testing.T) {
	gate := func(t *testing.T, runs []*pipebench.Result, damaged []string, extra ...string) (string, int) {
		t.Helper()
		db := filepath.Join(t.TempDir(), "h.db")
		s, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if _, err := s.Save(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range damaged {
			if _, err := s.(interface{ DB() *sql.DB }).DB().Exec(`UPDATE runs SET result = '{"schema": 1, "manifest": {' WHERE id = ?`, id); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		stdout, stderr, code := cli(t, append([]string{"gate", "--baseline", "1", "--candidate", "2", "--store", db}, extra...)...)
		return stdout + stderr, code
	}
	one := []*pipebench.Result{gateRun("1", 0, 4.2), gateRun("2", 1, 29.4)}
	if out, code := gate(t, one, nil); code != pipebench.ExitUndecided || !strings.Contains(out, "not every KPI was decided") {
		t.Errorf("one run a side, p99 7x: exit %d, want %d\n%s", code, pipebench.ExitUndecided, out)
	}
	if out, code := gate(t, one, nil, "--allow-undecided"); code != 0 || !strings.Contains(out, "--allow-undecided") {
		t.Errorf("one run a side, undecided allowed: exit %d\n%s", code, out)
	}
	outlier := []*pipebench.Result{gateRun("1", 0, 4.2), gateRun("1", 1, 4.2), gateRun("1", 2, 29.4), gateRun("2", 3, 29.4), gateRun("2", 4, 29.4), gateRun("2", 5, 29.4)}
	if out, code := gate(t, outlier, nil); code == 0 {
		t.Errorf("an outlier baseline replicate: the gate passed\n%s", out)
	}
	var clean, worse []*pipebench.Result
	for i := range 3 {
		clean = append(clean, gateRun("1", i, 4.2), gateRun("2", 10+i, 4.2))
		worse = append(worse, gateRun("1", i, 4.2), gateRun("2", 10+i, 29.4))
	}
	if out, code := gate(t, clean, nil); code != 0 || !strings.Contains(out, "gate: passed") {
		t.Errorf("three clean replicates a side, no change: exit %d\n%s", code, out)
	}
	if out, code := gate(t, worse, nil); code != pipebench.ExitThresholds || !strings.Contains(out, "latency.p99") {
		t.Errorf("three clean replicates a side, p99 7x: exit %d\n%s", code, out)
	}
	withDamaged := append(append([]*pipebench.Result(nil), clean...), gateRun("2", 20, 4.2))
	out, code := gate(t, withDamaged, []string{"2-20"})
	if code != 0 || !strings.Contains(out, "run 2-20") || !strings.Contains(out, "damaged") {
		t.Errorf("a damaged row: exit %d, want the gate decided and the row named\n%s", code, out)
	}
}

// The headers a vendor's API takes its key in, and the query parameters
// of signed URLs, none of them on the list of names known to carry no
// secret: their values reach the server and no output (the Result, the
// history, every report, plan --json); a Kubernetes object refuses them.
var (
	vendorHeaders = []string{"X-Honeycomb-Team", "DD-API-KEY", "X-Sentry-Auth", "X-SF-Token", "Lightstep-Access-Token",
		"Ocp-Apim-Subscription-Key", "X-Goog-Api-Key", "Api-Key", "X-License-Key", "X-Scope-Token", "Grafana-Cloud-Key", "X-Made-Up"}
	signedParams = []string{"X-Amz-Signature", "X-Amz-Security-Token", "X-Amz-Credential", "sig", "X-Goog-Signature", "Signature", "Key-Pair-Id", "made_up"}
)

func TestSecretsByAllowList(t *testing.T) {
	srv := newRecorder(t, false)
	dir := t.TempDir()
	var headers, query []string
	secret := func(i int) string { return fmt.Sprintf("s3cr3t%02dvalue", i) }
	for i, h := range vendorHeaders {
		headers = append(headers, fmt.Sprintf("%q: %q", h, secret(i)))
	}
	for i, p := range signedParams {
		query = append(query, p+"="+secret(50+i))
	}
	url := srv.srv.URL + "/ingest?format=json&" + strings.Join(query, "&")
	scenText := fmt.Sprintf(`name: allow-list
target:
  driver: http
  url: %q
  headers: {%s, "Content-Type": "application/json", "X-Tenant": tenant-a}
phases:
  - {name: load, duration: 1s, rate: 10/s}
`, url, strings.Join(headers, ", "))
	scen := writeScenario(t, dir, scenText)
	out := filepath.Join(dir, "result.json")
	hist := filepath.Join(dir, "h.db")
	stdout, stderr, code := cli(t, "run", scen, "--out", out, "--store", hist)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	srv.mu.Lock()
	got := srv.headers[0]
	srv.mu.Unlock()
	for i, h := range vendorHeaders {
		if got.Get(h) != secret(i) {
			t.Errorf("the server got %s %q, want the value given", h, got.Get(h))
		}
	}
	written := map[string]string{"stdout": stdout, "stderr": stderr}
	for _, f := range []string{out, hist, hist + "-wal"} {
		b, _ := os.ReadFile(f)
		written[f] = string(b)
	}
	res := readJSONResult(t, out)
	for _, format := range suitetest.Registry(t).Reporters.Names() {
		o, _, _ := cli(t, "report", res.Manifest.RunID, "--store", hist, "--format", format)
		written["report "+format] = o
	}
	o, _, _ := cli(t, "plan", scen, "--json")
	written["plan --json"] = o
	for where, text := range written {
		for i := range len(vendorHeaders) + 50 + len(signedParams) {
			if i >= len(vendorHeaders) && i < 50 {
				continue
			}
			if strings.Contains(text, secret(i)) {
				t.Errorf("%s holds %s", where, secret(i))
			}
		}
	}
	if !strings.Contains(written[out], "tenant-a") || !strings.Contains(written[out], "application/json") || !strings.Contains(written[out], "format=json") {
		t.Errorf("a value known to carry no secret was hidden too:\n%.2000s", written[out])
	}
	// Kubernetes objects: refused, naming where, repeating none.
	_, stderr, code = cli(t, "k8s", "manifests", scen)
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "target.headers.DD-API-KEY") || !strings.Contains(stderr, "target.url") {
		t.Errorf("k8s manifests of literal vendor headers: exit %d\n%s", code, stderr)
	}
	for i := range len(vendorHeaders) + 50 + len(signedParams) {
		if strings.Contains(stderr, secret(i)) {
			t.Errorf("the refusal repeats %s", secret(i))
		}
	}
	// The same written as ${VAR}: the kustomize base holds the names, not
	// the values.
	var pairs []string
	for i := range len(vendorHeaders) + 50 + len(signedParams) {
		pairs = append(pairs, secret(i), fmt.Sprintf("${V%d}", i))
		t.Setenv(fmt.Sprintf("V%d", i), "local") // the launcher's own reading; the pods read a Secret
	}
	refs := strings.NewReplacer(pairs...)
	scen = writeScenario(t, dir, refs.Replace(scenText))
	base := filepath.Join(dir, "base")
	if _, stderr, code := cli(t, "k8s", "manifests", scen, "--kustomize", base); code != 0 {
		t.Fatalf("k8s manifests with references: exit %d\n%s", code, stderr)
	}
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for i := range len(vendorHeaders) + 50 + len(signedParams) {
			if strings.Contains(string(b), secret(i)) {
				t.Errorf("%s holds %s", p, secret(i))
			}
		}
		return nil
	})
}

// Every duration flag of every command refuses a negative duration, with
// exit 2 and its name; the flags are found by walking the command tree.
func TestNegativeDurationsRefused(t *testing.T) {
	a := &app{reg: suitetest.Registry(t)}
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "pipebench"))
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			n++
			args := append(append([]string(nil), path...), "--"+f.Name+"=-1s")
			_, stderr, code := cli(t, args...)
			if code != pipebench.ExitUsage || !strings.Contains(stderr, "--"+f.Name+" -1s is negative") {
				t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, stderr)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(a.rootCommand())
	if n < 15 {
		t.Errorf("only %d duration flags found", n)
	}
}

// A rate or a length whose items overflow what a count holds exactly is
// refused before anything runs, in words a person reads (no 300-digit
// numbers), from the command line and from a scenario.
func TestOverflowingPlansRefused(t *testing.T) {
	dir := t.TempDir()
	scen := writeScenario(t, dir, "name: huge\ntarget: {driver: http, url: \"http://127.0.0.1:1/\"}\nphases:\n  - {name: p, duration: 1s, rate: 1e300/s}\n")
	for _, args := range [][]string{
		{"plan", "builtin:quickstart", "--rate", "1e308"},
		{"run", "builtin:quickstart", "--rate", "1e308", "--no-store"},
		{"plan", "builtin:quickstart", "--rate", "900000000/s", "--duration", "1000000h"},
		{"validate", scen},
	} {
		_, stderr, code := cli(t, args...)
		if code != pipebench.ExitUsage || strings.Contains(stderr, "000,000,000,000,000,000,000,000") || strings.Contains(stderr, "panic") {
			t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
	}
}

// Every report file is readable by its owner only, as the Result it
// shows: --out in each format, and each chart of --charts.
func TestReportFilesOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "r.json")
	writeBig(t, res, resulttest.Pipeline("1.0", "c", 20000), 0, 1, time.Second)
	for _, format := range suitetest.Registry(t).Reporters.Names() {
		out := filepath.Join(dir, "report."+format)
		if _, stderr, code := cli(t, "report", res, "--format", format, "--out", out); code != 0 {
			t.Fatalf("%s: exit %d %s", format, code, stderr)
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want -rw-------", out, fi.Mode(), err)
		}
	}
	charts := filepath.Join(dir, "charts")
	if _, stderr, code := cli(t, "report", res, "--charts", charts); code != 0 {
		t.Fatalf("--charts: exit %d %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(charts, "*"))
	if len(files) == 0 {
		t.Fatal("no chart written")
	}
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v", f, fi.Mode())
		}
	}
}

// validate refuses a Kafka topic the embedded broker does not create, at
// the target's and the sink's key, before any JVM starts.
func TestKafkaTopicTheBrokerDoesNotHave(t *testing.T) {
	scen := writeScenario(t, t.TempDir(), `name: k
sut: {type: kafka, topics: [{name: events, partitions: 2}]}
target: {driver: kafka, topic: evnts}
workload: {generator: event}
sink: {type: kafka, topic: other}
phases:
  - {name: p, duration: 2s, rate: 10/s}
`)
	_, stderr, code := cli(t, "validate", scen)
	if code != pipebench.ExitUsage || !strings.Contains(stderr, `target.topic: the embedded kafka system under test creates no topic "evnts"`) ||
		!strings.Contains(stderr, `sink.topic`) || !strings.Contains(stderr, `did you mean "events"`) {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}
