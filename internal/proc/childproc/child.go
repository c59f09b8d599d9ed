package childproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pipebench/pipebench/internal/proc/wing"
)

// RunIfChild is the body of an embedded system's MaybeRunChild. When this
// process was started as that system's child, which the environment
// variable env says by being set, it is the child's main: it calls run
// with env's value and exits the process, with status 1 after writing
// "what: ERROR" to stderr when run fails, else 0. When env is not set it
// returns at once.
//
// The child ignores SIGQUIT: Ctrl-\ on a terminal reaches every process
// of the foreground group, and pipebench answers it by cutting its run
// short and keeping its Result, which a system under test dumping its
// goroutines and dying under it would turn into a failure of the system.
// pipebench stops its children itself.
func RunIfChild(env, what string, run func(value string) error) {
	handled.Store(env, true)
	v := os.Getenv(env)
	if v == "" {
		return
	}
	signal.Ignore(syscall.SIGQUIT)
	if err := run(v); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ReadSpec reads the JSON file at path, which a parent wrote for its
// child, into v. An error decoding it names the file.
func ReadSpec(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteSpec writes v as JSON to the file at path, for the child that
// ReadSpec reads it in.
func WriteSpec(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// PortTaken reports whether err is a child's exit because a port it was
// given was taken in the meantime (another process listened on it between
// FreePort and the child): the caller starts it again on new ports.
func PortTaken(err error) bool {
	return errors.Is(err, ErrExited) && strings.Contains(err.Error(), "address already in use")
}

// Answers reports whether a GET of url answers with status, within timeout
// (0: no limit of its own): a readiness probe for WaitReady.
func Answers(url string, status int, timeout time.Duration) bool {
	cl := http.Client{Timeout: timeout}
	resp, err := cl.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == status
}

// Listening reports whether a TCP connection to addr (host:port) opens
// within 200 ms: a readiness probe for a child's listener.
func Listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Progress is where a build of the wing's program for a child is shown
// (see Program); os.Stderr by default.
var Progress io.Writer = os.Stderr

// Program returns the program to start as the child that the variable env
// makes: this program itself when it runs that child (its MaybeRunChild
// called RunIfChild for env: light children, and every child in a test
// binary that links them), else pipebench-sut, the program that carries
// the heavy ones (the OpenTelemetry Collector, the health-event service,
// the document store), found or built as package wing says.
func Program(ctx context.Context, env string) (string, error) {
	if _, ok := handled.Load(env); ok {
		return os.Executable()
	}
	return wing.Path(ctx, wing.SUT, Progress)
}
