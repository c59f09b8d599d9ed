package httpdriver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/connopen"
	"github.com/pipebench/pipebench/internal/netclass"
)

// h1Pool holds a fixed set of HTTP/1.1 keep-alive connections, opened by
// start and kept open. Each carries one request at a time; a send takes the
// connection that has been idle longest (the idle channel is a FIFO), so
// the load spreads over all of them. A connection that fails is closed and
// opened again by the next send that takes it.
type h1Pool struct {
	addr    string
	tls     *tls.Config
	timeout time.Duration
	head    []byte // request line, Host and the fixed headers
	stamp   bool   // ask for kernel receive timestamps (see h1Source)
	conns   []*h1Conn
	idle    chan *h1Conn     // without carriers: the idle connections
	opener  *connopen.Opener // opens in the background what start could not

	// With carriers (carry.go): under mu, the idle connections (a ring
	// of freeN from freeHead, idle longest first) and the sends waiting
	// for one (from waitHead).
	carriers bool
	mu       sync.Mutex
	free     []*h1Conn
	freeHead int
	freeN    int
	waiting  []h1Job
	waitHead int
	closed   sync.Once
}

// h1Conn is one connection of the pool; it is owned by whoever took it from
// the idle channel.
type h1Conn struct {
	netc net.Conn // nil when closed
	src  h1Source // what br reads from
	br   *bufio.Reader
	buf  []byte
	used time.Time // when it last carried a request (or was opened)
	dl   time.Time // the deadline set on netc (zero: none)
	// open is set while netc is open, for openNow, which reads it from
	// another goroutine.
	open atomic.Pointer[openConn]
	// With carriers: the hand-off to this connection's carrier, and
	// whether it runs (under the pool's mu).
	work     chan h1Job
	carrying bool
}

// h1Source is what a connection's bufio.Reader reads from. On a plain TCP
// connection on Linux (raw set), a request left in req is written by the
// next Read, which then waits for the answer in the same call (x):
// one system call fewer per request than a write followed by a read.
//
// A socket that stamps what it receives (x.stamped) tells when the answer
// reached this machine: answered is that time when the whole answer came
// in the exchange's one read, zero otherwise. The time it then waited in
// the socket for this process to read it is the generator's, not the
// system's.
type h1Source struct {
	netc     net.Conn
	raw      syscall.RawConn
	req      []byte // to write before the next read
	werr     error  // the failure of that write
	x        exchanger
	answered time.Time
}

func (s *h1Source) Read(p []byte) (int, error) {
	s.answered = time.Time{} // an answer read in several reads: not stamped
	if s.req == nil || s.raw == nil {
		return s.netc.Read(p)
	}
	req := s.req
	s.req = nil
	written, n, rx, werr, rerr := s.x.exchange(s.raw, req, p)
	if rx != 0 {
		s.answered = arrived(rx, time.Now())
	}
	if werr == nil && written < len(req) && rerr != nil {
		werr = rerr // it failed before the request was out: a timeout, a closed connection
	}
	if werr != nil {
		s.werr = werr
		return 0, werr
	}
	if written < len(req) { // the send buffer was full: the rest the usual way
		if _, err := s.netc.Write(req[written:]); err != nil {
			s.werr = err
			return 0, err
		}
		return s.netc.Read(p)
	}
	return n, rerr
}

// openConn is what openNow needs of an open connection: its socket, to
// ask the kernel whether the peer closed it (nil when not available).
type openConn struct{ raw syscall.RawConn }

// idleCheck is how long a connection may sit idle before a send checks
// that the server has not closed it (a variable for tests).
var idleCheck = time.Second

// errNoConn is a send that found every connection busy for the whole timeout.
var errNoConn = errors.New("no free connection: every connection was busy for longer than the timeout")

// inlineBody is the largest body copied into the request buffer; larger
// ones are written beside it (writev), so that a pool of thousands of
// connections does not keep thousands of copies of large bodies.
const inlineBody = 16 << 10

func newH1Pool(addr string, head []byte, tlsCfg *tls.Config, timeout time.Duration, conns int) *h1Pool {
	p := &h1Pool{addr: addr, tls: tlsCfg, timeout: timeout, head: head, carriers: canExchange && tlsCfg == nil}
	if p.carriers {
		p.free, p.freeN = make([]*h1Conn, conns), conns
	} else {
		p.idle = make(chan *h1Conn, conns)
	}
	for i := 0; i < conns; i++ {
		c := &h1Conn{}
		p.conns = append(p.conns, c)
		if p.carriers {
			c.work = make(chan h1Job, 1)
			p.free[i] = c
		} else {
			p.idle <- c
		}
	}
	return p
}

// start takes every connection out of use and opens them as connopen
// does: what the target takes now, the rest in the background, each put
// to use as it opens (a send never waits on a connection that is still
// opening). The first to open is checked for a server that speaks first.
// No send may run during start.
func (p *h1Pool) start(ctx context.Context) error {
	if p.carriers {
		p.mu.Lock()
		clear(p.free)
		p.freeHead, p.freeN = 0, 0
		p.mu.Unlock()
	} else {
		for len(p.idle) > 0 {
			<-p.idle
		}
	}
	var checked atomic.Bool
	var err error
	p.opener, err = connopen.Start(ctx, connopen.Params{N: len(p.conns), Timeout: p.timeout, Open: func(ctx context.Context, i int) error {
		c := p.conns[i]
		if err := p.dial(ctx, c, time.Now().Add(p.timeout)); err != nil {
			return err
		}
		if p.tls == nil && checked.CompareAndSwap(false, true) && speaksFirst(c.netc) {
			p.drop(c)
			return errSpeaksFirst
		}
		p.admit(c)
		return nil
	}})
	return err
}

// admit puts a connection that start opened to use: to the send waiting
// longest, if any, else among the idle ones.
func (p *h1Pool) admit(c *h1Conn) {
	if !p.carriers {
		p.idle <- c
		return
	}
	p.mu.Lock()
	if j, ok := p.nextWaiting(); ok {
		p.handOff(c, j) // unlocks
		return
	}
	p.pushFree(c)
	p.mu.Unlock()
}

// speakFirstWait is how long Start listens for a server that speaks before
// it is asked.
const speakFirstWait = 200 * time.Millisecond

// errSpeaksFirst is a server that sent bytes before any request.
var errSpeaksFirst = fmt.Errorf("%w: the server spoke before any request, as an HTTP/2 or gRPC server does; this driver speaks HTTP/1.1 (set http2: true for an HTTP/2 server)", netclass.ErrProtocolMismatch)

// speaksFirst reports whether a new plain connection receives bytes before
// any request: an HTTP/1.1 server never sends any, an HTTP/2 (gRPC) server
// sends its SETTINGS. What it reads is lost: call it only on a connection
// that is dropped when it says true, before anything else reads it.
func speaksFirst(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(speakFirstWait))
	defer c.SetReadDeadline(time.Time{})
	var b [9]byte
	n, _ := c.Read(b[:])
	return n > 0
}

func (p *h1Pool) dial(ctx context.Context, c *h1Conn, deadline time.Time) error {
	netc, err := netclass.Dial(ctx, p.addr, p.tls, time.Until(deadline))
	if err != nil {
		return err
	}
	c.netc, c.used, c.dl = netc, time.Now(), time.Time{}
	c.src = h1Source{netc: netc}
	if canExchange && p.tls == nil {
		c.src.raw = rawConn(netc)
		c.src.x.stamped = p.stamp && c.src.raw != nil && stampReceived(c.src.raw)
	}
	if c.br == nil {
		c.br = bufio.NewReaderSize(&c.src, 8<<10)
	} else {
		c.br.Reset(&c.src)
	}
	c.open.Store(&openConn{raw: rawConn(netc)})
	return nil
}

func (p *h1Pool) drop(c *h1Conn) {
	if c.netc != nil {
		c.open.Store(nil)
		c.netc.Close()
		c.netc, c.dl = nil, time.Time{}
		c.src = h1Source{}
	}
}

// openNow counts the connections open now: opened and not closed by
// either side. A connection the server closed while it sat idle counts
// once the kernel knows (where it can be asked), not when the next send
// finds out. Safe to call while sends run.
func (p *h1Pool) openNow() int {
	n := 0
	for _, c := range p.conns {
		if oc := c.open.Load(); oc != nil && (oc.raw == nil || !peerClosed(oc.raw)) {
			n++
		}
	}
	return n
}

// rawConn returns the socket under c (under its TLS layer too), or nil.
func rawConn(c net.Conn) syscall.RawConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			return raw
		}
	}
	return nil
}

// do sends one request and returns the answer's status and when the
// request began to be written, after the wait for a free connection (and
// the opening of a closed one); zero if it never was.
func (p *h1Pool) do(ctx context.Context, contentType string, hdrs []pipebench.Header, body []byte) (status int, at sendTimes, err error) {
	var c *h1Conn
	select {
	case c = <-p.idle:
	default:
		t := time.NewTimer(p.timeout)
		select {
		case c = <-p.idle:
			t.Stop()
		case <-t.C:
			return 0, at, errNoConn
		case <-ctx.Done():
			t.Stop()
			return 0, at, ctx.Err()
		}
	}
	defer func() { p.idle <- c }()
	return p.roundTrip(ctx, c, time.Now(), contentType, hdrs, body)
}

// sendTimes are when a request began to be written (zero if it never was)
// and when its answer reached this machine, by the kernel's clock (zero
// when not known: see h1Source).
type sendTimes struct{ written, answered time.Time }

// roundTrip sends one request on c, which the caller owns, and reads its
// answer; now is the time it starts (read by the caller).
func (p *h1Pool) roundTrip(ctx context.Context, c *h1Conn, now time.Time, contentType string, hdrs []pipebench.Header, body []byte) (status int, at sendTimes, err error) {
	// at.written is now unless a system call comes first (the clock is
	// read again then).
	moved := false
	deadline, slack := now.Add(p.timeout), p.timeout/8
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline, slack = dl, 0
	}
	// A connection idle for a while may have been closed by the server:
	// ask the kernel (one system call) before writing on it.
	if c.netc != nil && now.Sub(c.used) > idleCheck {
		moved = true
		if oc := c.open.Load(); oc != nil && oc.raw != nil && peerClosed(oc.raw) {
			p.drop(c)
		}
	}
	for attempt := 0; ; attempt++ {
		fresh := c.netc == nil
		if fresh {
			if err := p.dial(ctx, c, deadline); err != nil {
				return 0, at, err
			}
		}
		// A connection opened before this send may have been closed by
		// the server meanwhile; that shows as a failed write or an EOF
		// before any byte of the answer, and the request is sent again
		// once on a new connection.
		stale := !fresh && attempt == 0
		// Setting a deadline costs a timer update: the one set stays
		// while it falls within [deadline, deadline + timeout/8], so a
		// request times out after its timeout and at most an eighth
		// more (exactly at the context's deadline when that is sooner).
		if c.dl.Before(deadline) || c.dl.After(deadline.Add(slack)) {
			c.dl = deadline.Add(slack)
			c.netc.SetDeadline(c.dl)
			moved = true
		}
		at.written = now
		if moved || fresh || attempt > 0 {
			at.written = time.Now()
		}
		var werr, rerr error
		c.src.answered = time.Time{}
		switch {
		case c.src.raw != nil && len(body) <= inlineBody && c.br.Buffered() == 0:
			// Written by the read that waits for the answer.
			c.buf = append(appendRequest(c.buf[:0], p.head, contentType, hdrs, len(body)), body...)
			c.src.req, c.src.werr = c.buf, nil
			_, rerr = c.br.Peek(1)
			c.src.req, werr = nil, c.src.werr
		case len(body) <= inlineBody:
			c.buf = append(appendRequest(c.buf[:0], p.head, contentType, hdrs, len(body)), body...)
			if _, werr = c.netc.Write(c.buf); werr == nil {
				_, rerr = c.br.Peek(1)
			}
		default:
			c.buf = appendRequest(c.buf[:0], p.head, contentType, hdrs, len(body))
			bufs := net.Buffers{c.buf, body}
			if _, werr = bufs.WriteTo(c.netc); werr == nil {
				_, rerr = c.br.Peek(1)
			}
		}
		if werr != nil {
			p.drop(c)
			if stale && !isTimeout(werr) {
				continue
			}
			return 0, at, werr
		}
		if rerr != nil {
			p.drop(c)
			if stale && (errors.Is(rerr, io.EOF) || errors.Is(rerr, syscall.ECONNRESET)) {
				continue
			}
			return 0, at, rerr
		}
		var closeAfter bool
		status, closeAfter, err = readResponse(c.br)
		if err != nil {
			p.drop(c)
			return 0, at, err
		}
		at.answered = c.src.answered
		c.used = now
		if closeAfter {
			p.drop(c)
		}
		if cap(c.buf) > 1<<20 {
			c.buf = nil
		}
		return status, at, nil
	}
}

// close stops opening connections, closes every one and ends the
// carriers. No send may run.
func (p *h1Pool) close() {
	p.opener.Close()
	for _, c := range p.conns {
		p.drop(c)
	}
	p.closed.Do(func() {
		for _, c := range p.conns {
			if c.work != nil {
				close(c.work)
			}
		}
	})
}

// appendRequest appends an HTTP/1.1 request head (without the body) to b.
func appendRequest(b, head []byte, contentType string, hdrs []pipebench.Header, bodyLen int) []byte {
	b = append(b, head...)
	if contentType != "" {
		b = append(b, "Content-Type: "...)
		b = append(b, contentType...)
		b = append(b, '\r', '\n')
	}
	for _, h := range hdrs {
		b = append(b, h.Name...)
		b = append(b, ':', ' ')
		b = append(b, h.Value...)
		b = append(b, '\r', '\n')
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(bodyLen), 10)
	return append(b, '\r', '\n', '\r', '\n')
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
