package command

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/store"
	"github.com/pipebench/pipebench/store/storetest"
)

// TestHelperCLI is not a test: it runs the CLI as a child process for the
// signal tests, and skips otherwise.
func TestHelperCLI(t *testing.T) {
	args := os.Getenv("PIPEBENCH_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process")
	}
	// The child handles signals as main does, and its manifest records
	// its own command line.
	os.Args = append([]string{"pipebench"}, strings.Split(args, "\x1f")...)
	ctx, cut, release := execute.Signals(os.Stderr)
	code := executeWith(ctx, cut, nil, os.Args[1:], os.Stdout, os.Stderr)
	release()
	os.Exit(code)
}

// Every stop signal during a run stops the load within a second, keeps
// what was measured, writes the partial Result marked aborted, saves it in
// the history, names it and prints the table: Ctrl-C (SIGINT), SIGTERM,
// SIGHUP (the terminal went away); SIGPIPE only when the output's reader
// quit (TestClosedOutputKeepsResult), not from a connection's peer.
func TestStopSignalsKeepPartialResult(t *testing.T) {
	for _, sig := range execute.StopSignals {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			scen := filepath.Join(dir, "long.yaml")
			os.WriteFile(scen, []byte(`
name: long
target: {driver: http}
sink: {type: http}
drain: 2s
phases:
  - {name: first, duration: 60s, rate: 200/s}
  - {name: second, duration: 60s, rate: 200/s}
`), 0o644)
			out := filepath.Join(dir, "result.json")
			cmd, stdout, stderr, done := startChild(t, "run", scen, "--out", out, "--store", filepath.Join(dir, "h.db"))
			// The first line with a measured rate comes after a few
			// seconds of load.
			stderr.waitFor(t, "  sent ")
			sent := time.Now()
			if sig == syscall.SIGPIPE {
				// A SIGPIPE while the output is open comes from some
				// connection's peer, not from the output's reader: it
				// is not a stop. The interrupt after it is.
				cmd.Process.Signal(sig)
				cmd.Process.Signal(os.Interrupt)
			} else {
				cmd.Process.Signal(sig)
			}
			stderr.waitFor(t, "stopping")
			if took := time.Since(sent); took > 5*time.Second {
				t.Errorf("the signal was acknowledged after %s", took)
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("the run did not stop within 20s of %s", sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != pipebench.ExitFailure {
				t.Errorf("exit %d, want %d\nstderr: %s", code, pipebench.ExitFailure, stderr.String())
			}
			res := readJSONResult(t, out)
			if res.Manifest.Status != pipebench.StatusAborted || len(res.Phases) != 1 {
				t.Fatalf("status %s, %d phases", res.Manifest.Status, len(res.Phases))
			}
			if sent, _ := res.Phases[0].Get("sent"); sent < 100 {
				t.Errorf("sent %v before the signal, want about 400", sent)
			}
			if sig == syscall.SIGPIPE && strings.Contains(stderr.String(), "output closed") {
				t.Errorf("a SIGPIPE with the output open was taken for closed output:\n%s", stderr.String())
			}
			if !strings.Contains(stdout.String(), "ABORTED") {
				t.Errorf("the table was not printed:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), "saved as run "+res.Manifest.RunID) {
				t.Errorf("the run was not saved and named:\n%s", stderr.String())
			}
		})
	}
}

// The output piped into a program that quits before the table (like
// head): the table cannot be written, but the Result is written and saved,
// and the exit code says it was not all kept.
func TestClosedOutputKeepsResult(t *testing.T) {
	dir := t.TempDir()
	scen := writeScenario(t, dir, `
name: short
target: {driver: http}
sink: {type: http}
drain: 1s
phases:
  - {name: only, duration: 1s, rate: 100/s}
`)
	out := filepath.Join(dir, "result.json")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader quit before anything was written
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
	cmd.Env = append(os.Environ(), "PIPEBENCH_HELPER_ARGS="+strings.Join([]string{"run", scen, "--out", out, "--store", filepath.Join(dir, "h.db")}, "\x1f"))
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = w, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	err = cmd.Wait()
	if cmd.ProcessState.ExitCode() != pipebench.ExitFailure {
		t.Errorf("%v, exit %d, want %d (killed by SIGPIPE: -1)\nstderr:\n%s", err, cmd.ProcessState.ExitCode(), pipebench.ExitFailure, stderr.String())
	}
	res := readJSONResult(t, out)
	if sent, _ := res.Total.Get("sent"); sent != 100 {
		t.Errorf("sent %v", sent)
	}
	if !strings.Contains(stderr.String(), "saved as run "+res.Manifest.RunID) {
		t.Errorf("the run was not saved and named:\n%s", stderr.String())
	}
}

// lockedBuffer is a child's output, read while the child writes it.
type lockedBuffer struct{ testutil.Buffer }

// waitFor waits until the output holds s.
func (b *lockedBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() bool { return strings.Contains(b.String(), s) }, "the child never printed %q; it printed:\n%s", s, testutil.Lazy(b.String))
}

// startChild runs the CLI with args in a child process.
func startChild(t *testing.T, args ...string) (cmd *exec.Cmd, stdout, stderr *lockedBuffer, done chan struct{}) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
	cmd.Env = append(os.Environ(), "PIPEBENCH_HELPER_ARGS="+strings.Join(args, "\x1f"))
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	return cmd, stdout, stderr, done
}

// A second Ctrl-C while sends hang (a target that never answers, with a
// 60 s request timeout) abandons them at once, yet the partial Result is
// written, the table printed and the run saved; exit 130. The manifest
// records the command line without the store's password.
func TestSecondInterruptCutsShortAndKeepsResult(t *testing.T) {
	srv := newRecorder(t, true)
	dir := t.TempDir()
	scen := writeScenario(t, dir, fmt.Sprintf(`
name: hanging
target: {driver: http, url: %q, timeout: 60s}
phases:
  - {name: first, duration: 60s, rate: 200/s}
  - {name: second, duration: 60s, rate: 200/s}
`, srv.srv.URL))
	out := filepath.Join(dir, "result.json")
	hist := filepath.Join(dir, "h.db")
	cmd, stdout, stderr, done := startChild(t, "run", scen, "--out", out, "--store", "sqlite://"+hist+"?password=hunter2")
	stderr.waitFor(t, "[1/2 first]")
	srv.waitRequests(t, 20)
	cmd.Process.Signal(os.Interrupt)
	stderr.waitFor(t, "Ctrl-C again to cut them short")
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		t.Fatalf("the run did not end within 40s of the second SIGINT\nstderr:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != pipebench.ExitCut {
		t.Errorf("exit %d, want %d\nstderr:\n%s", code, pipebench.ExitCut, stderr.String())
	}
	res := readJSONResult(t, out)
	if res.Manifest.Status != pipebench.StatusAborted {
		t.Errorf("status %s", res.Manifest.Status)
	}
	// The sends cut short never finished: they are sent, and abandoned.
	if len(res.Phases) != 1 || res.Phases[0].Name != "first" {
		t.Fatalf("phases %+v", res.Phases)
	}
	sent, _ := res.Phases[0].Get("sent")
	abandoned, _ := res.Phases[0].Get("abandoned")
	if sent < 20 || abandoned < 20 {
		t.Errorf("sent %v, abandoned %v: the cut sends were lost from the result", sent, abandoned)
	}
	args := strings.Join(res.Manifest.Args, " ")
	if strings.Contains(args, "hunter2") || !strings.Contains(args, "password=xxxxx") {
		t.Errorf("manifest args %q", args)
	}
	if !strings.Contains(stdout.String(), "ABORTED") {
		t.Errorf("the table was not printed:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "saved as run "+res.Manifest.RunID) {
		t.Errorf("the run was not saved:\n%s", stderr.String())
	}
}

// A run saved to PostgreSQL: the password of --store is in no output, no
// Result and no saved run; the manifest shows user:xxxxx@.
func TestPostgresPasswordNeverWritten(t *testing.T) {
	ref := storetest.PostgresSchema(t, storetest.PostgresURL(t))
	u, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := u.User.Password()
	if !ok {
		t.Skip("the test server's URL has no password")
	}
	leak := ":" + pw + "@"
	srv := newRecorder(t, false)
	dir := t.TempDir()
	scen := writeScenario(t, dir, shortScenario(srv.srv.URL, ""))
	out := filepath.Join(dir, "result.json")
	cmd, stdout, stderr, done := startChild(t, "run", scen, "--out", out, "--store="+ref)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	data, _ := os.ReadFile(out)
	res := readJSONResult(t, out)
	s, err := store.Open(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	saved, err := s.Run(context.Background(), pipebench.RunID(res.Manifest.RunID))
	if err != nil {
		t.Fatal(err)
	}
	savedJSON, _ := json.Marshal(saved)
	for where, text := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "--out": string(data), "history": string(savedJSON)} {
		if strings.Contains(text, leak) {
			t.Errorf("%s holds the password", where)
		}
	}
	if args := strings.Join(saved.Manifest.Args, " "); !strings.Contains(args, "--store=postgres://"+u.User.Username()+":xxxxx@") {
		t.Errorf("manifest args %q", args)
	}
}

// A soak killed outright (SIGKILL, no chance to write anything) leaves its
// last checkpoint: a readable Result, status running, complete up to its
// time.
func TestCheckpointSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	scen := writeScenario(t, dir, `
name: soak
target: {driver: http}
sink: {type: http}
phases:
  - {name: soak, duration: 10m, rate: 200/s}
`)
	out := filepath.Join(dir, "result.json")
	cmd, _, stderr, done := startChild(t, "run", scen, "--out", out, "--checkpoint", "1s", "--no-store")
	var res pipebench.Result
	testutil.Eventually(t, 30*time.Second, func() bool {
		data, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(data, &res) != nil || len(res.Phases) == 0 {
			return false
		}
		sent, _ := res.Phases[0].Get("sent")
		return sent >= 400 // at least two seconds in
	}, "no checkpoint with two seconds of load; stderr:\n%s", stderr.String())
	cmd.Process.Kill()
	<-done
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	res = pipebench.Result{}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("the last checkpoint is not a readable Result: %v", err)
	}
	if res.Manifest.Status != pipebench.StatusRunning || res.Total == nil {
		t.Fatalf("status %s, total %v", res.Manifest.Status, res.Total)
	}
	sent, _ := res.Total.Get("sent")
	delivered, _ := res.Total.Get("delivered")
	secs := res.Phases[0].Ended.Sub(res.Phases[0].Started).Seconds()
	if sent < 400 || delivered < sent*0.9 || sent > 200*secs+200 {
		t.Errorf("checkpoint: sent %v, delivered %v over %.1f s", sent, delivered, secs)
	}
}
