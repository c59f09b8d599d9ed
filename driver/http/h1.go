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
	"github.com/pipebench/pipebench/internal/conn/connopen"
	"github.com/pipebench/pipebench/internal/conn/netclass"
	"github.com/pipebench/pipebench/schedule"
)

// h1Pool holds a fixed set of HTTP/1.1 keep-alive connections, opened by
// start and kept open. Each carries one request at a time; a send takes the
// connection that has been idle longest, so the load spreads over all of
// them. A connection that fails is closed and opened again by the next send
// that takes it. Over plain TCP on Linux the connections run on event loops
// (loop_linux.go); elsewhere (TLS, other systems) a send writes its request
// and reads its answer itself (do).
type h1Pool struct {
	addr    string
	tls     *tls.Config
	timeout time.Duration
	head    []byte // request line, Host and the fixed headers
	stamp   bool   // ask for kernel receive timestamps
	conns   []*h1Conn
	idle    chan *h1Conn     // without event loops: the idle connections
	opener  *connopen.Opener // opens in the background what start could not

	// With event loops: under mu, the idle connections (a ring of freeN
	// from freeHead, idle longest first) and the sends waiting for one
	// (from waitHead).
	evented   bool
	loops     []*evloop
	ready     atomic.Pointer[[]*evloop] // loops, once they run
	loopsOnce sync.Once
	loopsErr  error
	mu        sync.Mutex
	free      []*h1Conn
	freeHead  int
	freeN     int
	waiting   []h1Job
	waitHead  int
	closed    sync.Once

	// piped: pipelined (with event loops only: pipeloop_linux.go), each
	// connection carrying up to depth requests at once; otherwise one.
	// Pipelined, under mu: the connection the sends of the current
	// row join (nil: the next send takes the next connection with room),
	// where that search starts, and the window slots free on the
	// connections in use. Under dmu (taken last): the connections holding
	// requests not written yet (ndirty of them), written by the next
	// flush; fmu is held by the one flush at a time.
	piped    bool
	depth    int
	cur      *h1Conn
	rr       int
	room     int
	dmu      sync.Mutex
	dirty    []*h1Conn
	flushing []*h1Conn
	ndirty   atomic.Int32
	heldAt   atomic.Int64 // when the oldest request held for the next flush joined (nanoseconds since epoch)
	fmu      sync.Mutex
	shut     bool // closed: no waiting send is taken up (under mu)
}

// h1Conn is one connection of the pool; it is owned by whoever took it from
// the idle channel (or the free ring).
type h1Conn struct {
	netc net.Conn // nil when closed (without event loops)
	br   *bufio.Reader
	rp   respParser
	buf  []byte    // the request being written
	used time.Time // when it last carried a request (or was opened)
	dl   time.Time // the deadline set on netc (zero: none)
	// open is set while netc is open, for openNow, which reads it from
	// another goroutine.
	open atomic.Pointer[openConn]

	// With event loops: the socket (-1 when closed), its loop, and, under
	// cmu (the sender that writes a request and the loop that reads its
	// answer both hold it), the request in flight.
	lp       *evloop
	index    int32
	cmu      sync.Mutex
	fd       int
	stamped  bool
	fresh    bool // opened for the request it carries: not sent again if it fails
	busy     bool
	job      h1Job
	started  time.Time // the send's start (its wait for a connection runs from here)
	written  time.Time
	deadline time.Time
	out      []byte // the request's bytes the socket has not taken yet
	outBody  []byte // the same, of a body written beside the head

	// Pipelined: under the pool's mu, the requests assigned to it and
	// not ended (load), and whether it is in use (admitted: opened by
	// start once); under cmu, its requests oldest first from head (those
	// from unsent on are held: not written yet), their bytes in buf from
	// sent (up to wlim released for writing by the last flush), whether
	// it is in the pool's dirty list, and whether a dial is opening it.
	load     int
	admitted bool
	calls    []h1Call
	head     int
	unsent   int
	sent     int
	wlim     int
	dirty    bool
	dialing  bool
}

// h1Call is a pipelined request on a connection: its send, when it was
// taken up after waiting for a window slot (zero: it did not wait), when
// it was written, and when it times out.
type h1Call struct {
	job                       h1Job
	started, written, expires time.Time
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

// flushEvery is how often at least a pacer that fell behind writes the
// pipelined requests it holds: the pacer's shortest interval between
// wake-ups, so that its writes are as large as when it keeps up.
const flushEvery = schedule.MinWake

// newH1Pool returns a pool of conns connections, each carrying one
// request at a time, or pipelined up to depth (depth 0: not pipelined;
// with event loops only, canPipeline says where).
func newH1Pool(addr string, head []byte, tlsCfg *tls.Config, timeout time.Duration, conns, depth int) *h1Pool {
	p := &h1Pool{addr: addr, tls: tlsCfg, timeout: timeout, head: head, evented: canLoop && tlsCfg == nil, piped: depth > 0, depth: max(depth, 1)}
	switch {
	case p.piped:
		p.room = conns * p.depth
	case p.evented:
		p.free, p.freeN = make([]*h1Conn, conns), conns
	default:
		p.idle = make(chan *h1Conn, conns)
	}
	for i := 0; i < conns; i++ {
		c := &h1Conn{fd: -1, index: int32(i), admitted: true}
		p.conns = append(p.conns, c)
		switch {
		case p.piped:
		case p.evented:
			p.free[i] = c
		default:
			p.idle <- c
		}
	}
	return p
}

// canPipeline reports whether a pool of event loops carries pipelined
// requests to a target reached with tlsCfg (nil: plain TCP); elsewhere the
// pipelined client (pipeline.go) does.
func canPipeline(tlsCfg *tls.Config) bool { return canLoop && tlsCfg == nil }

// start takes every connection out of use and opens them as connopen
// does: what the target takes now, the rest in the background, each put
// to use as it opens (a send never waits on a connection that is still
// opening). The first to open is checked for a server that speaks first.
// No send may run during start.
func (p *h1Pool) start(ctx context.Context) error {
	if p.evented {
		p.mu.Lock()
		clear(p.free)
		p.freeHead, p.freeN = 0, 0
		for _, c := range p.conns {
			c.admitted = false
		}
		p.room, p.cur = 0, nil
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
		netc, err := p.dialNet(ctx, time.Now().Add(p.timeout))
		if err != nil {
			return err
		}
		if p.tls == nil && checked.CompareAndSwap(false, true) && speaksFirst(netc) {
			netc.Close()
			return errSpeaksFirst
		}
		if p.evented {
			if err := p.attach(c, netc, false); err != nil {
				return err
			}
			p.admit(c)
			return nil
		}
		p.use(c, netc)
		p.idle <- c
		return nil
	}})
	return err
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

// dialNet opens a connection to the pool's target.
func (p *h1Pool) dialNet(ctx context.Context, deadline time.Time) (net.Conn, error) {
	return netclass.Dial(ctx, p.addr, p.tls, time.Until(deadline))
}

// use makes netc, just opened, c's connection (without event loops).
func (p *h1Pool) use(c *h1Conn, netc net.Conn) {
	c.netc, c.used, c.dl = netc, time.Now(), time.Time{}
	if c.br == nil {
		c.br = bufio.NewReaderSize(netc, 8<<10)
	} else {
		c.br.Reset(netc)
	}
	c.open.Store(&openConn{raw: rawConn(netc)})
}

func (p *h1Pool) drop(c *h1Conn) {
	if c.netc != nil {
		c.open.Store(nil)
		c.netc.Close()
		c.netc, c.dl = nil, time.Time{}
	}
}

// openNow counts the connections open now: opened and not closed by
// either side. A connection the server closed while it sat idle counts
// once the kernel knows (where it can be asked), not when the next send
// finds out. Safe to call while sends run.
func (p *h1Pool) openNow() int {
	n := 0
	for _, c := range p.conns {
		if p.evented {
			if c.openLoop() {
				n++
			}
		} else if oc := c.open.Load(); oc != nil && (oc.raw == nil || !peerClosed(oc.raw)) {
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
// when not known).
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
			netc, err := p.dialNet(ctx, deadline)
			if err != nil {
				return 0, at, err
			}
			p.use(c, netc)
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
		c.buf = appendRequest(c.buf[:0], p.head, contentType, hdrs, len(body))
		if len(body) <= inlineBody {
			c.buf = append(c.buf, body...)
			_, werr = c.netc.Write(c.buf)
		} else {
			bufs := net.Buffers{c.buf, body}
			_, werr = bufs.WriteTo(c.netc)
		}
		if werr == nil {
			_, rerr = c.br.Peek(1)
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
		status, closeAfter, err = readResponse(c.br, &c.rp)
		if err != nil {
			p.drop(c)
			return 0, at, err
		}
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

// close stops opening connections and closes every one; with event loops,
// a request still in flight fails and the loops end. No send may run.
func (p *h1Pool) close() {
	p.opener.Close()
	if p.evented {
		p.closeLoopConns()
		return
	}
	for _, c := range p.conns {
		p.drop(c)
	}
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
