package execute

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pipebench/pipebench"
)

// StopSignals end a run the way Ctrl-C does: stop the load, drain, keep
// the Result. SIGHUP (the terminal went away) and SIGPIPE (the output was
// piped into a program that has quit, like head) too: without them the
// measured Result would be lost with the process. After a SIGPIPE, writes
// to the closed pipe fail with EPIPE instead of killing the process.
//
// A SIGPIPE also comes from a write to any connection its peer closed (a
// driver's, an observer's: the write fails with EPIPE, which they handle).
// Only one that finds the standard output or error closed stops the run.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE}

// Signals returns a context done at the first stop signal (stop the load,
// drain, write the result), one done at the second (abandon the drain and
// in-flight sends, still write the result) and a function that stops
// listening. A third signal ends the process at once. Each step is
// announced on w, on a line of its own.
func Signals(w io.Writer) (stopCtx, cut context.Context, release func()) {
	stopCtx, stop := context.WithCancel(context.Background())
	cut, cutNow := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, StopSignals...)
	quit := make(chan struct{})
	piped := false
	next := func() (os.Signal, bool) {
		for {
			select {
			case s := <-sigs:
				// Every later write to a closed pipe raises SIGPIPE
				// again: only the first one means anything.
				if s == syscall.SIGPIPE {
					if piped || !outputClosed(1, 2) {
						continue
					}
					piped = true
				}
				return s, true
			case <-quit:
				return nil, false
			}
		}
	}
	go func() {
		s, ok := next()
		if !ok {
			return
		}
		stop()
		fmt.Fprintf(w, "\npipebench: %s: stopping: waiting for the sends in flight and the drain (Ctrl-C again to cut them short)\n", signalName(s))
		if s, ok = next(); !ok {
			return
		}
		cutNow()
		fmt.Fprintf(w, "\npipebench: %s: cut short: writing what was measured (Ctrl-C again to quit without it)\n", signalName(s))
		if _, ok = next(); !ok {
			return
		}
		os.Exit(pipebench.ExitCut)
	}()
	return stopCtx, cut, func() {
		close(quit)
		signal.Stop(sigs)
		stop()
		cutNow()
	}
}

// outputClosed reports whether one of the file descriptors is a pipe or a
// socket whose reading end is gone (poll says POLLERR or POLLHUP on it).
func outputClosed(fds ...int) bool {
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
	}
	if n, err := unix.Poll(pfds, 0); err != nil || n == 0 {
		return false
	}
	for _, p := range pfds {
		if p.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}

// signalName says which signal came, as a person knows it.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "interrupt"
	case syscall.SIGPIPE:
		return "output closed (SIGPIPE)"
	case syscall.SIGHUP:
		return "hangup (SIGHUP)"
	}
	return s.String()
}
