package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// TestHelperCLI is not a test: it runs the CLI as a child process for
// TestInterruptWritesPartialResult, and skips otherwise.
func TestHelperCLI(t *testing.T) {
	args := os.Getenv("PIPEBENCH_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := execute(ctx, strings.Split(args, "\x1f"), os.Stdout, os.Stderr)
	os.Exit(code)
}

// Ctrl-C during a run stops the load, keeps what was measured, writes the
// partial Result marked aborted and prints the table.
func TestInterruptWritesPartialResult(t *testing.T) {
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
	cmd.Env = append(os.Environ(), "PIPEBENCH_HELPER_ARGS="+strings.Join([]string{"run", scen, "--out", out, "--quiet"}, "\x1f"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the run did not stop within 20s of SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != pipebench.ExitFailure {
		t.Errorf("exit %d, want %d\nstderr: %s", code, pipebench.ExitFailure, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no partial result: %v\nstderr: %s", err, stderr.String())
	}
	var res pipebench.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Status != pipebench.StatusAborted || len(res.Phases) != 1 {
		t.Fatalf("status %s, %d phases", res.Manifest.Status, len(res.Phases))
	}
	if sent, _ := res.Phases[0].Get("sent"); sent < 100 {
		t.Errorf("sent %v before the interrupt, want about 400", sent)
	}
	if !strings.Contains(stdout.String(), "ABORTED") {
		t.Errorf("the table was not printed:\n%s", stdout.String())
	}
}
