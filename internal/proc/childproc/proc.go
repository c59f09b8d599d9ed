package childproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process of an embedded system under test: its output
// goes to a log file, it dies with its parent, and whether it exited can be
// asked at any time. The zero of *Proc (nil) is a process that never
// started: PID is 0 and Stop does nothing.
type Proc struct {
	cmd    *exec.Cmd
	exited chan error // holds the exit error once the child ended
	// Name names the process in messages ("the collector").
	Name string
	// Log is the file its output goes to.
	Log string
}

// ErrExited wraps the error of a child that exited while starting.
var ErrExited = errors.New("exited while starting")

// Start starts cmd with stdout and stderr written to logPath, killed with
// SIGKILL if pipebench dies first.
func Start(name string, cmd *exec.Cmd, logPath string) (*Proc, error) {
	if err := unhandledSelf(name, cmd); err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = DieWithParent()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{cmd: cmd, exited: make(chan error, 1), Name: name, Log: logPath}
	go func() { p.exited <- cmd.Wait(); logf.Close() }()
	return p, nil
}

// PID is the child's process id, 0 when it never started.
func (p *Proc) PID() int {
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Tail returns the last 20 lines of the child's log.
func (p *Proc) Tail() string { return Tail(p.Log, 20) }

// WaitReady polls ready every 50 ms until it holds, the child exits
// (ErrExited, with its log), ctx ends, or timeout passes (an error with
// its log).
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			p.exited <- err
			return fmt.Errorf("%s %w (%v); its log:\n%s", p.Name, ErrExited, err, p.Tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if ready() {
			return nil
		}
	}
	return fmt.Errorf("%s did not come up within %s; its log:\n%s", p.Name, timeout, p.Tail())
}

// Kill ends the child at once and waits for it.
func (p *Proc) Kill() {
	if p == nil {
		return
	}
	p.cmd.Process.Kill()
	err := <-p.exited
	p.exited <- err
}

// Stop sends SIGTERM to every process, waits for them (bounded by ctx, at
// most 15 s), then kills those still running, naming each in the error.
func Stop(ctx context.Context, procs ...*Proc) error {
	for _, p := range procs {
		if p != nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	wait, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var errs []error
	for _, p := range procs {
		if p == nil {
			continue
		}
		select {
		case err := <-p.exited:
			p.exited <- err
		case <-wait.Done():
			p.Kill()
			errs = append(errs, fmt.Errorf("%s did not stop on SIGTERM and was killed", p.Name))
		}
	}
	return errors.Join(errs...)
}

// Exited reports, without waiting, whether the child has ended and how:
// its exit error (nil for status 0).
func (p *Proc) Exited() (error, bool) {
	if p == nil {
		return nil, false
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		return err, true
	default:
		return nil, false
	}
}

// Exits describes every process of procs that has ended: its name, its
// exit status and the tail of its log, one string each; none when all
// still run. For a system under test's pipebench.ExitReporter.
func Exits(procs ...*Proc) []string {
	var out []string
	for _, p := range procs {
		err, ok := p.Exited()
		if !ok {
			continue
		}
		status := "exit status 0"
		if err != nil {
			status = err.Error()
		}
		out = append(out, fmt.Sprintf("%s (pid %d) exited during the run (%s); the last lines of its log %s:\n%s", p.Name, p.PID(), status, p.Log, p.Tail()))
	}
	return out
}

// handled holds the variable of every RunIfChild this process called: the
// children it can be.
var handled sync.Map // string -> true

// unhandledSelf refuses to start cmd when it would run this very program
// as a child that the program does not recognise. An embedded system's
// child is this process's executable again, told by a variable what to
// be, and only the program's MaybeRunChild (builtins.MaybeRunChild first
// in main, or in a test package's TestMain) catches that variable.
// Without it the child would run the program's main again (a test
// binary's tests), which would start the system again, and so on: each
// generation a new process.
func unhandledSelf(name string, cmd *exec.Cmd) error {
	exe, err := os.Executable()
	if err != nil || cmd.Path != exe {
		return nil
	}
	for _, kv := range cmd.Env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			if _, ok := handled.Load(k); ok {
				return nil
			}
		}
	}
	if flag.Lookup("test.v") != nil {
		return fmt.Errorf("start %s: this test binary would run as its own child without knowing it (it would run its tests again); "+
			"give the test package a TestMain that calls children.MaybeRun() (internal/testkit/children) first: "+
			"func TestMain(m *testing.M) { children.MaybeRun(); os.Exit(m.Run()) }", name)
	}
	return fmt.Errorf("start %s: this program runs the embedded systems as child processes of itself, "+
		"and would not know it was one (it would run its main again): call sut/all's MaybeRunChild() first thing in main", name)
}
