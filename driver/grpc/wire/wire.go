// Package wire is the grpc driver's own gRPC client, written from the gRPC
// over HTTP/2 protocol (RFC 9113, RFC 7541, gRPC's PROTOCOL-HTTP2): unary
// and client-streaming calls of one method over a few HTTP/2 connections,
// plain (prior knowledge) or TLS, TCP or a Unix socket.
//
// It exists for what a load generator needs and a general client does not
// give: a call costs no goroutine and no timer. The caller hands a call
// over (Do): its frames are appended to the connection's buffer (the
// request's fixed header fields were encoded once, and after a
// connection's first request they are one byte each), and Flush writes
// every connection's buffer with one system call, so the calls due at one
// wake-up of the open-model pacer leave together. One goroutine per
// connection reads the answers (with the kernel's receive time where the
// socket gives it) and reports each call's end; one goroutine per client
// expires the calls past their deadline. grpc-go's client keeps a goroutine
// per call in flight, a context and a timer per call, and hands every
// frame to a writer goroutine: a run that falls behind piles up calls as
// goroutines with deep stacks.
//
// What the server holds back is told, not hidden: a call that finds every
// connection at the server's MAX_CONCURRENT_STREAMS, or its flow-control
// windows shut, waits in the client's queue (first in, first out) until
// the server lets it go or its deadline passes; one that waited out its
// deadline comes back unsent, with why (Why). Calls whose frames never
// reached the kernel when a connection broke, and calls a GOAWAY says the
// server never processed, are sent again on another connection.
package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Client.
type Options struct {
	// Addr is where the connections go: host:port, or unix:/path.
	Addr string
	// TLS, when not nil, is the TLS configuration of every connection
	// (ALPN h2 is added); nil: plaintext HTTP/2 (prior knowledge).
	TLS *tls.Config
	// Authority is the :authority of every call (host:port).
	Authority string
	// Path is the method called, /package.Service/Method.
	Path string
	// Timeout bounds a call from Do to its answer (its deadline; it is
	// sent as grpc-timeout), a connection's opening, and its handshake.
	Timeout time.Duration
	// Metadata is sent with every call (lower-case names).
	Metadata []Field
	// Vary names the fields each call gives a value of (Call.Values), in
	// that order: lower-case, not pseudo-headers.
	Vary []string
	// Conns is the number of connections (at least 1).
	Conns int
	// UserAgent is the user-agent field (empty: none).
	UserAgent string
}

// Field is one metadata field.
type Field struct {
	Name, Value string
	// Secret fields are never added to any HPACK table (literal never
	// indexed).
	Secret bool
}

// Why says why a call came back without having left pipebench.
type Why uint8

// The reasons a call did not leave.
const (
	// Sent: the call left (or may have: any of its frames reached the
	// kernel).
	Sent Why = iota
	// NoConnection: no connection was ready for the whole wait (they
	// were opening, or the server never finished its handshake).
	NoConnection
	// NoStream: every ready connection had as many calls open as the
	// server's MAX_CONCURRENT_STREAMS allows, for the whole wait.
	NoStream
	// NoWindow: the server's flow-control windows stayed too small for
	// the call's messages for the whole wait.
	NoWindow
	// DialFailed: no connection could be opened (Err says why).
	DialFailed
	// Cancelled: the call's context ended before it left.
	Cancelled
	// Closed: the client was closed before the call left.
	Closed
)

// String is the reason as an outcome's Detail names it.
func (w Why) String() string {
	switch w {
	case NoConnection:
		return "no ready connection"
	case NoStream:
		return "no free stream"
	case NoWindow:
		return "flow control window full"
	case DialFailed:
		return "connect failed"
	case Cancelled:
		return "cancelled"
	case Closed:
		return "client closed"
	}
	return ""
}

// Call is one call handed to Client.Do. The caller sets the request's
// fields; the client sets the result's before it calls Done, once. The
// client keeps the Call, and Data and the strings of Values, until then.
type Call struct {
	// Data is the request's messages, each with gRPC's 5-byte prefix (a
	// unary call has one).
	Data []byte
	// Values are the values of Options.Vary's fields for this call ("":
	// not sent).
	Values []string
	// Ctx, when not nil, ends the call early (Cancelled, or a cancelled
	// call's RST_STREAM).
	Ctx context.Context
	// Done is called once the call ended, from any goroutine (never while
	// the client holds a lock).
	Done func(*Call)

	// Status is the gRPC status code the server ended the call with (0:
	// OK), -1 when it ended another way (Err or Unsent).
	Status int
	// Message is the server's grpc-message.
	Message string
	// Err is why the call failed without a status: the connection broke,
	// the deadline passed (ErrTimeout), the server does not speak gRPC.
	Err error
	// Unsent, when not Sent, says that nothing of the call left and why.
	Unsent Why
	// Taken is when Do took the call, Written when its frames were handed
	// to the kernel (zero when they were not), Answered when the end of
	// its answer reached the machine by the kernel's receive time (zero
	// where the socket does not tell).
	Taken, Written, Answered time.Time

	c          *conn
	id         uint32
	deadline   time.Time
	off        int   // bytes of Data written
	win        int64 // the stream's send window
	recvd      int   // bytes received since the stream's last WINDOW_UPDATE
	headers    bool  // the response's headers came
	inPending  bool  // in c's list of streams with data to send
	why        Why   // why it waits in the queue
	prev, next *Call // in c's list of calls in flight, or in the queue
	pnext      *Call // in c's list of streams with data to send
}

// String sums a call's end up: its status, error or why it was not sent.
func (k *Call) String() string {
	switch {
	case k.Unsent != Sent:
		return fmt.Sprintf("unsent (%s): %v", k.Unsent, k.Err)
	case k.Err != nil:
		return fmt.Sprintf("error: %v", k.Err)
	}
	return fmt.Sprintf("status %d %q", k.Status, k.Message)
}

// ErrTimeout is a call that had no answer by its deadline.
var ErrTimeout = errors.New("no answer within the timeout")

// errClosed ends the calls in flight when the client closes.
var errClosed = errors.New("the grpc client was closed while the call was in flight")

// Client calls one method over Options.Conns connections. Its methods are
// safe for concurrent use.
type Client struct {
	o      Options
	conns  []*conn
	fields []field
	bl     *blocks
	rr     atomic.Uint32

	mu           sync.Mutex // the queue
	qhead, qtail *Call
	qlen         atomic.Int64

	lastErr atomic.Pointer[error] // the last failure to open a connection
	closed  atomic.Bool
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the client's goroutines
}

// New makes a client; no connection is opened until Open.
func New(o Options) (*Client, error) {
	if o.Conns < 1 {
		o.Conns = 1
	}
	if o.Timeout <= 0 {
		return nil, errors.New("wire: a timeout is required")
	}
	if o.TLS != nil {
		o.TLS = o.TLS.Clone()
		o.TLS.NextProtos = []string{"h2"}
	}
	cl := &Client{o: o}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	scheme := field{name: ":scheme", value: "http", static: staticSchemeHTTP, whole: true}
	if o.TLS != nil {
		scheme = field{name: ":scheme", value: "https", static: staticSchemeHTTPS, whole: true}
	}
	cl.fields = []field{
		{name: ":method", value: "POST", static: staticMethodPOST, whole: true},
		scheme,
		{name: ":path", value: o.Path, static: staticPath},
		{name: ":authority", value: o.Authority, static: staticAuthority},
		{name: "content-type", value: "application/grpc", static: staticContentType},
		{name: "te", value: "trailers"},
		{name: "grpc-timeout", value: timeoutValue(o.Timeout)},
	}
	if o.UserAgent != "" {
		cl.fields = append(cl.fields, field{name: "user-agent", value: o.UserAgent, static: staticUserAgent})
	}
	for _, f := range o.Metadata {
		cl.fields = append(cl.fields, field{name: f.Name, value: f.Value, secret: f.Secret})
	}
	cl.bl = makeBlocks(cl.fields, o.Vary)
	for i := 0; i < o.Conns; i++ {
		cl.conns = append(cl.conns, &conn{cl: cl, i: i})
	}
	cl.wg.Add(1)
	go cl.expireLoop()
	return cl, nil
}

// timeoutValue is d as grpc-timeout writes it: at most 8 digits and a
// unit.
func timeoutValue(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"}} {
		n := (d + u.d - 1) / u.d
		if n < 1e8 {
			return strconv.FormatInt(int64(n), 10) + u.unit
		}
	}
	return "99999999H"
}

// Open opens connection i (0 to Conns-1) and makes it ready: the dial,
// the TLS handshake, the prefaces and the server's SETTINGS, within ctx.
// It is what connopen's Open calls, for a connection not open.
func (cl *Client) Open(ctx context.Context, i int) error {
	return cl.conns[i].open(ctx)
}

// Ready is the number of connections ready for calls.
func (cl *Client) Ready() int {
	n := 0
	for _, c := range cl.conns {
		if c.state.Load() == stateReady {
			n++
		}
	}
	return n
}

// Do hands k over: its frames are appended to a ready connection's buffer
// (written at the next Flush, or by the connection's reader when it wrote
// for itself meanwhile), or k waits in the queue for one that the server
// lets it on. It never blocks. k.Done may be called before Do returns (a
// call that cannot wait: no connection can open, its context ended).
func (cl *Client) Do(k *Call) {
	now := time.Now()
	k.Taken, k.deadline = now, now.Add(cl.o.Timeout)
	k.Status, k.Message, k.Err, k.Unsent = -1, "", nil, Sent
	k.Written, k.Answered = time.Time{}, time.Time{}
	k.c, k.id, k.off, k.recvd, k.headers, k.prev, k.next, k.pnext, k.inPending = nil, 0, 0, 0, false, nil, nil, nil, false
	switch {
	case cl.closed.Load():
		k.Unsent = Closed
		k.Done(k)
		return
	case k.Ctx != nil && k.Ctx.Err() != nil:
		k.Unsent, k.Err = Cancelled, k.Ctx.Err()
		k.Done(k)
		return
	}
	why := NoConnection
	if cl.qlen.Load() == 0 {
		// The calls handed over between two Flushes go on one connection
		// while it takes them: one write for them all.
		n := uint32(len(cl.conns))
		start := cl.rr.Load()
		for j := uint32(0); j < n; j++ {
			c := cl.conns[(start+j)%n]
			if c.state.Load() != stateReady {
				continue
			}
			w := c.tryWrite(k)
			if w == Sent {
				return
			}
			why = max(why, w)
		}
	}
	if !cl.canWait() {
		k.Unsent = DialFailed
		if p := cl.lastErr.Load(); p != nil {
			k.Err = *p
		}
		k.Done(k)
		return
	}
	k.why = why
	cl.mu.Lock()
	if cl.qtail != nil {
		// Behind others: it waits for what they wait for.
		k.why = cl.qtail.why
	}
	cl.push(k)
	cl.mu.Unlock()
	cl.drain()
}

// canWait reports whether a call that found no connection to take it may
// wait for one: a connection is ready (busy), opening, or has never been
// tried. When every one failed its last try, a call fails at once with
// that failure (as grpc-go fails a call in TRANSIENT_FAILURE).
func (cl *Client) canWait() bool {
	if cl.lastErr.Load() == nil {
		return true
	}
	for _, c := range cl.conns {
		if s := c.state.Load(); s != stateFailed {
			return true
		}
	}
	return false
}

// push adds k at the end of the queue. cl.mu is held.
func (cl *Client) push(k *Call) {
	k.prev, k.next = cl.qtail, nil
	if cl.qtail != nil {
		cl.qtail.next = k
	} else {
		cl.qhead = k
	}
	cl.qtail = k
	cl.qlen.Add(1)
}

// pushFront puts calls that must go again (their connection broke before
// they left, a GOAWAY said they were not processed) at the head of the
// queue, in order. cl.mu is held.
func (cl *Client) pushFront(ks []*Call) {
	for i := len(ks) - 1; i >= 0; i-- {
		k := ks[i]
		k.prev, k.next = nil, cl.qhead
		if cl.qhead != nil {
			cl.qhead.prev = k
		} else {
			cl.qtail = k
		}
		cl.qhead = k
		cl.qlen.Add(1)
	}
}

// requeue puts calls that must go again (their connection broke before
// they left, a GOAWAY said the server did not process them) at the head
// of the queue, in order, and writes what it can.
func (cl *Client) requeue(ks []*Call) {
	for _, k := range ks {
		k.c, k.id, k.off, k.recvd, k.headers, k.pnext, k.inPending = nil, 0, 0, 0, false, nil, false
		k.Written, k.Status, k.Message, k.Err = time.Time{}, -1, "", nil
	}
	cl.mu.Lock()
	cl.pushFront(ks)
	cl.mu.Unlock()
	cl.drain()
}

// unqueue removes k from the queue. cl.mu is held.
func (cl *Client) unqueue(k *Call) {
	if k.prev != nil {
		k.prev.next = k.next
	} else {
		cl.qhead = k.next
	}
	if k.next != nil {
		k.next.prev = k.prev
	} else {
		cl.qtail = k.prev
	}
	k.prev, k.next = nil, nil
	cl.qlen.Add(-1)
}

// drain writes the queued calls, oldest first, on the connections that
// take them, until one is not taken; then it flushes what it wrote.
func (cl *Client) drain() {
	if cl.qlen.Load() == 0 {
		return
	}
	wrote := false
	var late []*Call
	now := time.Now()
	cl.mu.Lock()
	n := uint32(len(cl.conns))
	for cl.qhead != nil {
		k := cl.qhead
		if !now.Before(k.deadline) {
			// It waited out its deadline: it does not leave now.
			cl.unqueue(k)
			k.Unsent = k.why
			late = append(late, k)
			continue
		}
		why := NoConnection
		start := cl.rr.Load()
		took := false
		for j := uint32(0); j < n; j++ {
			c := cl.conns[(start+j)%n]
			if c.state.Load() != stateReady {
				continue
			}
			// tryWrite must not see k in the queue's links.
			prev, next := k.prev, k.next
			k.prev, k.next = nil, nil
			w := c.tryWrite(k)
			if w == Sent {
				// k is in c's lists now: take it off the queue by hand.
				cl.qhead = next
				if next != nil {
					next.prev = nil
				} else {
					cl.qtail = nil
				}
				cl.qlen.Add(-1)
				took = true
				break
			}
			k.prev, k.next = prev, next
			why = max(why, w)
		}
		if !took {
			k.why = why
			break
		}
		wrote = true
	}
	cl.mu.Unlock()
	for _, k := range late {
		k.Done(k)
	}
	if wrote {
		cl.Flush()
	}
}

// Flush writes what the calls handed over since the last Flush appended
// to each connection: one write system call a connection, from the
// calling goroutine; a connection whose socket is full goes on writing
// from a goroutine of its own. The calls handed over until the next Flush
// go on the next connection (round robin by rows, not by calls: a row is
// one write).
func (cl *Client) Flush() {
	for _, c := range cl.conns {
		if c.dirty.Load() {
			c.flush()
		}
	}
	// The next row of calls goes on the next connection.
	cl.rr.Add(1)
}

// failFast ends the queued calls with err when no connection can take
// them (every connection failed its last try).
func (cl *Client) failFast(err error) {
	if cl.canWait() {
		return
	}
	var out []*Call
	cl.mu.Lock()
	for k := cl.qhead; k != nil; {
		next := k.next
		cl.unqueue(k)
		k.Unsent, k.Err = DialFailed, err
		out = append(out, k)
		k = next
	}
	cl.mu.Unlock()
	for _, k := range out {
		k.Done(k)
	}
}

// expireLoop ends, every tick, the calls past their deadline or whose
// context ended: in flight on a connection (RST_STREAM, ErrTimeout) or
// waiting in the queue (unsent, with why they waited).
func (cl *Client) expireLoop() {
	defer cl.wg.Done()
	tick := min(max(cl.o.Timeout/8, 10*time.Millisecond), 250*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	var out []*Call
	for {
		select {
		case <-cl.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for _, c := range cl.conns {
			out = c.expire(now, out)
		}
		cl.mu.Lock()
		for k := cl.qhead; k != nil; {
			next := k.next
			switch {
			case k.Ctx != nil && k.Ctx.Err() != nil:
				cl.unqueue(k)
				k.Unsent, k.Err = Cancelled, k.Ctx.Err()
				out = append(out, k)
			case !now.Before(k.deadline):
				cl.unqueue(k)
				k.Unsent = k.why
				out = append(out, k)
			}
			k = next
		}
		cl.mu.Unlock()
		for i, k := range out {
			k.Done(k)
			out[i] = nil
		}
		out = out[:0]
		cl.Flush()
		for _, c := range cl.conns {
			c.closeIfDrained()
		}
	}
}

// Close ends every call in flight or waiting and closes the connections.
func (cl *Client) Close() {
	if cl.closed.Swap(true) {
		return
	}
	cl.cancel()
	var out []*Call
	for _, c := range cl.conns {
		out = c.shut(errClosed, out)
	}
	cl.mu.Lock()
	for k := cl.qhead; k != nil; {
		next := k.next
		cl.unqueue(k)
		k.Unsent = Closed
		out = append(out, k)
		k = next
	}
	cl.mu.Unlock()
	for _, k := range out {
		k.Done(k)
	}
	cl.wg.Wait()
}

// setLastErr keeps err as the last failure to open a connection.
func (cl *Client) setLastErr(err error) {
	cl.lastErr.Store(&err)
}
