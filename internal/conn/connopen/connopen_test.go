package connopen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/conn/netclass"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// errTimeout is a connect that got no answer in time, as netclass.Dial
// returns it.
var errTimeout = &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// target is a fake target for the opener's decisions: slot i fails with
// fail(i, try) and opens otherwise. (Real targets that take few
// connections at once are driver/drivertest's NarrowListener and
// FullListener, which every driver's conformance test runs against.)
type target struct {
	mu    sync.Mutex
	tries map[int]int
	open  atomic.Int64
	fail  func(i, try int) error
}

func (tg *target) Open(_ context.Context, i int) error {
	tg.mu.Lock()
	try := tg.tries[i]
	tg.tries[i]++
	tg.mu.Unlock()
	if err := tg.fail(i, try); err != nil {
		return err
	}
	tg.open.Add(1)
	return nil
}

func start(t *testing.T, n int, fail func(i, try int) error) (*Opener, *target, error) {
	tg := &target{tries: map[int]int{}, fail: fail}
	o, err := Start(context.Background(), Params{N: n, Open: tg.Open, Timeout: time.Second, Retry: 5 * time.Millisecond, MaxRetry: 20 * time.Millisecond})
	t.Cleanup(o.Close)
	return o, tg, err
}

// Some connections time out: Start succeeds with the others, and the
// background opens the rest once the target takes them.
func TestSomeOpenTheRestInTheBackground(t *testing.T) {
	o, tg, err := start(t, 10, func(i, try int) error {
		if i >= 3 && try < 3 {
			return errTimeout
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Opened() != 3 || o.Pending() != 7 {
		t.Errorf("after Start %d opened, %d pending; want 3 and 7", o.Opened(), o.Pending())
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return o.Pending() == 0 }, "%d still pending", o.Pending())
	if o.Opened() != 10 || tg.open.Load() != 10 {
		t.Errorf("%d opened (the target counts %d), want 10", o.Opened(), tg.open.Load())
	}
}

// None opens and the target was unreached (refused, timed out): Start
// fails with an *Error saying 0 of N, and nothing runs in the background.
func TestNoneOpenIsUnreached(t *testing.T) {
	for _, cause := range []error{errTimeout, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}} {
		o, tg, err := start(t, 4, func(int, int) error { return cause })
		var e *Error
		if !errors.As(err, &e) || e.Opened != 0 || e.N != 4 || !netclass.Classify(err).Unreached {
			t.Errorf("%v: Start %v, want 0 of 4 opened, unreached", cause, err)
		}
		o.Close()
		tg.mu.Lock()
		tries := tg.tries[0]
		tg.mu.Unlock()
		if tries != 1 {
			t.Errorf("%v: slot 0 tried %d times, want once (no background)", cause, tries)
		}
	}
}

// A failure no connection gets past (a TLS handshake, another protocol)
// fails Start even when others opened.
func TestFatalFailsStart(t *testing.T) {
	_, _, err := start(t, 8, func(i, _ int) error {
		if i == 5 {
			return fmt.Errorf("%w: the server spoke first", netclass.ErrProtocolMismatch)
		}
		return nil
	})
	if err == nil || !errors.Is(err, netclass.ErrProtocolMismatch) {
		t.Errorf("Start %v, want the protocol mismatch", err)
	}
}

// A failure after connecting (a reset, a timeout of a handshake) is not
// unreached: Start succeeds even with none open, and tries again.
func TestReachedFailuresAreRetried(t *testing.T) {
	o, _, err := start(t, 2, func(_, try int) error {
		if try == 0 {
			return &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return o.Opened() == 2 }, "%d of 2 opened", o.Opened())
}

// Close stops the background tries: none runs after it returns.
func TestCloseStopsTheBackground(t *testing.T) {
	var after atomic.Bool
	var closed atomic.Bool
	o, _, err := start(t, 3, func(i, _ int) error {
		if closed.Load() {
			after.Store(true)
		}
		if i == 0 {
			return nil
		}
		return errTimeout
	})
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	closed.Store(true)
	o.Close()
	if o.Pending() != 2 || after.Load() {
		t.Errorf("after Close: %d pending, a try ran after: %v", o.Pending(), after.Load())
	}
}
