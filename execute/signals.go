package execute

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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

// QuitSignal (SIGQUIT, Ctrl-\ on a terminal) cuts a run short at once, as a second
// Ctrl-C does: the load and the drain are abandoned, what was measured is
// written. (Go's own answer to it, a dump of the goroutines and exit 2,
// would lose the Result; SIGABRT still gives that dump.)
var QuitSignal os.Signal = syscall.SIGQUIT

// Unheld is how long a command that holds nothing measured (reading its
// input, rendering a report, merging shards) has, after a stop signal, to
// end by itself before the process ends (ExitFailure).
const Unheld = time.Second

// Signals returns a context done at the first stop signal (stop the load,
// drain, write the result), one done at the second (abandon the drain and
// in-flight sends, still write the result) and a function that stops
// listening. A third signal ends the process at once. Each step is
// announced on w, on a line of its own. SIGQUIT is the second step at
// once.
//
// That is while a Result is at stake: measured or being kept (see Hold).
// Otherwise nothing is lost by stopping: a stop signal cancels the context
// (a read of the input returns, see pipebench.ReadInput) and the process
// ends within Unheld, whatever the command was doing.
func Signals(w io.Writer) (stopCtx, cut context.Context, release func()) {
	st := &holds{}
	stopCtx, stopBy := context.WithCancelCause(context.WithValue(context.Background(), holdsKey{}, st))
	stop := func() { stopBy(context.Canceled) }
	cut, cutNow := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, append([]os.Signal{QuitSignal}, StopSignals...)...)
	quit := make(chan struct{})
	piped := false
	next := func(timeout <-chan time.Time) (os.Signal, bool) {
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
			case <-timeout:
				return nil, true
			case <-quit:
				return nil, false
			}
		}
	}
	go func() {
		s, ok := next(nil)
		if !ok {
			return
		}
		stopBy(Stopped{signalName(s)})
		if !st.held() {
			fmt.Fprintf(w, "\npipebench: %s: stopping\n", signalName(s))
			// A command holding nothing measured ends by itself at once
			// (its context is done); one that is busy is ended.
			again, ok := next(time.After(Unheld))
			if !ok {
				return
			}
			if !st.held() {
				removeWriting()
				if again != nil {
					os.Exit(pipebench.ExitCut)
				}
				fmt.Fprintf(w, "pipebench: stopped\n")
				os.Exit(pipebench.ExitFailure)
			}
			// A run began meanwhile (and found its context done): it
			// keeps what it measured.
			if again == nil {
				if s, ok = next(nil); !ok {
					return
				}
			} else {
				s = again
			}
		} else if s != QuitSignal {
			fmt.Fprintf(w, "\npipebench: %s: stopping: waiting for the sends in flight and the drain (Ctrl-C again to cut them short)\n", signalName(s))
			if s, ok = next(nil); !ok {
				return
			}
		}
		cutNow()
		fmt.Fprintf(w, "\npipebench: %s: cut short: writing what was measured (Ctrl-C again to quit without it)\n", signalName(s))
		if _, ok = next(nil); !ok {
			return
		}
		removeWriting()
		os.Exit(pipebench.ExitCut)
	}()
	return stopCtx, cut, func() {
		close(quit)
		signal.Stop(sigs)
		stop()
		cutNow()
	}
}

// Stopped is the cause of the context Signals returns once a signal came
// (context.Cause): "stopped while reading scenario x.yaml: interrupt". It
// is a context.Canceled.
type Stopped struct{ Signal string }

func (s Stopped) Error() string        { return s.Signal }
func (s Stopped) Is(target error) bool { return target == context.Canceled }

// holds counts what is at stake in a process: runs measuring and Results
// being kept.
type holds struct{ n atomic.Int64 }

func (h *holds) held() bool { return h.n.Load() > 0 }

type holdsKey struct{}

// Hold marks, until release is called, that what the command does with
// ctx (a context from Signals, or one made from it) measures or keeps a
// Result: a stop signal then stops the load and drains, a second cuts
// short, and the Result is kept, rather than the process ending within
// Unheld. Run and KeepResult hold for themselves; a command that holds
// results between runs (a limit search's probes, a suite's cases, a
// Kubernetes launch and its clean-up) holds for the whole of it. Without
// Signals' context, Hold does nothing.
func Hold(ctx context.Context) (release func()) {
	h, _ := ctx.Value(holdsKey{}).(*holds)
	if h == nil {
		return func() {}
	}
	h.n.Add(1)
	var once sync.Once
	return func() { once.Do(func() { h.n.Add(-1) }) }
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
	case syscall.SIGQUIT:
		return "quit (SIGQUIT)"
	}
	return s.String()
}
