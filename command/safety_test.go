package command

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// recorder is a real HTTP server on loopback that keeps the headers of
// every request it receives. With hang set it never answers until the test
// ends.
type recorder struct {
	srv     *httptest.Server
	mu      sync.Mutex
	headers []http.Header
	n       atomic.Int64
	hang    chan struct{}
}

func newRecorder(t *testing.T, hang bool) *recorder {
	t.Helper()
	r := &recorder{}
	if hang {
		r.hang = make(chan struct{})
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		if len(r.headers) < 100 {
			r.headers = append(r.headers, req.Header.Clone())
		}
		r.mu.Unlock()
		r.n.Add(1)
		if r.hang != nil {
			select {
			case <-r.hang:
			case <-req.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(func() {
		if r.hang != nil {
			close(r.hang)
		}
		r.srv.CloseClientConnections()
		r.srv.Close()
	})
	return r
}

// waitRequests waits until the server received at least n requests.
func (r *recorder) waitRequests(t *testing.T, n int64) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() bool { return r.n.Load() >= n }, "the server received %v requests, want %d", testutil.Lazy(func() string { return fmt.Sprint(r.n.Load()) }), n)
}

func writeScenario(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func shortScenario(url, extra string) string {
	return fmt.Sprintf(`name: safety
target:
  driver: http
  url: %s
%sphases:
  - {name: load, duration: 1s, rate: 20/s}
`, url, extra)
}

func readJSONResult(t *testing.T, path string) *pipebench.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res pipebench.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &res
}

// A bad --out is refused before anything is sent: a folder, a missing
// parent folder, a parent that is a file.
func TestBadOutRefusedBeforeTheRun(t *testing.T) {
	srv := newRecorder(t, false)
	dir := t.TempDir()
	scen := writeScenario(t, dir, shortScenario(srv.srv.URL, ""))
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct{ out, want string }{
		{dir, "--out " + dir + " is a directory"},
		{filepath.Join(dir, "missing", "r.json"), "the folder " + filepath.Join(dir, "missing") + " does not exist"},
		{filepath.Join(file, "r.json"), file + " is not a folder"},
	} {
		_, stderr, code := cli(t, "run", scen, "--quiet", "--no-store", "--out", c.out)
		if code != pipebench.ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("--out %s: exit %d, stderr:\n%s", c.out, code, stderr)
		}
	}
	if n := srv.n.Load(); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}

// An unusable history is refused before anything is sent: a corrupt SQLite
// file, a path under a file, an unreachable PostgreSQL (whose password is
// never printed).
func TestBadStoreRefusedBeforeTheRun(t *testing.T) {
	srv := newRecorder(t, false)
	dir := t.TempDir()
	scen := writeScenario(t, dir, shortScenario(srv.srv.URL, ""))
	corrupt := filepath.Join(dir, "corrupt.db")
	os.WriteFile(corrupt, []byte(strings.Repeat("this is not a SQLite database\n", 200)), 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct{ store, want string }{
		{corrupt, "the results history " + corrupt + " cannot be used, so nothing was sent"},
		{filepath.Join(file, "h.db"), "cannot be used"},
		{"postgres://bench:hunter2@127.0.0.1:1/history", "postgres://bench:xxxxx@127.0.0.1:1/history"},
	} {
		_, stderr, code := cli(t, "run", scen, "--quiet", "--store", c.store)
		if code != pipebench.ExitUsage || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "--no-store") {
			t.Errorf("--store %s: exit %d, stderr:\n%s", c.store, code, stderr)
		}
		if strings.Contains(stderr, "hunter2") {
			t.Errorf("the password was printed:\n%s", stderr)
		}
	}
	if n := srv.n.Load(); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}

// A read-only history file is found by the test write before the run.
func TestReadOnlyStoreRefusedBeforeTheRun(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to read-only files; run as another user to test this")
	}
	srv := newRecorder(t, false)
	dir := t.TempDir()
	scen := writeScenario(t, dir, shortScenario(srv.srv.URL, ""))
	h := filepath.Join(dir, "h.db")
	if _, _, code := cli(t, "history", "--store", h); code != 0 {
		t.Fatal("cannot create the history")
	}
	os.Chmod(h, 0o444)
	_, stderr, code := cli(t, "run", scen, "--quiet", "--store", h)
	if code != pipebench.ExitUsage || !strings.Contains(stderr, "test write failed") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// When --out and the history both fail at the end, the table is still
// printed, the Result lands in named fallback files and the exit is 1.
func TestResultKeptWhenOutAndStoreFailAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	out := filepath.Join(outDir, "result.json")
	hist := filepath.Join(dir, "h.db")
	c, code, fallbacks := runFailingAtTheEnd(t, dir, func() {
		// Both checks passed; now take both places away.
		os.RemoveAll(outDir)
		damage(hist)
	}, "--out", out, "--store", hist)
	stderr := c.errb.String()
	if code != pipebench.ExitFailure {
		t.Errorf("exit %d, want %d\n%s", code, pipebench.ExitFailure, stderr)
	}
	if !strings.Contains(c.out.String(), "sent") {
		t.Errorf("the table was not printed:\n%s", c.out.String())
	}
	if len(fallbacks) != 1 {
		t.Fatalf("fallback files %v\nstderr:\n%s", fallbacks, stderr)
	}
	if !strings.Contains(stderr, "the result was written to "+fallbacks[0]+" instead") {
		t.Errorf("the message does not name the fallback file:\n%s", stderr)
	}
	if !strings.Contains(stderr, "not saved to the history") || !strings.Contains(stderr, "the result is in "+fallbacks[0]) {
		t.Errorf("the failed save is not explained:\n%s", stderr)
	}
	res := readJSONResult(t, fallbacks[0])
	if sent, _ := res.Total.Get("sent"); sent == 0 {
		t.Errorf("the fallback result holds no measurement")
	}
}

// A history that fails only at the end (the file was damaged during the
// run) leaves the Result in a named fallback file; exit 1.
func TestSaveFailureWritesFallback(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.db")
	c, code, fallbacks := runFailingAtTheEnd(t, dir, func() { damage(hist) }, "--store", hist)
	stderr := c.errb.String()
	if code != pipebench.ExitFailure || len(fallbacks) != 1 {
		t.Fatalf("exit %d, fallbacks %v\nstderr:\n%s", code, fallbacks, stderr)
	}
	if !strings.Contains(stderr, "the result was written to "+fallbacks[0]+" instead") {
		t.Errorf("stderr:\n%s", stderr)
	}
	readJSONResult(t, fallbacks[0])
}

// runFailingAtTheEnd runs `run` of a 3 s scenario in dir against a
// recorder, with the flags args and TMPDIR a folder of its own; once the
// server has a request (the flags' checks passed), takeAway breaks what
// the test names. It returns the command, its exit code and the Result
// files written to TMPDIR instead.
func runFailingAtTheEnd(t *testing.T, dir string, takeAway func(), args ...string) (*command, int, []string) {
	t.Helper()
	srv := newRecorder(t, false)
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	t.Setenv("TMPDIR", tmp)
	scen := writeScenario(t, dir, strings.Replace(shortScenario(srv.srv.URL, ""), "duration: 1s", "duration: 3s", 1))
	c := startCommand(t, append([]string{"run", scen, "--quiet"}, args...)...)
	srv.waitRequests(t, 1)
	takeAway()
	var code int
	select {
	case code = <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
	}
	fallbacks, _ := filepath.Glob(filepath.Join(tmp, "pipebench-result-*.json"))
	return c, code, fallbacks
}

// damage turns the SQLite history hist into a file that is not one.
func damage(hist string) {
	os.Remove(hist + "-wal")
	os.Remove(hist + "-shm")
	os.WriteFile(hist, []byte(strings.Repeat("garbage ", 1000)), 0o644)
}

// secret_headers get ${VAR} like every other value: the real token reaches
// the server, and no output, Result, report or history holds it.
func TestSecretHeaderReachesServerAndNothingElse(t *testing.T) {
	const token = "s3cr3t-t0k3n-4711"
	t.Setenv("PB_TEST_TOKEN", token)
	srv := newRecorder(t, false)
	dir := t.TempDir()
	scen := writeScenario(t, dir, shortScenario(srv.srv.URL,
		"  headers: {X-Tenant: demo}\n  secret_headers: {Authorization: \"Bearer ${PB_TEST_TOKEN}\"}\n"))
	out := filepath.Join(dir, "result.json")
	hist := filepath.Join(dir, "h.db")
	stdout, stderr, code := cli(t, "run", scen, "--out", out, "--store", hist, "--verbose")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	srv.mu.Lock()
	got := srv.headers[0].Get("Authorization")
	srv.mu.Unlock()
	if got != "Bearer "+token {
		t.Fatalf("the server got Authorization %q, want %q", got, "Bearer "+token)
	}
	written := map[string]string{"stdout": stdout, "stderr": stderr}
	for _, f := range []string{out, hist, hist + "-wal"} {
		data, _ := os.ReadFile(f)
		written[f] = string(data)
	}
	res := readJSONResult(t, out)
	reg := suitetest.Registry(t)
	for _, format := range reg.Reporters.Names() {
		o, e, code := cli(t, "report", out, "--format", format)
		if code != 0 {
			t.Fatalf("report --format %s: exit %d: %s", format, code, e)
		}
		written["report "+format] = o
		o, _, _ = cli(t, "report", res.Manifest.RunID, "--store", hist, "--format", format)
		written["report from history "+format] = o
	}
	for where, text := range written {
		if strings.Contains(text, token) {
			t.Errorf("%s holds the token", where)
		}
	}
}

// An error that repeats a URL from the scenario prints it without its
// password.
func TestErrorsHideURLPasswords(t *testing.T) {
	dir := t.TempDir()
	scen := writeScenario(t, dir, shortScenario(`"ftp://bench:hunter2@127.0.0.1/"`, ""))
	_, stderr, code := cli(t, "validate", scen)
	if code != pipebench.ExitUsage || strings.Contains(stderr, "hunter2") || !strings.Contains(stderr, "ftp://bench:xxxxx@127.0.0.1/") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
