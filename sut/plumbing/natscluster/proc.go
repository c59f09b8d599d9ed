package natscluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// Proc is a chaos victim of any child process a system under test runs
// besides its nodes (an event proxy): killed, started again by its start
// function, frozen and thawed. Its methods are safe for concurrent use.
type Proc struct {
	name  string
	start func() (*childproc.Proc, error)
	ready func() bool

	procState
}

var _ Victim = (*Proc)(nil)

// NewProc starts a process with start and waits (bounded by ctx and
// timeout) until ready holds; start is called again by Restart.
func NewProc(ctx context.Context, name string, timeout time.Duration, start func() (*childproc.Proc, error), ready func() bool) (*Proc, error) {
	p := &Proc{name: name, start: start, ready: ready}
	proc, err := start()
	if err != nil {
		return nil, err
	}
	p.proc = proc
	if err := proc.WaitReady(ctx, timeout, ready); err != nil {
		childproc.Stop(context.Background(), proc)
		return nil, err
	}
	return p, nil
}

// Name is the process's name.
func (p *Proc) Name() string { return p.name }

// Kill ends the process at once (SIGKILL) and waits for it.
func (p *Proc) Kill() error { return p.kill(p.name) }

// Restart starts a killed process again and waits until it is ready (the
// lock is not held while it waits).
func (p *Proc) Restart(ctx context.Context, timeout time.Duration) error {
	p.mu.Lock()
	if !p.down {
		p.mu.Unlock()
		return fmt.Errorf("%s is running: kill it first", p.name)
	}
	proc, err := p.start()
	if err != nil {
		p.mu.Unlock()
		return err
	}
	p.proc, p.down = proc, false
	p.mu.Unlock()
	return proc.WaitReady(ctx, timeout, p.ready)
}

// Freeze stops the process (SIGSTOP) until Thaw.
func (p *Proc) Freeze() error { return p.freeze(p.name) }

// Thaw continues a frozen process.
func (p *Proc) Thaw() error { return p.thaw() }

// Exited describes the process if it ended without being killed on
// purpose: its exit status and the tail of its log; none while it runs.
func (p *Proc) Exited() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return nil
	}
	return childproc.Exits(p.proc)
}

// LameDuck is for nats-server nodes only.
func (p *Proc) LameDuck() error {
	return errors.New(p.name + " has no lame duck mode: only nats-server nodes do")
}

// Stop thaws the process if frozen and stops it (SIGTERM, then SIGKILL
// past ctx or 15 s).
func (p *Proc) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.thawLocked()
	if p.down {
		return nil
	}
	p.down = true
	return childproc.Stop(ctx, p.proc)
}
