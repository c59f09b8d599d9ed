package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/pipebench/pipebench/internal/conn/netclass"
	"github.com/pipebench/pipebench/internal/conn/rxstamp"
)

// A connection's states.
const (
	stateIdle       int32 = iota // never tried
	stateConnecting              // being opened
	stateReady                   // takes calls
	stateDraining                // takes no more calls (GOAWAY, stream ids spent); opened again once its calls are done
	stateFailed                  // its last try failed, or it broke
)

// readBufSize is a connection's read buffer: frames are at most
// defaultFrameSize long (the client never raises SETTINGS_MAX_FRAME_SIZE).
const readBufSize = 32 << 10

// smallCall is the size of the calls that wait for the server's windows
// to take them whole; a larger call opens its stream and sends its data
// as the windows open (a server may never open a window wide enough for
// all of it at once).
const smallCall = 4096

// conn is one HTTP/2 connection of a client, opened again when it breaks.
type conn struct {
	cl    *Client
	i     int
	state atomic.Int32
	dirty atomic.Bool // out holds frames to write

	mu   sync.Mutex
	link *link // the open connection, nil when none
	out  []byte
	// spare is the buffer out swaps with when it is written (nil while
	// it is being written).
	spare    []byte
	outCalls []*Call // calls whose frames are in out: not handed to the kernel yet

	streams      map[uint32]*Call
	head, tail   *Call // calls in flight, oldest first
	phead, ptail *Call // streams with data to send when the windows open
	nopen        int   // streams open
	nextID       uint32

	sendWin     int64 // the connection's send window
	peerInitWin int64 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	maxStreams  uint32
	maxFrame    int
	peerTable   uint32 // the server's SETTINGS_HEADER_TABLE_SIZE
	mode        blockMode
	steady      []byte   // the steady block of this connection
	varyIdx     []uint64 // the changing fields' indices in the server's table
	tableUsed   int      // what the first request put in the server's table
	sizeUpdate  bool     // the next header block starts with a table size update to 0
	recvUnacked int      // bytes received since the connection's last WINDOW_UPDATE

	// The header block being decoded.
	dec     *hpack.Decoder
	hcall   *Call
	hstream uint32
	hend    bool // the block ends its stream
	hcont   bool // CONTINUATION frames follow
	hstatus int
	hgrpc   int
	hmsg    string
	hctype  string
	hgot    bool // the block had grpc-status

	goaway bool
	freed  bool // a stream or window opened since the last drain
	// urgent: a frame in out must leave now (a SETTINGS acknowledgement,
	// a stream's window update). Others the reader appends (PING and
	// connection window acknowledgements, resets) leave with the next
	// Flush: the pacer's next row, or the expiry tick's, not a write
	// of their own.
	urgent bool
	again  []*Call // calls the server did not process (GOAWAY): they go again
}

// link is one open connection of a conn: its socket, its writer's lock
// and its reader.
type link struct {
	nc  net.Conn
	raw syscall.RawConn // nil for TLS: written and read through nc
	// wmu is held by whoever writes to the socket. It is released only
	// while c.mu is held and out is empty (or the link is gone), so a
	// frame appended meanwhile is never left unwritten.
	wmu  sync.Mutex
	wake chan struct{} // TLS: hands wmu to the link's writer goroutine
	gone chan struct{} // closed when the link broke

	stamped bool // the socket gives receive times
	// The reader's state, for rawRead, and the writer's, for rawWrite
	// (bound once: a read or write allocates nothing).
	c     *conn
	rbuf  []byte
	rhave int
	rdone []*Call
	rerr  error
	read  func(fd uintptr) bool
	wbuf  []byte
	wn    int
	werr  error
	write func(fd uintptr) bool
}

// close ends l: its writer goroutine, and its socket, closed from a
// goroutine of its own (a close waits for the reads and writes of the
// socket under way, and may be called from within one).
func (l *link) close() {
	close(l.gone)
	go l.nc.Close()
}

// writeNow writes p to l's socket without waiting: what it took (maybe
// nothing, when it is full).
func (l *link) writeNow(p []byte) (int, error) {
	l.wbuf = p
	err := l.raw.Write(l.write)
	l.wbuf = nil
	if err != nil {
		return 0, err
	}
	return l.wn, l.werr
}

func (l *link) rawWrite(fd uintptr) bool {
	l.wn, l.werr = writeRaw(fd, l.wbuf)
	return true
}

// open dials the connection and does the handshake (see Client.Open).
func (c *conn) open(ctx context.Context) error {
	cl := c.cl
	c.state.Store(stateConnecting)
	err := c.dial(ctx)
	if err != nil {
		c.state.Store(stateFailed)
		cl.setLastErr(err)
		cl.failFast(err)
		return err
	}
	cl.drain()
	return nil
}

// dial opens a link and makes it c's.
func (c *conn) dial(ctx context.Context) error {
	cl := c.cl
	if cl.closed.Load() {
		return errClosed
	}
	nc, err := netclass.Dial(ctx, cl.o.Addr, cl.o.TLS, cl.o.Timeout)
	if err != nil {
		return err
	}
	l := &link{c: c, nc: nc, gone: make(chan struct{})}
	if cl.o.TLS == nil {
		l.raw = rawConn(nc)
	}
	if l.raw != nil {
		l.stamped = rxstamp.Enable(l.raw)
		l.read, l.write = l.rawRead, l.rawWrite
	}
	hello := append([]byte(preface), appendSettings(nil,
		settingEnablePush, 0,
		settingInitialWindowSize, recvStreamWindow,
		settingMaxHeaderListSize, recvHeaderListMax)...)
	hello = appendWindowUpdate(hello, 0, recvConnWindow-defaultWindow)
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > cl.o.Timeout {
		dl = time.Now().Add(cl.o.Timeout)
	}
	nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := nc.Write(hello); err != nil {
		nc.Close()
		return err
	}
	// The server's first frame must be its SETTINGS.
	buf := make([]byte, readBufSize)
	have := 0
	for have < frameHeaderLen || have < frameHeaderLen+parseFrameHeader(buf).length {
		if have >= frameHeaderLen {
			if err := checkFirstFrame(buf[:have], cl.o.Addr); err != nil {
				nc.Close()
				return err
			}
		}
		n, err := nc.Read(buf[have:])
		have += n
		if err != nil {
			nc.Close()
			switch {
			case have > 0 && (bytes.HasPrefix(buf[:have], []byte("HTTP/")) || netclass.LooksLikeTLS(buf[:have])):
				return checkFirstFrame(buf[:have], cl.o.Addr)
			case errors.Is(err, io.EOF):
				return fmt.Errorf("%w: %s closed the connection before its HTTP/2 settings: it does not speak gRPC (HTTP/2)", netclass.ErrProtocolMismatch, cl.o.Addr)
			case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil:
				return fmt.Errorf("%s took the connection but sent no HTTP/2 settings within %v: %w", cl.o.Addr, cl.o.Timeout, os.ErrDeadlineExceeded)
			case ctx.Err() != nil:
				return ctx.Err()
			}
			return err
		}
	}
	if err := checkFirstFrame(buf[:have], cl.o.Addr); err != nil {
		nc.Close()
		return err
	}
	if !stop() && ctx.Err() != nil {
		nc.Close()
		return ctx.Err()
	}
	nc.SetDeadline(time.Time{})
	if cl.o.TLS != nil {
		l.wake = make(chan struct{}, 1)
	}
	c.mu.Lock()
	if cl.closed.Load() {
		c.mu.Unlock()
		nc.Close()
		return errClosed
	}
	c.reset(l)
	// The SETTINGS frame, processed before the connection takes a call;
	// what follows it is the reader's.
	fh := parseFrameHeader(buf)
	end := frameHeaderLen + fh.length
	var none []*Call
	if err := c.frame(fh, buf[frameHeaderLen:end], time.Time{}, &none); err != nil {
		c.link = nil
		c.mu.Unlock()
		nc.Close()
		return err
	}
	have = copy(buf, buf[end:have])
	c.state.Store(stateReady)
	c.mu.Unlock()
	cl.wg.Add(1)
	go c.readLoop(l, buf, have)
	if l.wake != nil {
		cl.wg.Add(1)
		go c.writer(l)
	}
	c.flush()
	return nil
}

// checkFirstFrame tells a server that does not speak HTTP/2 by the first
// bytes it sent: an HTTP/1.x answer, a TLS record, or a first frame other
// than SETTINGS.
func checkFirstFrame(b []byte, addr string) error {
	switch {
	case bytes.HasPrefix(b, []byte("HTTP/")):
		return fmt.Errorf("%w: %s answered in HTTP/1.x, not HTTP/2: it does not speak gRPC", netclass.ErrProtocolMismatch, addr)
	case netclass.LooksLikeTLS(b):
		return fmt.Errorf("%w: %s answered with TLS: set tls.enabled (or an https:// endpoint)", netclass.ErrProtocolMismatch, addr)
	case len(b) < frameHeaderLen:
		return nil
	}
	fh := parseFrameHeader(b)
	if fh.typ != frameSettings || fh.stream != 0 || fh.flags&flagAck != 0 || fh.length%6 != 0 || fh.length > defaultFrameSize {
		return fmt.Errorf("%w: the first bytes from %s are not an HTTP/2 SETTINGS frame: it does not speak gRPC (HTTP/2)", netclass.ErrProtocolMismatch, addr)
	}
	return nil
}

// reset makes l c's link with a new connection's state. c.mu is held.
func (c *conn) reset(l *link) {
	c.link = l
	c.out, c.spare, c.outCalls = c.out[:0], nil, c.outCalls[:0]
	c.streams = make(map[uint32]*Call)
	c.head, c.tail, c.phead, c.ptail, c.nopen = nil, nil, nil, nil, 0
	c.nextID = 1
	c.sendWin, c.peerInitWin = defaultWindow, defaultWindow
	c.maxStreams, c.maxFrame, c.peerTable = math.MaxUint32, defaultFrameSize, defaultTableSize
	c.mode, c.steady, c.varyIdx, c.tableUsed, c.sizeUpdate = blockFirst, nil, nil, 0, false
	c.recvUnacked = 0
	c.dec = hpack.NewDecoder(defaultTableSize, c.emit)
	c.dec.SetMaxStringLength(recvHeaderListMax)
	c.hcall, c.hcont = nil, false
	c.goaway, c.freed = false, false
	c.dirty.Store(false)
}

// tryWrite appends k's frames to c's buffer when c takes it now, and
// says Sent; otherwise it says why c did not take it, and k is unchanged.
func (c *conn) tryWrite(k *Call) Why {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.link == nil || c.goaway || c.state.Load() != stateReady:
		return NoConnection
	case uint32(c.nopen) >= c.maxStreams:
		return NoStream
	case c.nextID > maxStreamID-streamIDReserve:
		// Spent: no more calls here; opened again once its calls end.
		c.state.Store(stateDraining)
		return NoConnection
	}
	need := int64(len(k.Data))
	if need <= smallCall && (need > c.sendWin || need > c.peerInitWin) {
		return NoWindow
	}
	c.start(k)
	return Sent
}

// start opens k's stream on c and appends its HEADERS and what the
// windows let of its DATA. c.mu is held.
func (c *conn) start(k *Call) {
	id := c.nextID
	c.nextID += 2
	k.c, k.id, k.win, k.off, k.recvd, k.headers = c, id, c.peerInitWin, 0, 0, false
	c.streams[id] = k
	k.prev, k.next = c.tail, nil
	if c.tail != nil {
		c.tail.next = k
	} else {
		c.head = k
	}
	c.tail = k
	c.nopen++
	c.appendHeaders(k)
	c.sendData(k)
	c.outCalls = append(c.outCalls, k)
	c.dirty.Store(true)
}

// appendHeaders appends k's HEADERS frame (and CONTINUATION frames when
// the block is larger than the server's frame size). c.mu is held.
func (c *conn) appendHeaders(k *Call) {
	bl := c.cl.bl
	at := len(c.out)
	c.out = appendFrameHeader(c.out, 0, frameHeaders, flagEndHeaders, k.id)
	if c.sizeUpdate {
		c.out = appendInt(c.out, 0x20, 5, 0)
		c.sizeUpdate = false
	}
	switch c.mode {
	case blockFirst:
		idx, table := bl.firstVary(k.Values)
		if table > int(c.peerTable) {
			c.mode = blockPlain
			c.out = append(c.out, bl.plain...)
			c.out = bl.appendVary(c.out, blockPlain, nil, k.Values)
			break
		}
		c.out = append(c.out, bl.first...)
		c.out = bl.appendVary(c.out, blockFirst, nil, k.Values)
		n := 0
		for _, x := range idx {
			if x != 0 {
				n++
			}
		}
		c.varyIdx, c.steady, c.tableUsed, c.mode = idx, bl.steadyFor(c.cl.fields, n), table, blockSteady
	case blockSteady:
		c.out = append(c.out, c.steady...)
		c.out = bl.appendVary(c.out, blockSteady, c.varyIdx, k.Values)
	default:
		c.out = append(c.out, bl.plain...)
		c.out = bl.appendVary(c.out, blockPlain, nil, k.Values)
	}
	n := len(c.out) - at - frameHeaderLen
	if n <= c.maxFrame {
		putFrameLength(c.out[at:], n)
		return
	}
	// Rare: a block larger than a frame is cut into HEADERS and
	// CONTINUATION frames.
	block := append([]byte(nil), c.out[at+frameHeaderLen:]...)
	c.out = c.out[:at]
	for first := true; len(block) > 0 || first; first = false {
		part := block[:min(len(block), c.maxFrame)]
		block = block[len(part):]
		typ, flags := byte(frameContinuation), byte(0)
		if first {
			typ = frameHeaders
		}
		if len(block) == 0 {
			flags = flagEndHeaders
		}
		c.out = append(appendFrameHeader(c.out, len(part), typ, flags, k.id), part...)
	}
}

// sendData appends what the windows let of k's DATA, the last frame with
// END_STREAM; what is left waits in c's pending list for WINDOW_UPDATEs.
// c.mu is held.
func (c *conn) sendData(k *Call) {
	for {
		left := len(k.Data) - k.off
		n := int(min(int64(left), k.win, c.sendWin, int64(c.maxFrame)))
		if n < 0 {
			n = 0
		}
		if n == 0 && left > 0 {
			if !k.inPending {
				k.inPending, k.pnext = true, nil
				if c.ptail != nil {
					c.ptail.pnext = k
				} else {
					c.phead = k
				}
				c.ptail = k
			}
			return
		}
		flags := byte(0)
		if n == left {
			flags = flagEndStream
		}
		c.out = appendFrameHeader(c.out, n, frameData, flags, k.id)
		c.out = append(c.out, k.Data[k.off:k.off+n]...)
		k.off += n
		k.win -= int64(n)
		c.sendWin -= int64(n)
		if n == left {
			return
		}
	}
}

// sendPending sends the data the windows now let of the streams waiting
// for them, oldest first. c.mu is held.
func (c *conn) sendPending() {
	k := c.phead
	c.phead, c.ptail = nil, nil
	for k != nil {
		next := k.pnext
		k.pnext, k.inPending = nil, false
		c.sendData(k) // back on the list when the windows do not let all of it
		k = next
	}
	if len(c.out) > 0 {
		c.dirty.Store(true)
	}
}

// unpend takes k off the pending list. c.mu is held.
func (c *conn) unpend(k *Call) {
	if !k.inPending {
		return
	}
	var prev *Call
	for p := c.phead; p != nil; p = p.pnext {
		if p == k {
			if prev != nil {
				prev.pnext = k.pnext
			} else {
				c.phead = k.pnext
			}
			if c.ptail == k {
				c.ptail = prev
			}
			break
		}
		prev = p
	}
	k.pnext, k.inPending = nil, false
}

// finish ends k's stream on c and adds k to out, for Done once c.mu is
// released. c.mu is held.
func (c *conn) finish(k *Call, out *[]*Call) {
	delete(c.streams, k.id)
	if k.prev != nil {
		k.prev.next = k.next
	} else {
		c.head = k.next
	}
	if k.next != nil {
		k.next.prev = k.prev
	} else {
		c.tail = k.prev
	}
	k.prev, k.next = nil, nil
	c.unpend(k)
	if k.Written.IsZero() {
		c.unwritten(k)
	}
	c.nopen--
	c.freed = true
	k.c = nil
	*out = append(*out, k)
}

// flush writes out, from the calling goroutine, unless another writes
// (it will write this too).
func (c *conn) flush() {
	c.mu.Lock()
	l := c.link
	c.mu.Unlock()
	if l == nil || !l.wmu.TryLock() {
		return
	}
	if l.wake != nil {
		l.wake <- struct{}{} // the link's writer holds wmu from now on
		return
	}
	c.writeOut(l, false)
}

// writer writes a TLS link's frames when flush wakes it, until the link
// is gone.
func (c *conn) writer(l *link) {
	defer c.cl.wg.Done()
	for {
		select {
		case <-l.wake:
			c.writeOut(l, true)
		case <-l.gone:
			return
		}
	}
}

// writeOut writes out until it is empty, holding l.wmu, which it releases.
// Not blocking, a write the socket takes only in part leaves the rest to a
// goroutine of its own that waits for the socket (the server does not read
// now), which holds l.wmu until out is empty.
func (c *conn) writeOut(l *link, block bool) {
	for {
		c.mu.Lock()
		if c.link != l || len(c.out) == 0 {
			if c.link == l {
				c.dirty.Store(false)
			}
			l.wmu.Unlock()
			c.mu.Unlock()
			return
		}
		buf := c.out
		c.out, c.spare = c.spare[:0], nil
		now := time.Now()
		for i, k := range c.outCalls {
			k.Written = now
			c.outCalls[i] = nil
		}
		c.outCalls = c.outCalls[:0]
		c.dirty.Store(false)
		c.mu.Unlock()
		var n int
		var err error
		if block || l.raw == nil {
			n, err = l.nc.Write(buf)
		} else {
			n, err = l.writeNow(buf)
		}
		if err != nil {
			l.wmu.Unlock()
			c.broke(l, err)
			return
		}
		if n < len(buf) {
			c.cl.wg.Add(1)
			go c.writeRest(l, buf, n)
			return
		}
		c.keepSpare(buf)
	}
}

// writeRest writes buf[n:] waiting for the socket, then the rest of out
// the same way; it holds l.wmu.
func (c *conn) writeRest(l *link, buf []byte, n int) {
	defer c.cl.wg.Done()
	if _, err := l.nc.Write(buf[n:]); err != nil {
		l.wmu.Unlock()
		c.broke(l, err)
		return
	}
	c.keepSpare(buf)
	c.writeOut(l, true)
}

// keepSpare keeps buf, written, as the buffer out swaps with next.
func (c *conn) keepSpare(buf []byte) {
	if cap(buf) > 1<<20 {
		return
	}
	c.mu.Lock()
	if c.spare == nil {
		c.spare = buf[:0]
	}
	c.mu.Unlock()
}

// readLoop reads l's frames until it breaks; buf[:have] is what the
// handshake read after the server's SETTINGS.
func (c *conn) readLoop(l *link, buf []byte, have int) {
	defer c.cl.wg.Done()
	var done []*Call
	if l.raw != nil {
		// Read and handled within one RawConn.Read: the callback reads
		// what came, handles it and asks to wait for more, so the
		// runtime's poller keeps the readiness that came meanwhile and
		// the socket is not read again only to find it empty.
		l.rbuf, l.rhave, l.rdone = buf, have, done
		err := l.raw.Read(l.read)
		if l.rerr != nil {
			err = l.rerr
		}
		if err == nil {
			err = io.EOF
		}
		c.broke(l, err)
		return
	}
	for {
		n, err := l.nc.Read(buf[have:])
		if n > 0 {
			have += n
			if !c.handle(l, buf, &have, &done, time.Time{}) {
				if l.rerr != nil {
					c.broke(l, l.rerr)
				}
				return
			}
		}
		if err != nil {
			c.broke(l, err)
			return
		}
	}
}

// rawRead is the reader of a link read through its socket (Linux): what
// came is read (again while it fills the buffer) and handled; false asks
// to wait for more; true ends the reader (l.rerr says why, nil at the
// end of the stream or when the link is no longer c's).
func (l *link) rawRead(fd uintptr) bool {
	for {
		n, rx, err := recvStamped(int(fd), l.rbuf[l.rhave:], l.stamped)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			l.rerr = os.NewSyscallError("read", err)
			return true
		case n == 0:
			return true // the end of the stream
		}
		full := l.rhave+n == len(l.rbuf)
		l.rhave += n
		if !l.c.handle(l, l.rbuf, &l.rhave, &l.rdone, rxstamp.Arrived(rx, time.Now())) {
			if l.rerr == nil {
				l.rerr = errLinkGone
			}
			return true
		}
		if !full {
			return false
		}
	}
}

// errLinkGone ends a reader whose link was replaced: nothing to report.
var errLinkGone = errors.New("wire: the link is gone")

// handle handles the frames complete in buf[:*have], which arrived at at
// (zero: unknown), keeping the rest at its start; false when the reader
// must end: l is no longer c's, or its frames broke the protocol (l.rerr
// says how). It never closes l's socket itself: it may run within a read
// of the socket, which a close would wait for.
func (c *conn) handle(l *link, buf []byte, have *int, done *[]*Call, at time.Time) bool {
	c.mu.Lock()
	if c.link != l {
		c.mu.Unlock()
		return false
	}
	used := 0
	var perr error
	for *have-used >= frameHeaderLen {
		fh := parseFrameHeader(buf[used:])
		if fh.length > defaultFrameSize {
			perr = fmt.Errorf("the server sent a frame of %d bytes, more than the %d the client allows", fh.length, defaultFrameSize)
			break
		}
		if *have-used < frameHeaderLen+fh.length {
			break
		}
		p := buf[used+frameHeaderLen : used+frameHeaderLen+fh.length]
		used += frameHeaderLen + fh.length
		if perr = c.frame(fh, p, at, done); perr != nil {
			break
		}
	}
	*have = copy(buf, buf[used:*have])
	freed, urgent := c.freed, c.urgent
	c.freed, c.urgent = false, false
	if len(c.out) > 0 {
		c.dirty.Store(true)
	}
	again := c.again
	c.again = nil
	c.mu.Unlock()
	if len(again) > 0 {
		c.cl.requeue(again)
	}
	for i, k := range *done {
		k.Done(k)
		(*done)[i] = nil
	}
	*done = (*done)[:0]
	if perr != nil {
		l.rerr = perr
		return false
	}
	if freed {
		c.cl.drain()
	}
	if urgent {
		c.flush()
	}
	c.closeIfDrained()
	return true
}

// frame handles one frame from the server; calls that ended go to out.
// It returns an error that ends the connection. c.mu is held.
func (c *conn) frame(fh frameHeader, p []byte, at time.Time, out *[]*Call) error {
	if c.hcont && fh.typ != frameContinuation {
		return errors.New("the server interleaved a frame within a header block")
	}
	switch fh.typ {
	case frameData:
		c.recvUnacked += len(p)
		if c.recvUnacked >= recvConnWindow/4 {
			c.out = appendWindowUpdate(c.out, 0, uint32(c.recvUnacked))
			c.recvUnacked = 0
		}
		k := c.streams[fh.stream]
		if k == nil {
			return nil
		}
		k.recvd += len(p)
		if k.recvd >= recvStreamWindow/2 && fh.flags&flagEndStream == 0 {
			c.out = appendWindowUpdate(c.out, k.id, uint32(k.recvd))
			k.recvd = 0
			c.urgent = true
		}
		if fh.flags&flagEndStream != 0 {
			k.Status, k.Message, k.Answered = 13, "the server ended the stream without trailers", at
			c.finish(k, out)
		}
	case frameHeaders:
		if fh.stream == 0 {
			return errors.New("the server sent HEADERS on stream 0")
		}
		if fh.flags&flagPadded != 0 {
			if len(p) < 1 || int(p[0]) >= len(p) {
				return errors.New("the server sent a HEADERS frame with bad padding")
			}
			p = p[1 : len(p)-int(p[0])]
		}
		if fh.flags&flagPriority != 0 {
			if len(p) < 5 {
				return errors.New("the server sent a short HEADERS frame")
			}
			p = p[5:]
		}
		c.hstream, c.hcall, c.hend = fh.stream, c.streams[fh.stream], fh.flags&flagEndStream != 0
		c.hstatus, c.hgrpc, c.hmsg, c.hctype, c.hgot = 0, 0, "", "", false
		return c.block(p, fh.flags&flagEndHeaders != 0, at, out)
	case frameContinuation:
		if !c.hcont || fh.stream != c.hstream {
			return errors.New("the server sent an unexpected CONTINUATION frame")
		}
		return c.block(p, fh.flags&flagEndHeaders != 0, at, out)
	case frameRSTStream:
		if len(p) != 4 {
			return errors.New("the server sent a bad RST_STREAM frame")
		}
		k := c.streams[fh.stream]
		if k == nil {
			return nil
		}
		code := binary.BigEndian.Uint32(p)
		switch code {
		case errCodeRefusedStream:
			k.Status, k.Message = 14, "the server refused the stream (REFUSED_STREAM) without processing it"
		case errCodeCancel:
			k.Status, k.Message = 1, "the server cancelled the stream (CANCEL)"
			if !time.Now().Before(k.deadline) {
				// The call's deadline passed (the server's, from
				// grpc-timeout, ends the stream so): a timeout, as
				// grpc-go's client reads it.
				k.Status, k.Message = 4, "the server ended the stream at the call's deadline (RST_STREAM CANCEL)"
			}
		case errCodeEnhanceCalm:
			k.Status, k.Message = 8, "the server reset the stream: ENHANCE_YOUR_CALM"
		default:
			k.Status, k.Message = 13, "the server reset the stream with HTTP/2 error code "+strconv.FormatUint(uint64(code), 10)
		}
		k.Answered = at
		c.finish(k, out)
	case frameSettings:
		if fh.stream != 0 || len(p)%6 != 0 {
			return errors.New("the server sent a bad SETTINGS frame")
		}
		if fh.flags&flagAck != 0 {
			return nil
		}
		for ; len(p) >= 6; p = p[6:] {
			v := binary.BigEndian.Uint32(p[2:])
			switch binary.BigEndian.Uint16(p) {
			case settingHeaderTableSize:
				c.peerTable = v
				if c.mode == blockSteady && int(v) < c.tableUsed {
					// The server's table shrank below what the
					// requests name: empty it, and send literals from
					// now on.
					c.mode, c.sizeUpdate = blockPlain, true
				}
			case settingMaxConcurrentStreams:
				c.maxStreams = v
				c.freed = true
			case settingInitialWindowSize:
				if v > maxWindow {
					return errors.New("the server sent an INITIAL_WINDOW_SIZE above 2^31-1")
				}
				delta := int64(v) - c.peerInitWin
				c.peerInitWin = int64(v)
				for _, k := range c.streams {
					k.win += delta
				}
				if delta > 0 {
					c.sendPending()
					c.freed = true
				}
			case settingMaxFrameSize:
				if v < defaultFrameSize || v > 1<<24-1 {
					return errors.New("the server sent a bad MAX_FRAME_SIZE")
				}
				c.maxFrame = int(v)
			}
		}
		c.out = appendFrameHeader(c.out, 0, frameSettings, flagAck, 0)
		c.urgent = true
	case framePing:
		if len(p) != 8 || fh.stream != 0 {
			return errors.New("the server sent a bad PING frame")
		}
		if fh.flags&flagAck == 0 {
			c.out = append(appendFrameHeader(c.out, 8, framePing, flagAck, 0), p...)
		}
	case frameGoAway:
		if len(p) < 8 {
			return errors.New("the server sent a bad GOAWAY frame")
		}
		last := binary.BigEndian.Uint32(p) & 0x7fffffff
		c.goaway = true
		c.state.Store(stateDraining)
		// The calls above last were not processed: they go again, on
		// another connection.
		for k := c.head; k != nil; {
			next := k.next
			if k.id > last {
				c.finish(k, &c.again)
			}
			k = next
		}
	case frameWindowUpdate:
		if len(p) != 4 {
			return errors.New("the server sent a bad WINDOW_UPDATE frame")
		}
		inc := int64(binary.BigEndian.Uint32(p) & 0x7fffffff)
		if fh.stream == 0 {
			c.sendWin += inc
		} else if k := c.streams[fh.stream]; k != nil {
			k.win += inc
		}
		if c.phead != nil {
			c.sendPending()
		}
		c.freed = true
	case framePushPromise:
		return errors.New("the server sent PUSH_PROMISE, which the client disabled")
	}
	return nil
}

// block decodes a fragment of a header block; at its end it gives the
// call its answer's headers or trailers. c.mu is held.
func (c *conn) block(p []byte, end bool, at time.Time, out *[]*Call) error {
	if _, err := c.dec.Write(p); err != nil {
		return fmt.Errorf("the server's header block does not decode: %w", err)
	}
	c.hcont = !end
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return fmt.Errorf("the server's header block does not decode: %w", err)
	}
	k := c.hcall
	c.hcall = nil
	if k == nil {
		return nil // a call that ended already (its deadline passed)
	}
	if !k.headers && c.hstatus != 0 {
		// The response's headers (or trailers-only).
		k.headers = true
		switch {
		case c.hstatus != 200:
			if !c.hgot {
				k.Status, k.Message = httpCode(c.hstatus), "the server answered HTTP status "+strconv.Itoa(c.hstatus)
				k.Answered = at
				c.endEarly(k, out)
				return nil
			}
		case !isGRPCType(c.hctype):
			k.Err = fmt.Errorf("%w: the server answered with content-type %q, not application/grpc: it does not speak gRPC", netclass.ErrProtocolMismatch, c.hctype)
			k.Answered = at
			c.endEarly(k, out)
			return nil
		}
	}
	if !c.hend {
		return nil
	}
	if c.hgot {
		k.Status, k.Message = c.hgrpc, c.hmsg
	} else {
		k.Status, k.Message = 13, "the server's trailers have no grpc-status"
	}
	k.Answered = at
	c.finish(k, out)
	return nil
}

// endEarly ends k before the server ended its stream, and tells it so.
// c.mu is held.
func (c *conn) endEarly(k *Call, out *[]*Call) {
	if !c.hend {
		c.out = appendRSTStream(c.out, k.id, errCodeCancel)
	}
	c.finish(k, out)
}

// emit takes one decoded header field of the block being decoded.
func (c *conn) emit(f hpack.HeaderField) {
	switch f.Name {
	case ":status":
		c.hstatus, _ = strconv.Atoi(f.Value)
	case "content-type":
		c.hctype = f.Value
	case "grpc-status":
		if n, err := strconv.Atoi(f.Value); err == nil {
			c.hgrpc, c.hgot = n, true
		}
	case "grpc-message":
		c.hmsg = unescape(f.Value)
	}
}

// isGRPCType reports whether a content-type is gRPC's.
func isGRPCType(t string) bool {
	const g = "application/grpc"
	return len(t) >= len(g) && t[:len(g)] == g && (len(t) == len(g) || t[len(g)] == '+' || t[len(g)] == ';')
}

// httpCode is the gRPC status of an answer with HTTP status s and no
// grpc-status, as gRPC's HTTP mapping has it.
func httpCode(s int) int {
	switch s {
	case 400:
		return 13 // Internal
	case 401:
		return 16 // Unauthenticated
	case 403:
		return 7 // PermissionDenied
	case 404:
		return 12 // Unimplemented
	case 429, 502, 503, 504:
		return 14 // Unavailable
	}
	return 2 // Unknown
}

// unescape decodes grpc-message's percent-encoding.
func unescape(s string) string {
	if !bytes.ContainsRune([]byte(s), '%') {
		return s
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// expire ends the calls on c past their deadline, or whose context ended,
// telling the server (RST_STREAM); they go to out.
func (c *conn) expire(now time.Time, out []*Call) []*Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link == nil {
		return out
	}
	for k := c.head; k != nil; {
		next := k.next
		switch {
		case !now.Before(k.deadline):
			k.Err = ErrTimeout
		case k.Ctx != nil && k.Ctx.Err() != nil:
			k.Err = k.Ctx.Err()
		default:
			k = next
			continue
		}
		// A call whose frames are still in out (the socket was full) is
		// sent all the same, then reset: it may have reached the server.
		c.out = appendRSTStream(c.out, k.id, errCodeCancel)
		c.finish(k, &out)
		k = next
	}
	if len(c.out) > 0 {
		c.dirty.Store(true)
	}
	return out
}

// unwritten takes k off the calls whose frames are in out, and reports
// whether it was there. c.mu is held.
func (c *conn) unwritten(k *Call) bool {
	for i, x := range c.outCalls {
		if x == k {
			copy(c.outCalls[i:], c.outCalls[i+1:])
			c.outCalls[len(c.outCalls)-1] = nil
			c.outCalls = c.outCalls[:len(c.outCalls)-1]
			return true
		}
	}
	return false
}

// broke ends l, c's link, after err: the calls whose frames never reached
// the kernel go again (on another connection), the others end with err;
// c is opened again in the background.
func (c *conn) broke(l *link, err error) {
	c.mu.Lock()
	if c.link != l {
		c.mu.Unlock()
		return
	}
	c.link = nil
	var again, out []*Call
	for k := c.head; k != nil; {
		next := k.next
		if k.Written.IsZero() {
			c.finish(k, &again)
		} else {
			k.Err = err
			c.finish(k, &out)
		}
		k = next
	}
	again = append(again, c.again...)
	c.again = nil
	c.streams = nil
	c.out = c.out[:0]
	c.dirty.Store(false)
	// Calls may wait for the reconnection's first try.
	c.state.Store(stateConnecting)
	c.mu.Unlock()
	l.close()
	for _, k := range out {
		k.Done(k)
	}
	if len(again) > 0 {
		c.cl.requeue(again)
	}
	if c.cl.closed.Load() {
		c.state.Store(stateFailed)
		return
	}
	c.cl.wg.Add(1)
	go c.reconnect()
}

// reconnect opens c again, pausing between tries (100 ms, doubling to
// 2 s), until it opens or the client closes.
func (c *conn) reconnect() {
	defer c.cl.wg.Done()
	pause := 100 * time.Millisecond
	for !c.cl.closed.Load() {
		ctx, cancel := context.WithTimeout(c.cl.ctx, c.cl.o.Timeout)
		err := c.open(ctx)
		cancel()
		if err == nil || c.cl.closed.Load() {
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-c.cl.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// closeIfDrained closes a connection that takes no more calls once its
// calls are done; it opens again in the background.
func (c *conn) closeIfDrained() {
	c.mu.Lock()
	l := c.link
	drained := l != nil && c.state.Load() == stateDraining && c.nopen == 0 && len(c.out) == 0
	c.mu.Unlock()
	if drained {
		c.broke(l, errors.New("the connection was drained (GOAWAY, or its stream ids spent)"))
	}
}

// shut ends c for good (the client closes): every call in flight ends
// with err and goes to out.
func (c *conn) shut(err error, out []*Call) []*Call {
	c.mu.Lock()
	if c.link == nil {
		c.mu.Unlock()
		return out
	}
	for k := c.head; k != nil; {
		next := k.next
		k.Err = err
		if k.Written.IsZero() && c.unwritten(k) {
			k.Unsent, k.Err = Closed, nil
		}
		c.finish(k, &out)
		k = next
	}
	l := c.link
	c.link = nil
	c.state.Store(stateFailed)
	c.mu.Unlock()
	l.close()
	return out
}
