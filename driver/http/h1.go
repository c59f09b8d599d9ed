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
	conns   []*h1Conn
	idle    chan *h1Conn
}

// h1Conn is one connection of the pool; it is owned by whoever took it from
// the idle channel.
type h1Conn struct {
	netc net.Conn // nil when closed
	br   *bufio.Reader
	buf  []byte
	used time.Time // when it last carried a request (or was opened)
	// open is set while netc is open, for openNow, which reads it from
	// another goroutine.
	open atomic.Pointer[openConn]
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
	p := &h1Pool{addr: addr, tls: tlsCfg, timeout: timeout, head: head, idle: make(chan *h1Conn, conns)}
	for i := 0; i < conns; i++ {
		c := &h1Conn{}
		p.conns = append(p.conns, c)
		p.idle <- c
	}
	return p
}

// start opens every connection (see openAll) and checks on the first one
// that the server does not speak first.
func (p *h1Pool) start(ctx context.Context) error {
	err := openAll(ctx, len(p.conns), p.timeout, func(ctx context.Context, i int) error {
		err := p.dial(ctx, p.conns[i], time.Now().Add(p.timeout))
		if err == nil && i == 0 && p.tls == nil && speaksFirst(p.conns[i].netc) {
			p.drop(p.conns[i])
			return errSpeaksFirst
		}
		return err
	})
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

func (p *h1Pool) dial(ctx context.Context, c *h1Conn, deadline time.Time) error {
	netc, err := netclass.Dial(ctx, p.addr, p.tls, time.Until(deadline))
	if err != nil {
		return err
	}
	c.netc, c.used = netc, time.Now()
	if c.br == nil {
		c.br = bufio.NewReaderSize(netc, 8<<10)
	} else {
		c.br.Reset(netc)
	}
	c.open.Store(&openConn{raw: rawConn(netc)})
	return nil
}

func (p *h1Pool) drop(c *h1Conn) {
	if c.netc != nil {
		c.open.Store(nil)
		c.netc.Close()
		c.netc = nil
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
func (p *h1Pool) do(ctx context.Context, contentType string, hdrs []pipebench.Header, body []byte) (status int, written time.Time, err error) {
	var c *h1Conn
	select {
	case c = <-p.idle:
	default:
		t := time.NewTimer(p.timeout)
		select {
		case c = <-p.idle:
			t.Stop()
		case <-t.C:
			return 0, written, errNoConn
		case <-ctx.Done():
			t.Stop()
			return 0, written, ctx.Err()
		}
	}
	defer func() { p.idle <- c }()
	now := time.Now()
	deadline := now.Add(p.timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	// A connection idle for a while may have been closed by the server:
	// ask the kernel (one system call) before writing on it.
	if c.netc != nil && now.Sub(c.used) > idleCheck {
		if oc := c.open.Load(); oc != nil && oc.raw != nil && peerClosed(oc.raw) {
			p.drop(c)
		}
	}
	for attempt := 0; ; attempt++ {
		fresh := c.netc == nil
		if fresh {
			if err := p.dial(ctx, c, deadline); err != nil {
				return 0, written, err
			}
		}
		// A connection opened before this send may have been closed by
		// the server meanwhile; that shows as a failed write or an EOF
		// before any byte of the answer, and the request is sent again
		// once on a new connection.
		stale := !fresh && attempt == 0
		c.netc.SetDeadline(deadline)
		written = time.Now()
		if len(body) <= inlineBody {
			c.buf = append(appendRequest(c.buf[:0], p.head, contentType, hdrs, len(body)), body...)
			_, err = c.netc.Write(c.buf)
		} else {
			c.buf = appendRequest(c.buf[:0], p.head, contentType, hdrs, len(body))
			bufs := net.Buffers{c.buf, body}
			_, err = bufs.WriteTo(c.netc)
		}
		if err != nil {
			p.drop(c)
			if stale && !isTimeout(err) {
				continue
			}
			return 0, written, err
		}
		if _, err := c.br.Peek(1); err != nil {
			p.drop(c)
			if stale && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
				continue
			}
			return 0, written, err
		}
		var closeAfter bool
		status, closeAfter, err = readResponse(c.br)
		if err != nil {
			p.drop(c)
			return 0, written, err
		}
		c.used = now
		if closeAfter {
			p.drop(c)
		}
		if cap(c.buf) > 1<<20 {
			c.buf = nil
		}
		return status, written, nil
	}
}

// close closes every connection. No send may run.
func (p *h1Pool) close() {
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

// openWorkers bounds how many connections are being opened at once.
const openWorkers = 64

// openAll runs open(i) for every connection, openWorkers at a time, within
// a bound of twice the per-connection timeout (at least 2 s). It returns
// the first failure that shows the target cannot be reached (refused,
// unreachable, TLS, protocol, too many open files) as a clear error. A
// connection that timed out is left closed: the send that takes it opens
// it again, and its failure is measured there.
func openAll(ctx context.Context, n int, timeout time.Duration, open func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithTimeout(ctx, max(2*timeout, 2*time.Second))
	defer cancel()
	next := make(chan int)
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for w := 0; w < min(openWorkers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				err := open(ctx, i)
				if err == nil || !netclass.Classify(err).Unreached {
					continue
				}
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
loop:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(next)
	wg.Wait()
	return first
}
