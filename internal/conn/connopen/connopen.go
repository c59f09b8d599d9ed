// Package connopen opens a driver's pool of connections the same way for
// every driver that holds connections (http, otlp, grpc): open what the
// target takes, keep opening the rest in the background, and call the
// target unreached only when it took none.
//
// A target that takes only a few connections at once (a small accept
// backlog, a server that serves one connection at a time) lets some of a
// burst of connection attempts through and leaves the rest waiting: their
// SYNs are dropped and the connects time out. That is a busy target, not
// an unreachable one, so a failed connect fails Start only when nothing
// opened at all, or when it says that no connection can ever work (a TLS
// handshake that fails, a peer speaking another protocol, a name that
// does not resolve, the process out of file descriptors).
package connopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// Params configure Start.
type Params struct {
	// N is the number of connections, slots 0 to N-1.
	N int
	// Open opens slot i and puts the connection to use; it returns nil
	// once it is open, or why it is not. It is called from several
	// goroutines at once, never twice at once for one slot, and never for
	// a slot it opened. ctx bounds the try (Timeout).
	Open func(ctx context.Context, i int) error
	// Timeout bounds one try. Start waits for the first try of every slot
	// at most twice as long (at least 2 s).
	Timeout time.Duration
	// Workers is how many tries run at once (default 64).
	Workers int
	// Retry is the pause before the first background round; it doubles
	// after a round that opened nothing, up to MaxRetry, and starts again
	// after a round that opened something (defaults 100 ms and 2 s).
	Retry, MaxRetry time.Duration
}

// Opener keeps opening the slots Start could not, in the background, until
// they are all open or it is closed. Its methods are safe for concurrent
// use.
type Opener struct {
	p       Params
	opened  atomic.Int64
	pending atomic.Int64
	stop    context.CancelFunc
	done    chan struct{}
}

// Error is Start's failure: no connection can work, or none opened.
type Error struct {
	Opened, N int
	// Err is the failure of one connection that says why.
	Err error
}

// Error says how many connections opened and why the others did not.
func (e *Error) Error() string {
	return fmt.Sprintf("%d of %d connections opened: %v", e.Opened, e.N, e.Err)
}

// Unwrap returns the connection's failure.
func (e *Error) Unwrap() error { return e.Err }

// Start gives every slot one try, Workers at a time, and returns when each
// has had it, or the wait ran out (twice Timeout, at least 2 s), or a try
// failed after another opened (the target takes some, not all: the slots
// not tried yet are left to the background). It fails
// with an *Error when a try failed in a way no connection can get past
// (see fatal), or when none opened and a try found the target unreached
// (refused, unreachable, no answer to the connect); the slots that opened
// are then the caller's to close. Otherwise the slots left closed are
// tried again in the background until they open or Close. ctx bounds only
// Start's own tries.
func Start(ctx context.Context, p Params) (*Opener, error) {
	if p.Workers <= 0 {
		p.Workers = 64
	}
	if p.Retry <= 0 {
		p.Retry = 100 * time.Millisecond
	}
	if p.MaxRetry < p.Retry {
		p.MaxRetry = max(p.Retry, 2*time.Second)
	}
	o := &Opener{p: p, done: make(chan struct{})}
	slots := make([]int, p.N)
	for i := range slots {
		slots[i] = i
	}
	wait, cancel := context.WithTimeout(ctx, max(2*p.Timeout, 2*time.Second))
	left, unreached, fatalErr := o.round(wait, slots, true)
	cancel()
	switch {
	case fatalErr != nil:
		close(o.done)
		return o, &Error{Opened: o.Opened(), N: p.N, Err: fatalErr}
	case ctx.Err() != nil:
		close(o.done)
		return o, ctx.Err()
	case o.Opened() == 0 && unreached != nil:
		close(o.done)
		return o, &Error{Opened: 0, N: p.N, Err: unreached}
	}
	o.pending.Store(int64(len(left)))
	if len(left) == 0 {
		close(o.done)
		return o, nil
	}
	bg, stop := context.WithCancel(context.Background())
	o.stop = stop
	go o.background(bg, left)
	return o, nil
}

// Opened is how many slots have opened (at Start and since).
func (o *Opener) Opened() int { return int(o.opened.Load()) }

// Pending is how many slots are still to open.
func (o *Opener) Pending() int { return int(o.pending.Load()) }

// Report logs, when Start left connections to open in the background, how
// many of the driver's (named by driver: "http driver") are open now and
// that the target (its address) takes few at once. A nil log or Opener
// says nothing.
func (o *Opener) Report(log *slog.Logger, driver, target string, open int) {
	if o == nil || log == nil || o.Pending() == 0 {
		return
	}
	log.Warn(driver+": the target took "+strconv.Itoa(open)+" of "+strconv.Itoa(o.p.N)+" connections at once (a small accept backlog, or a server that serves few connections at a time); the rest keep opening in the background",
		"target", target, "open", open, "connections", o.p.N)
}

// Close stops the background tries and returns once none runs: from then
// on Open is not called again. Calling it more than once is fine.
func (o *Opener) Close() {
	if o == nil {
		return
	}
	if o.stop != nil {
		o.stop()
	}
	<-o.done
}

// background tries the slots left, in rounds, until they are open or ctx
// ends.
func (o *Opener) background(ctx context.Context, slots []int) {
	defer close(o.done)
	pause := o.p.Retry
	t := time.NewTimer(pause)
	defer t.Stop()
	for len(slots) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		before := len(slots)
		slots, _, _ = o.round(ctx, slots, false)
		o.pending.Store(int64(len(slots)))
		if len(slots) < before {
			pause = o.p.Retry
		} else {
			pause = min(2*pause, o.p.MaxRetry)
		}
		t.Reset(pause)
	}
}

// round tries each slot once, Workers at a time, each try bounded by
// Timeout and all of them by ctx, and returns the slots that did not open.
// With stopOnFatal, a fatal failure cancels the round and is returned;
// unreached is the first failure that left the target unreached.
func (o *Opener) round(ctx context.Context, slots []int, stopOnFatal bool) (left []int, unreached, fatalErr error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	opened := make([]bool, len(slots))
	next := make(chan int)
	// At Start, once a connection opened and another failed, the target
	// is known to take some and not all: the slots not tried yet go to
	// the background rather than make Start wait for their tries.
	enough, enoughOnce := make(chan struct{}), sync.Once{}
	var wg sync.WaitGroup
	for w := 0; w < min(o.p.Workers, len(slots)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				try, end := context.WithTimeout(ctx, o.p.Timeout)
				err := o.p.Open(try, slots[k])
				end()
				if err == nil {
					opened[k] = true
					o.opened.Add(1)
					continue
				}
				oc := netclass.Classify(err)
				mu.Lock()
				switch {
				case stopOnFatal && fatal(err) && fatalErr == nil:
					fatalErr = err
					cancel()
				case oc.Unreached && unreached == nil:
					unreached = err
				}
				mu.Unlock()
				if stopOnFatal && o.opened.Load() > 0 {
					enoughOnce.Do(func() { close(enough) })
				}
			}
		}()
	}
feed:
	for k := range slots {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		case <-enough:
			break feed
		}
	}
	close(next)
	wg.Wait()
	for k, s := range slots {
		if !opened[k] {
			left = append(left, s)
		}
	}
	return left, unreached, fatalErr
}

// fatal reports whether a failed connect says no connection to the target
// can work: a TLS handshake or protocol mismatch, a name that does not
// resolve, the process out of file descriptors. A refused connect, an
// unreachable address or a connect that timed out can be a busy target's
// doing, and a timeout or a reset after connecting is measured by sends.
func fatal(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	o := netclass.Classify(err)
	return o.Unreached && o.Detail != netclass.DetailRefused && o.Detail != netclass.DetailNoSocket && o.Detail != netclass.DetailUnreachable
}
