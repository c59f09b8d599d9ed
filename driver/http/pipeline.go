package httpdriver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/conncount"
	"github.com/pipebench/pipebench/internal/conn/connopen"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// pipeClient sends HTTP/1.1 requests pipelined over a fixed set of
// connections. It exists for throughput on one core: every request queued
// on a connection while its writer was busy goes out in one write, and a
// request's timeout is the connection's read deadline, not a timer of its
// own. Answers come back in order, so each connection keeps a FIFO of the
// requests it wrote.
type pipeClient struct {
	addr    string
	tls     *tls.Config
	timeout time.Duration
	stamp   bool          // time answers by the kernel's receive timestamps
	slots   chan struct{} // one per request on the wire: connections x pipeline
	head    []byte        // "METHOD PATH HTTP/1.1\r\nHost: ...\r\n" and the fixed headers
	conns   []*pipeConn
	depth   int // requests on the wire per connection, at most
	next    atomic.Uint32
	cur     atomic.Uint32     // the connection SendAsync queued on last
	open    conncount.Counter // connections open now
	opener  *connopen.Opener  // opens in the background what start could not

	// SendAsync's sends waiting for a window slot (from waitHead), under
	// waitMu; nwaiting counts them, read without the lock.
	waitMu   sync.Mutex
	waiting  []pipeJob
	waitHead int
	nwaiting atomic.Int64
}

// idlePoll bounds how late a request queued on an idle connection gets its
// read deadline.
const idlePoll = 100 * time.Millisecond

var (
	errPipelineFull = errors.New("pipeline full: connections x pipeline requests waited for answers for longer than the timeout")
	errConnClosed   = errors.New("connection closed by the server")
)

// newPipeClient returns a client of conns connections with up to
// maxPending requests each; head is the request line and fixed headers.
func newPipeClient(addr string, tlsCfg *tls.Config, timeout time.Duration, conns, maxPending int, head []byte) *pipeClient {
	c := &pipeClient{addr: addr, tls: tlsCfg, timeout: timeout, slots: make(chan struct{}, conns*maxPending), head: head, depth: maxPending}
	for i := 0; i < conns; i++ {
		c.conns = append(c.conns, &pipeConn{c: c, kick: make(chan struct{}, 1)})
	}
	return c
}

// pipeCall is one request waiting for its answer.
type pipeCall struct {
	at       time.Time // when it was queued; its timeout runs from here
	answered time.Time // when its answer reached the machine (zero: not known)
	status   int
	err      error
	done     chan struct{}
	// fn, when set (SendAsync), is called with the outcome instead of
	// signalling done; the call then goes back to callPool. started is
	// when it was handed over, when it waited for a slot (zero: at).
	fn      func(time.Time, pipebench.Outcome)
	started time.Time
}

var callPool = sync.Pool{New: func() any { return &pipeCall{done: make(chan struct{}, 1)} }}

// finish answers call.
func (call *pipeCall) finish() {
	if fn := call.fn; fn != nil {
		out := outcome(call.status, sendTimes{written: call.at, answered: call.answered}, call.err)
		started := call.started
		if started.IsZero() {
			started = call.at
		}
		call.fn, call.started = nil, time.Time{}
		callPool.Put(call)
		fn(started, out)
		return
	}
	call.done <- struct{}{}
}

// pipeConn is one connection: requests are appended to out under mu, the
// writer goroutine writes whatever has accumulated, the reader goroutine
// answers calls in order.
type pipeConn struct {
	c    *pipeClient
	kick chan struct{}

	mu      sync.Mutex
	up      bool        // a connection is open (or being opened)
	gen     uint64      // which connection the queued calls belong to
	out     []byte      // requests not written yet
	spare   []byte      // the writer's previous buffer, reused
	pending []*pipeCall // written or queued, not answered, oldest first
	netc    net.Conn
}

// do sends one request and waits for its status code.
// It also returns when the request was queued for writing, after the wait
// for a window slot (zero if it never was).
func (c *pipeClient) do(ctx context.Context, contentType string, hdrs []pipebench.Header, body []byte) (int, sendTimes, error) {
	// A slot is taken here and given back when the answer (or the
	// connection's failure) is read, even if the caller gave up.
	select {
	case c.slots <- struct{}{}:
	default:
		t := time.NewTimer(c.timeout)
		select {
		case c.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			return 0, sendTimes{}, errPipelineFull
		case <-ctx.Done():
			t.Stop()
			return 0, sendTimes{}, ctx.Err()
		}
	}
	pc := c.conns[int(c.next.Add(1))%len(c.conns)]
	call := callPool.Get().(*pipeCall)
	written := time.Now()
	call.at, call.answered, call.status, call.err = written, time.Time{}, 0, nil

	pc.mu.Lock()
	pc.queue(call, contentType, hdrs, body)
	pc.mu.Unlock()
	pc.wake()

	select {
	case <-call.done:
		status, answered, err := call.status, call.answered, call.err
		callPool.Put(call)
		return status, sendTimes{written: written, answered: answered}, err
	case <-ctx.Done():
		// The call stays in the FIFO (its answer still has to be read);
		// it is not reused.
		return 0, sendTimes{written: written}, ctx.Err()
	}
}

// sendAsync queues one request and returns; done gets its outcome from the
// connection's reader. Requests handed over one after the other (the sends
// due at one wake-up of the open model's pacer) join the connection whose
// writer has not yet taken the previous one, while its pipeline has room:
// they go out in one write and their answers come back in one read. With
// every window slot taken it waits in a queue (first in, first out) that
// the readers serve as answers free slots: no goroutine or timer per
// waiting send, so a generator that fell behind does not fall further
// behind by waiting more expensively.
func (c *pipeClient) sendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	select {
	case c.slots <- struct{}{}:
	default:
		c.waitMu.Lock()
		c.waiting = append(c.waiting, pipeJob{ctx: ctx, b: b, done: done, at: time.Now()})
		c.nwaiting.Add(1)
		c.waitMu.Unlock()
		c.serveWaiting() // a slot may have come free meanwhile
		return
	}
	c.dispatch(b, done, time.Time{})
}

// pipeJob is a send waiting for a window slot.
type pipeJob struct {
	ctx  context.Context
	b    *pipebench.Batch
	done func(time.Time, pipebench.Outcome)
	at   time.Time // when it was handed over: its wait for a slot runs from here
}

// release gives a window slot back, or to the send waiting longest.
func (c *pipeClient) release() {
	<-c.slots
	if c.nwaiting.Load() > 0 {
		c.serveWaiting()
	}
}

// serveWaiting dispatches waiting sends while slots are free. A send
// that waited longer than the timeout fails as the pipeline being full; a
// cancelled one, as cancelled. Both sides publish first and then look (a
// waiting send, then a free slot; a free slot, then waiting sends), so a
// send never waits while a slot is free.
func (c *pipeClient) serveWaiting() {
	for c.nwaiting.Load() > 0 {
		select {
		case c.slots <- struct{}{}:
		default:
			return
		}
		for {
			c.waitMu.Lock()
			if c.waitHead == len(c.waiting) {
				c.waitMu.Unlock()
				<-c.slots
				break
			}
			j := c.waiting[c.waitHead]
			c.waiting[c.waitHead] = pipeJob{}
			if c.waitHead++; c.waitHead == len(c.waiting) {
				c.waiting, c.waitHead = c.waiting[:0], 0
			} else if c.waitHead > 256 && c.waitHead > len(c.waiting)/2 {
				n := copy(c.waiting, c.waiting[c.waitHead:])
				clear(c.waiting[n:])
				c.waiting, c.waitHead = c.waiting[:n], 0
			}
			c.nwaiting.Add(-1)
			c.waitMu.Unlock()
			switch {
			case j.ctx.Err() != nil:
				j.done(j.at, cancelled(j.ctx))
				continue
			case time.Since(j.at) > c.timeout:
				j.done(j.at, classifyErr(errPipelineFull))
				continue
			}
			c.dispatch(j.b, j.done, j.at)
			break
		}
	}
}

// dispatch queues a request that holds a window slot; started is when it
// was handed over, if it waited for the slot.
func (c *pipeClient) dispatch(b *pipebench.Batch, done func(time.Time, pipebench.Outcome), started time.Time) {
	call := callPool.Get().(*pipeCall)
	call.at, call.answered, call.status, call.err, call.fn, call.started = time.Now(), time.Time{}, 0, nil, done, started
	if pc := c.conns[int(c.cur.Load())%len(c.conns)]; pc.mu.TryLock() {
		if pc.up && len(pc.out) > 0 && len(pc.pending) < c.depth {
			pc.queue(call, b.ContentType, b.Headers, b.Body) // its writer is kicked already
			pc.mu.Unlock()
			return
		}
		pc.mu.Unlock()
	}
	n := c.next.Add(1)
	c.cur.Store(n)
	pc := c.conns[int(n)%len(c.conns)]
	pc.mu.Lock()
	pc.queue(call, b.ContentType, b.Headers, b.Body)
	pc.mu.Unlock()
	pc.wake()
}

// queue appends a request to pc's, opening the connection first when it
// is not. pc.mu is held.
func (pc *pipeConn) queue(call *pipeCall, contentType string, hdrs []pipebench.Header, body []byte) {
	if !pc.up {
		pc.up = true
		pc.gen++
		go pc.run(pc.gen, nil)
	}
	pc.out = append(appendRequest(pc.out, pc.c.head, contentType, hdrs, len(body)), body...)
	pc.pending = append(pc.pending, call)
}

// wake kicks pc's writer.
func (pc *pipeConn) wake() {
	select {
	case pc.kick <- struct{}{}:
	default:
	}
}

// start opens the connections as connopen does (what the target takes
// now, the rest in the background) and starts the writer and reader of
// each as it opens; the first to open is checked for a server that
// speaks first. A send to a connection not open yet opens it itself.
func (c *pipeClient) start(ctx context.Context) error {
	var checked atomic.Bool
	var err error
	c.opener, err = connopen.Start(ctx, connopen.Params{N: len(c.conns), Timeout: c.timeout, Open: func(ctx context.Context, i int) error {
		netc, err := c.dial(ctx)
		if err != nil {
			return err
		}
		if c.tls == nil && checked.CompareAndSwap(false, true) && speaksFirst(netc) {
			netc.Close()
			return errSpeaksFirst
		}
		pc := c.conns[i]
		pc.mu.Lock()
		if pc.up { // a send came first (Start is called before any send)
			pc.mu.Unlock()
			netc.Close()
			return nil
		}
		pc.up = true
		pc.gen++
		gen := pc.gen
		pc.mu.Unlock()
		go pc.run(gen, netc)
		return nil
	}})
	return err
}

// dial opens one connection, counted in c.open until it is closed.
func (c *pipeClient) dial(ctx context.Context) (net.Conn, error) {
	netc, err := netclass.Dial(ctx, c.addr, c.tls, c.timeout)
	if err != nil {
		return nil, err
	}
	return c.open.Wrap(netc), nil
}

// run writes on the connection (opening it first when netc is nil) until
// it fails; the reader runs beside it. Every call queued on a failed
// connection is answered with the error, and the next request opens a new
// connection.
func (pc *pipeConn) run(gen uint64, netc net.Conn) {
	if netc == nil {
		var err error
		if netc, err = pc.c.dial(context.Background()); err != nil {
			pc.fail(gen, err)
			return
		}
	}
	pc.mu.Lock()
	pc.netc = netc
	pc.mu.Unlock()
	readerDone := make(chan struct{})
	go func() { pc.read(gen, netc); close(readerDone) }()
	// Requests queued while the connection was opening are written at once.
	select {
	case pc.kick <- struct{}{}:
	default:
	}
	for {
		select {
		case <-pc.kick:
		case <-readerDone:
			return
		}
		pc.mu.Lock()
		if pc.gen != gen || !pc.up {
			pc.mu.Unlock()
			// The kick may have been meant for the writer of the next
			// connection: pass it on.
			select {
			case pc.kick <- struct{}{}:
			default:
			}
			return
		}
		buf := pc.out
		pc.out, pc.spare = pc.spare[:0], nil // never two owners of one array
		pc.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		netc.SetWriteDeadline(time.Now().Add(pc.c.timeout))
		_, err := netc.Write(buf)
		pc.mu.Lock()
		if cap(buf) <= 1<<20 {
			pc.spare = buf[:0]
		}
		pc.mu.Unlock()
		if err != nil {
			netc.Close() // the reader fails the calls
			<-readerDone
			return
		}
	}
}

// read answers the calls of connection gen in order until it fails.
func (pc *pipeConn) read(gen uint64, netc net.Conn) {
	var sr *stampedReader
	if pc.c.stamp {
		sr = newStampedReader(netc)
	}
	var src io.Reader = netc
	if sr != nil {
		src = sr
	}
	br := bufio.NewReaderSize(src, 32<<10)
	var rp respParser
	var err error
	// Setting a deadline costs a timer update: the one set (dl) stays
	// while it falls within [deadline, deadline + timeout/8], so a request
	// times out after its timeout and at most an eighth more.
	var dl time.Time
	slack := pc.c.timeout / 8
	for {
		pc.mu.Lock()
		var oldest time.Time
		if len(pc.pending) > 0 {
			oldest = pc.pending[0].at
		}
		pc.mu.Unlock()
		if oldest.IsZero() {
			// Idle: wait for bytes, looking again at the queue every
			// idlePoll so that a request queued meanwhile gets its deadline.
			if now := time.Now(); dl.Before(now) {
				dl = now.Add(min(pc.c.timeout, idlePoll))
				netc.SetReadDeadline(dl)
			}
			if _, err = br.Peek(1); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				break
			}
			pc.mu.Lock()
			unasked := len(pc.pending) == 0
			pc.mu.Unlock()
			if unasked {
				err = errUnasked
				break
			}
			continue
		}
		if deadline := oldest.Add(pc.c.timeout); dl.Before(deadline) || dl.After(deadline.Add(slack)) {
			dl = deadline.Add(slack)
			netc.SetReadDeadline(dl)
		}
		var status int
		var closeAfter bool
		if status, closeAfter, err = readResponse(br, &rp); err != nil {
			break
		}
		pc.mu.Lock()
		if len(pc.pending) == 0 {
			pc.mu.Unlock()
			err = errors.New("the server answered a request that was not sent")
			break
		}
		call := pc.pending[0]
		pc.pending[0] = nil
		pc.pending = pc.pending[1:]
		var rest []*pipeCall
		if closeAfter {
			// Detach before answering, so that the caller's next request
			// opens a new connection instead of queueing on this one.
			rest = pc.detach()
		}
		pc.mu.Unlock()
		call.status = status
		if sr != nil {
			call.answered = sr.last
		}
		pc.c.release()
		call.finish()
		if closeAfter {
			netc.Close()
			pc.answer(rest, errConnClosed)
			return
		}
	}
	netc.Close()
	pc.fail(gen, err)
}

// detach takes the calls of the current connection and lets the next
// request open a new one. pc.mu is held.
func (pc *pipeConn) detach() []*pipeCall {
	calls := pc.pending
	pc.pending = nil
	pc.out = pc.out[:0]
	pc.up = false
	pc.netc = nil
	pc.gen++ // the old writer sees it and stops
	select {
	case pc.kick <- struct{}{}:
	default:
	}
	return calls
}

// answer fails calls with err.
func (pc *pipeConn) answer(calls []*pipeCall, err error) {
	for _, call := range calls {
		pc.c.release()
		call.err = err
		call.finish()
	}
}

// fail answers every call of connection gen with err and lets the next
// request open a new connection.
func (pc *pipeConn) fail(gen uint64, err error) {
	pc.mu.Lock()
	if pc.gen != gen {
		pc.mu.Unlock()
		return
	}
	calls := pc.detach()
	pc.mu.Unlock()
	pc.answer(calls, err)
}

// close stops opening connections and shuts every one; calls waiting on
// them fail.
func (c *pipeClient) close() {
	c.opener.Close()
	for _, pc := range c.conns {
		pc.mu.Lock()
		if pc.netc != nil {
			pc.netc.Close()
		}
		pc.mu.Unlock()
	}
}
