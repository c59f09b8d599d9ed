package childproc

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes this test binary the child of TestRunIfChild.
const childEnv = "PIPEBENCH_CHILDPROC_TEST_CHILD"

func TestMain(m *testing.M) {
	RunIfChild(childEnv, "test child", func(v string) error {
		switch v {
		case "fail":
			return errors.New("told to fail")
		case "panic":
			panic("told to panic")
		case "wait":
			// Ready, then wait for SIGTERM.
			term := make(chan os.Signal, 1)
			signal.Notify(term, syscall.SIGTERM)
			fmt.Println("ready")
			<-term
		}
		return nil
	})
	os.Exit(m.Run())
}

// Without its variable RunIfChild returns; with it, the process is the
// child: it exits 0 when run succeeds, 1 with the error on stderr when not.
func TestRunIfChild(t *testing.T) {
	RunIfChild(childEnv+"_UNSET", "not a child", func(string) error { t.Fatal("ran without its variable"); return nil })
	for _, tc := range []struct {
		value, stderr string
		code          int
	}{{"ok", "", 0}, {"fail", "test child: told to fail", 1}} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+tc.value)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || strings.TrimSpace(stderr.String()) != tc.stderr {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", tc.value, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}

func TestReadSpec(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"port": 7}`), 0o600)
	os.WriteFile(bad, []byte(`{"port": `), 0o600)
	var spec struct{ Port int }
	if err := ReadSpec(good, &spec); err != nil || spec.Port != 7 {
		t.Errorf("good: %v, %+v", err, spec)
	}
	if err := ReadSpec(bad, &spec); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("bad: %v, want an error naming the file", err)
	}
	if err := ReadSpec(filepath.Join(dir, "none"), &spec); err == nil {
		t.Error("a missing file read")
	}
}

func TestWriteSpecPortTakenAnswers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := WriteSpec(path, map[string]int{"port": 9}); err != nil {
		t.Fatal(err)
	}
	var spec struct{ Port int }
	if err := ReadSpec(path, &spec); err != nil || spec.Port != 9 {
		t.Errorf("read back %+v, %v", spec, err)
	}
	if !PortTaken(fmt.Errorf("%w: listen tcp 127.0.0.1:5: bind: address already in use", ErrExited)) {
		t.Error("a child that exited on a taken port")
	}
	if PortTaken(errors.New("address already in use")) || PortTaken(fmt.Errorf("%w: config error", ErrExited)) {
		t.Error("a child still running, or one that exited for another reason")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ready" {
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	if !Listening(srv.Listener.Addr().String()) || Listening("127.0.0.1:1") {
		t.Error("Listening")
	}
	if !Answers(srv.URL+"/ready", http.StatusNoContent, time.Second) || Answers(srv.URL+"/ready", http.StatusOK, 0) || Answers("http://127.0.0.1:1/", http.StatusOK, time.Second) {
		t.Error("Answers")
	}
}

// A child ignores SIGQUIT (Ctrl-\ reaches the whole foreground group:
// pipebench keeps its run's Result and stops its children itself), and
// still ends at SIGTERM, without a goroutine dump.
func TestChildIgnoresSIGQUIT(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=wait")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the child said %q", line)
	}
	cmd.Process.Signal(syscall.SIGQUIT)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || strings.Contains(stderr.String(), "goroutine ") {
			t.Errorf("the child ended with %v after SIGQUIT and SIGTERM, stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not end at SIGTERM")
	}
}

// A child's Go crash is quoted as what it said (the panic, its lines
// before), not as its goroutine dump, which stays in the log it names.
func TestTailOfACrash(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=panic")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err == nil {
		t.Fatal("the child that panics exited 0")
	}
	tail := Tail(log, 20)
	if !strings.Contains(tail, "panic: told to panic") || strings.Contains(tail, "goroutine ") || !strings.Contains(tail, "goroutines is in "+log) {
		t.Errorf("tail of a crash:\n%s", tail)
	}
}
