//go:build linux

package httpdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/rxstamp"
)

// Event loops: on Linux, a pool of HTTP/1.1 connections over plain TCP runs
// as wrk does. A send is written by the goroutine that hands it over (the
// open model's pacer, one write system call, nothing handed to another
// goroutine) on the connection idle longest, or queued (first in, first
// out) when every connection is busy. Answers are read by event loops (one
// per processor the runtime may use, at most one per connection), each
// waiting on an epoll set of its own connections: one wait returns every
// connection with bytes to read, and each is read with one system call
// into the loop's buffer, parsed there, and reported. A loop writes the
// send queued longest on the connection it just freed. Nothing runs per
// request but those two system calls: no goroutine is woken for it, no
// timer set (a loop checks its connections' deadlines every eighth of the
// timeout), nothing allocated.
//
// Reads follow the pacer: while sends come (the open model's pacer hands
// them over at every wake-up), the goroutine that hands one over first
// reads, without waiting, the answers that arrived since its previous
// wake-up (one epoll_pwait with no timeout, at most once every pollEvery),
// and the loops do not wait on their sockets: an answer wakes nobody. A
// loop waits on its sockets again (through the runtime's poller) once no
// send came for readGrace, and while sends come further apart than that
// (below about 1,000 wake-ups a second, where deferring would add read lag
// for little). Each wake-up of a thread costs a context
// switch, more than the reads; with the answers read at the pacer's
// wake-ups, a request costs about one wake-up less. This holds only while
// every connection of the loop has the kernel's receive timestamps: an
// answer read later is still timed when it arrived (the delay is its
// read lag, reported apart); without them reads are never deferred.

// canLoop: connections run on event loops here.
const canLoop = true

// evloop waits for and reads the answers of its connections.
type evloop struct {
	p    *h1Pool
	ep   int      // the epoll set of the connections
	gate int      // an epoll set holding ep, armed once (EPOLLONESHOT) before each wait
	f    *os.File // gate, watched by the runtime's poller: the loop parks like a network read
	raw  syscall.RawConn
	// unstamped: a connection of this loop has no kernel receive
	// timestamps, so its reads are never deferred.
	unstamped atomic.Bool
	// polled is when a sender last read the loop's answers (nanoseconds
	// since epoch), gap the time between that read and the one before.
	polled, gap atomic.Int64
	conns       []*h1Conn // this loop's connections

	// mu is held by whoever reads ep: the loop or a sender.
	mu     sync.Mutex
	closed bool
	buf    []byte // where every read goes: the connections own no read buffer
	events []syscall.EpollEvent
	scan   time.Time // the next check of deadlines (the loop's own)
	done   []finished
}

// finished is a send with its outcome, reported once the loop let go of
// the connection's lock.
type finished struct {
	c       *h1Conn // the connection to hand on (nil: not this loop's to hand on)
	j       h1Job
	started time.Time
	out     pipebench.Outcome
}

// loopEvents is how many connections one wait returns at most.
const loopEvents = 256

// loopBuffer is the size of a loop's read buffer: an answer larger than it
// is read in several reads.
const loopBuffer = 64 << 10

// pollEvery is how often at most a sender reads a loop's answers: the
// pacer hands over the sends due at one wake-up within microseconds, and
// only the first of them reads.
const pollEvery = 50 * time.Microsecond

// readGrace is how long after a sender last read its answers a loop waits
// on its sockets again: past the pacer's interval between wake-ups at
// 1,000 sends a second and above (below, answers are read at once). It
// bounds the read lag deferring adds.
const readGrace = time.Millisecond

// epoch is the origin of evloop.polled.
var epoch = time.Now()

// ensureLoops makes the pool's event loops once, when the first
// connection opens.
func (p *h1Pool) ensureLoops() error {
	p.loopsOnce.Do(func() { p.loopsErr = p.startLoops() })
	return p.loopsErr
}

// startLoops makes the pool's event loops and assigns each connection to
// one. They run until close.
func (p *h1Pool) startLoops() error {
	n := min(runtime.GOMAXPROCS(0), len(p.conns))
	for i := 0; i < n; i++ {
		l, err := p.newLoop(min(loopEvents, len(p.conns)/n+1))
		if err != nil {
			p.closeLoops()
			return err
		}
		p.loops = append(p.loops, l)
	}
	for i, c := range p.conns {
		c.lp = p.loops[i%n]
		c.lp.conns = append(c.lp.conns, c)
	}
	loops := p.loops
	p.ready.Store(&loops)
	for _, l := range p.loops {
		go l.run()
	}
	return nil
}

// newLoop makes a loop's two epoll sets: ep for its connections, and the
// gate that holds ep and that the runtime's poller watches.
func (p *h1Pool) newLoop(events int) (*evloop, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	gate, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err == nil {
		err = syscall.SetNonblock(gate, true)
		if err == nil {
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLONESHOT, Fd: int32(ep)}
			err = syscall.EpollCtl(gate, syscall.EPOLL_CTL_ADD, ep, &ev)
		}
		if err != nil {
			syscall.Close(gate)
		}
	}
	if err != nil {
		syscall.Close(ep)
		return nil, os.NewSyscallError("epoll", err)
	}
	l := &evloop{p: p, ep: ep, gate: gate, f: os.NewFile(uintptr(gate), "http-driver-epoll"), buf: make([]byte, loopBuffer),
		events: make([]syscall.EpollEvent, events)}
	if !p.stamp {
		l.unstamped.Store(true)
	}
	if l.raw, err = l.f.SyscallConn(); err != nil {
		l.f.Close()
		syscall.Close(ep)
		return nil, err
	}
	return l, nil
}

// closeLoops ends the loops.
func (p *h1Pool) closeLoops() {
	for _, l := range p.loops {
		l.mu.Lock()
		if !l.closed {
			l.closed = true
			syscall.Close(l.ep)
			l.f.Close()
		}
		l.mu.Unlock()
	}
}

// pollLoops reads, without waiting, the answers that came on the loops
// since the last read, unless a sender did so less than pollEvery ago or
// the loop is reading. It is called by the sender before it takes a
// connection: the answers read free theirs. It reports whether it read
// any loop's.
func (p *h1Pool) pollLoops() (polled bool) {
	loops := p.ready.Load()
	if loops == nil {
		return false
	}
	t := int64(time.Since(epoch))
	for _, l := range *loops {
		if t-l.polled.Load() < int64(pollEvery) || !l.mu.TryLock() {
			continue
		}
		l.gap.Store(t - l.polled.Load())
		l.polled.Store(t)
		if !l.closed {
			l.poll()
			l.deliver()
			polled = true
		}
		l.mu.Unlock()
	}
	return polled
}

// epollET is EPOLLET as the event mask's type holds it.
const epollET = uint32(1) << 31

// attach makes netc, just opened, c's socket: the loop reads it from now
// on. netc is closed (the socket stays open under a descriptor of c's own,
// which the runtime's poller does not watch). fresh says it was opened for
// the send it is about to carry.
func (p *h1Pool) attach(c *h1Conn, netc net.Conn, fresh bool) error {
	if err := p.ensureLoops(); err != nil {
		netc.Close()
		return err
	}
	raw := rawConn(netc)
	if raw == nil {
		netc.Close()
		return errors.New("not a socket")
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = os.NewSyscallError("fcntl", e)
			return
		}
		fd = int(r)
	}); err != nil {
		derr = err
	}
	netc.Close()
	if derr != nil {
		return derr
	}
	stamped := p.stamp && rxstamp.EnableFD(fd)
	if !stamped {
		c.lp.unstamped.Store(true)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | epollET, Fd: c.index}
	if err := syscall.EpollCtl(c.lp.ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(fd)
		return os.NewSyscallError("epoll_ctl", err)
	}
	c.cmu.Lock()
	c.fd, c.stamped, c.used, c.fresh = fd, stamped, time.Now(), fresh
	c.cmu.Unlock()
	return nil
}

// closeFD closes c's socket (the epoll set forgets it). c.cmu is held.
func (c *h1Conn) closeFD() {
	if c.fd >= 0 {
		syscall.Close(c.fd)
		c.fd = -1
	}
	c.out, c.outBody = nil, nil
}

// sendAsync hands b over: written now on the connection idle longest, or
// queued until one is free. The pacer's sends (paced) first read the
// answers that came since its last wake-up (pollLoops); a sender that waits
// for its answer (send) does not, or the loops would defer the reads it
// waits for.
func (p *h1Pool) sendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome), paced bool) {
	j := h1Job{ctx: ctx, b: b, done: done}
	polled := paced && p.pollLoops()
	if p.piped {
		p.sendPiped(j, paced, polled)
		return
	}
	p.mu.Lock()
	if p.freeN == 0 {
		j.at = time.Now()
		p.queue(j)
		p.mu.Unlock()
		return
	}
	c := p.popFree()
	p.mu.Unlock()
	if !p.begin(c, j) {
		p.release(c)
	}
}

// queue adds j to the sends waiting for a connection. p.mu is held.
func (p *h1Pool) queue(j h1Job) {
	if p.waitHead > 256 && p.waitHead > len(p.waiting)/2 { // keep the queue's memory bounded
		n := copy(p.waiting, p.waiting[p.waitHead:])
		clear(p.waiting[n:])
		p.waiting, p.waitHead = p.waiting[:n], 0
	}
	p.waiting = append(p.waiting, j)
}

// send is Send: sendAsync, waiting for the outcome.
func (p *h1Pool) send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	return pipebench.Await(func(done func(time.Time, pipebench.Outcome)) { p.sendAsync(ctx, b, done, false) })
}

// admit puts a connection that start (or the background opener) opened
// to use: to the send waiting longest, if any, else among the idle ones.
func (p *h1Pool) admit(c *h1Conn) {
	if p.piped {
		p.admitPiped(c)
		return
	}
	p.release(c)
}

// release hands c, free again, to the send waiting longest, or puts it
// back among the idle connections.
func (p *h1Pool) release(c *h1Conn) {
	if p.piped {
		p.releasePiped(c, true)
		return
	}
	for {
		p.mu.Lock()
		j, ok := p.nextWaiting()
		if !ok {
			p.pushFree(c)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if p.begin(c, j) {
			return
		}
	}
}

// begin sends j's request on c, which the caller took: it is not free and
// carries nothing. It reports whether c went to j; if not, j has its
// outcome (cancelled, or waited too long for a connection) and c is still
// the caller's.
func (p *h1Pool) begin(c *h1Conn, j h1Job) bool {
	now := time.Now()
	started := j.at
	if started.IsZero() {
		started = now
	}
	switch {
	case j.ctx.Err() != nil:
		j.done(started, cancelled(j.ctx))
		return false
	case !j.at.IsZero() && now.Sub(j.at) > p.timeout:
		j.done(started, classifyErr(errNoConn))
		return false
	}
	c.cmu.Lock()
	// A connection idle for a while may have been closed by the server:
	// ask the kernel (one system call) before writing on it.
	if c.fd >= 0 && now.Sub(c.used) > idleCheck && peerClosedFD(c.fd) {
		c.closeFD()
	}
	if c.fd < 0 {
		c.cmu.Unlock()
		go p.dialAndBegin(c, j, started)
		return true
	}
	err := p.write(c, j, started, now)
	c.cmu.Unlock()
	if err != nil {
		p.failed(c, j, started, now, err, true)
	}
	return true
}

// write writes j's request on c and leaves it waiting for its answer; a
// rest the socket did not take is written when it can (the loop, on
// EPOLLOUT). c.cmu is held.
func (p *h1Pool) write(c *h1Conn, j h1Job, started, now time.Time) error {
	b := j.b
	deadline := now.Add(p.timeout)
	if dl, ok := j.ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	c.job, c.started, c.written, c.deadline, c.busy = j, started, now, deadline, true
	c.rp.reset()
	c.buf = appendRequest(c.buf[:0], p.head, b.ContentType, b.Headers, len(b.Body))
	body := b.Body
	if len(body) <= inlineBody {
		c.buf, body = append(c.buf, body...), nil
	}
	c.out, c.outBody = c.buf, body
	err := c.flush()
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	return err
}

// flush writes what is left of the request: nil when it is all out or the
// socket's buffer is full (the rest goes on EPOLLOUT). c.cmu is held.
func (c *h1Conn) flush() error {
	for len(c.out)+len(c.outBody) > 0 {
		var n uintptr
		var e syscall.Errno
		if len(c.outBody) == 0 {
			n, _, e = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&c.out[0])), uintptr(len(c.out)))
		} else {
			iov := [2]syscall.Iovec{}
			k := 0
			if len(c.out) > 0 {
				iov[k].Base = &c.out[0]
				iov[k].SetLen(len(c.out))
				k++
			}
			iov[k].Base = &c.outBody[0]
			iov[k].SetLen(len(c.outBody))
			n, _, e = syscall.RawSyscall(syscall.SYS_WRITEV, uintptr(c.fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(k+1))
		}
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return nil
		default:
			c.out, c.outBody = nil, nil
			return os.NewSyscallError("write", e)
		}
		m := int(n)
		if m <= len(c.out) {
			c.out = c.out[m:]
		} else {
			c.outBody = c.outBody[m-len(c.out):]
			c.out = nil
		}
		if len(c.out) == 0 {
			c.out = nil
		}
		if len(c.outBody) == 0 {
			c.outBody = nil
		}
	}
	return nil
}

// dialAndBegin opens c again and sends j on it; a dial that fails is j's
// outcome, and c goes on to the next waiting send (which tries again).
func (p *h1Pool) dialAndBegin(c *h1Conn, j h1Job, started time.Time) {
	deadline := time.Now().Add(p.timeout)
	if dl, ok := j.ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	netc, err := p.dialNet(j.ctx, deadline)
	if err == nil {
		err = p.attach(c, netc, true)
	}
	if err != nil {
		p.report(c, j, started, outcome(0, sendTimes{}, err))
		return
	}
	now := time.Now()
	c.cmu.Lock()
	err = p.write(c, j, started, now)
	c.cmu.Unlock()
	if err != nil {
		p.failed(c, j, started, now, err, true)
	}
}

// failed ends j, whose request failed on c (written at written, if it
// was): once, a send on a connection opened before it that failed before
// any byte of its answer came (writing it, or by the server closing the
// connection: it did so meanwhile) is sent again on a new one; otherwise
// the failure is its outcome. c is closed.
func (p *h1Pool) failed(c *h1Conn, j h1Job, started, written time.Time, err error, unanswered bool) {
	c.cmu.Lock()
	stale := unanswered && !c.fresh && !j.retried && !isTimeout(err)
	c.closeFD()
	c.busy, c.job = false, h1Job{}
	c.cmu.Unlock()
	if stale {
		j.retried = true
		go p.dialAndBegin(c, j, started)
		return
	}
	p.report(c, j, started, outcome(0, sendTimes{written: written}, err))
}

// report gives j its outcome and hands c on.
func (p *h1Pool) report(c *h1Conn, j h1Job, started time.Time, out pipebench.Outcome) {
	j.done(started, out)
	p.release(c)
}

// run reads the answers of l's connections until the pool closes.
func (l *evloop) run() {
	step := min(max(l.p.timeout/8, time.Millisecond), time.Second)
	l.mu.Lock()
	l.scan = time.Now().Add(step)
	l.mu.Unlock()
	l.f.SetReadDeadline(l.scan)
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		n := l.poll()
		if now := time.Now(); !now.Before(l.scan) {
			l.expire(now)
			l.scan = now.Add(step)
			l.f.SetReadDeadline(l.scan)
		}
		l.deliver()
		scan := l.scan
		l.mu.Unlock()
		if l.p.ndirty.Load() > 0 && time.Since(epoch)-time.Duration(l.polled.Load()) > readGrace {
			// Pipelined: the sends the answers let in, unless the pacer,
			// active, writes them with its next row.
			l.p.flushPiped()
		}
		if n > 0 {
			runtime.Gosched() // the pacer, between two batches
			continue
		}
		if !l.wait(scan) {
			return
		}
	}
}

// poll reads what came on l's connections since the last poll, without
// waiting; the answers read wait in l.done for deliver. l.mu is held. It
// returns how many connections had events.
func (l *evloop) poll() int {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.ep), uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	if e != 0 {
		return 0
	}
	n := int(r)
	now := time.Now()
	for _, ev := range l.events[:n] {
		l.handle(l.p.conns[ev.Fd], ev.Events, now)
	}
	return n
}

// deferred reports whether l's reads are deferred to the senders: they
// read l's answers less than readGrace ago, and the read before came less
// than readGrace before that one (a sender will be back soon), and every
// connection has kernel receive timestamps; d is how long until readGrace
// after their last read.
func (l *evloop) deferred() (d time.Duration, ok bool) {
	if l.unstamped.Load() || l.gap.Load() > int64(readGrace) {
		return 0, false
	}
	d = time.Duration(l.polled.Load()+int64(readGrace)) - time.Since(epoch)
	return d, d > 0
}

// wait waits for l's connections to have events, or for the next check
// of deadlines at scan: while senders read l's answers (deferred) it
// sleeps until readGrace after their last read instead. It returns false
// when the pool closed.
func (l *evloop) wait(scan time.Time) bool {
	if d, deferred := l.deferred(); deferred {
		time.Sleep(min(d, max(time.Until(scan), 0)))
		return true
	}
	var cerr error
	if err := l.raw.Control(func(gate uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLONESHOT, Fd: int32(l.ep)}
		cerr = syscall.EpollCtl(int(gate), syscall.EPOLL_CTL_MOD, l.ep, &ev)
	}); err != nil || cerr != nil {
		return false // the pool closed
	}
	var got [1]syscall.EpollEvent
	err := l.raw.Read(func(fd uintptr) bool {
		r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&got[0])), 1, 0, 0, 0)
		return e == 0 && r > 0 // EINTR: again
	})
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}

// handle reads what came on c (and writes the rest of its request when
// the socket takes it).
func (l *evloop) handle(c *h1Conn, events uint32, now time.Time) {
	if l.p.piped {
		l.handlePiped(c, events, now)
		return
	}
	c.cmu.Lock()
	if c.fd < 0 {
		c.cmu.Unlock()
		return
	}
	if c.out != nil || c.outBody != nil {
		if err := c.flush(); err != nil {
			l.fail(c, err, true)
			return
		}
	}
	if events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0 {
		c.cmu.Unlock()
		return
	}
	for {
		n, rx, ok, err := l.recv(c)
		if !ok {
			return
		}
		if !c.busy {
			// Bytes or an end with no request waiting: the connection is
			// of no more use (the server closed it while idle, or spoke
			// unasked).
			c.closeFD()
			c.cmu.Unlock()
			return
		}
		if err != nil {
			done, perr := c.rp.end(err)
			if done {
				l.complete(c, now, rx, true)
				return
			}
			l.fail(c, perr, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET))
			return
		}
		used, done, perr := c.rp.feed(l.buf[:n])
		switch {
		case perr != nil:
			l.fail(c, perr, false)
			return
		case done:
			// Bytes after the answer: unasked, the connection is not
			// reused.
			l.complete(c, now, rx, used < n || c.rp.closeAfter || events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0)
			return
		case n < len(l.buf) && events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) == 0:
			c.cmu.Unlock() // all there was: the rest comes with another event
			return
		}
	}
}

// recv reads what came on c into l.buf: ok false when nothing more has
// come (c.cmu is then released), and an end of the stream as io.EOF.
// c.cmu is held.
func (l *evloop) recv(c *h1Conn) (n int, rx int64, ok bool, err error) {
	n, rx, again, err := recvOnce(c.fd, l.buf, c.stamped)
	if again {
		c.cmu.Unlock()
		return 0, 0, false, nil
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	return n, rx, true, err
}

// complete ends c's request with its answer; c.cmu is held and released.
func (l *evloop) complete(c *h1Conn, now time.Time, rx int64, closeAfter bool) {
	at := sendTimes{written: c.written}
	if rx != 0 {
		at.answered = rxstamp.Arrived(rx, now)
	}
	f := finished{c: c, j: c.job, started: c.started, out: outcome(c.rp.status, at, nil)}
	c.busy, c.job, c.used, c.fresh = false, h1Job{}, now, false
	if closeAfter {
		c.closeFD()
	}
	c.cmu.Unlock()
	l.done = append(l.done, f)
}

// fail ends c's request with err; retry says it may be sent again if no
// byte of its answer came. c.cmu is held and released.
func (l *evloop) fail(c *h1Conn, err error, retry bool) {
	j, started, written, unanswered := c.job, c.started, c.written, retry && !c.rp.started()
	c.cmu.Unlock()
	l.p.failed(c, j, started, written, err, unanswered)
}

// deliver reports the answers of the last batch, each handing its
// connection on.
func (l *evloop) deliver() {
	for i, f := range l.done {
		f.j.done(f.started, f.out)
		l.p.release(f.c)
		l.done[i] = finished{}
	}
	l.done = l.done[:0]
}

// expireOne is expire's part for connections carrying one request at a
// time.
func (l *evloop) expireOne(now time.Time) {
	p := l.p
	for _, c := range l.conns {
		c.cmu.Lock()
		if !c.busy || c.fd < 0 {
			c.cmu.Unlock()
			continue
		}
		if c.job.ctx.Err() == nil && !now.After(c.deadline) {
			c.cmu.Unlock()
			continue
		}
		out := unanswered(c.job.ctx, c.written, noAnswer(p.timeout))
		j, started := c.job, c.started
		c.closeFD()
		c.busy, c.job = false, h1Job{}
		c.cmu.Unlock()
		l.done = append(l.done, finished{c: c, j: j, started: started, out: out})
	}
}

// expire fails the requests of l's connections that waited longer than
// their deadline (or whose send was cancelled), and, on the first loop,
// the sends that waited longer than the timeout for a connection (or,
// pipelined, a window slot).
func (l *evloop) expire(now time.Time) {
	p := l.p
	full := errNoConn
	if p.piped {
		l.expirePiped(now)
		full = errPipelineFull
	} else {
		l.expireOne(now)
	}
	if l != p.loops[0] {
		return
	}
	for {
		p.mu.Lock()
		if p.waitHead == len(p.waiting) || now.Sub(p.waiting[p.waitHead].at) <= p.timeout {
			p.mu.Unlock()
			return
		}
		j, _ := p.nextWaiting()
		p.mu.Unlock()
		j.done(j.at, classifyErr(full))
	}
}

// noAnswer is a request that had no answer within the timeout.
func noAnswer(timeout time.Duration) error {
	return fmt.Errorf("no answer within the timeout (%v): %w", timeout, os.ErrDeadlineExceeded)
}

// errPoolClosed is a send that was in flight when the driver shut down.
var errPoolClosed = errors.New("http driver shut down while the request was in flight")

// peerClosedFD is peerClosed on a descriptor.
func peerClosedFD(fd int) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
}

// openLoop counts c when its socket is open and the peer has not closed it.
func (c *h1Conn) openLoop() bool {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	return c.fd >= 0 && !peerClosedFD(c.fd)
}

// closeLoopConns closes every connection's socket, failing what it
// carried, and ends the loops.
func (p *h1Pool) closeLoopConns() {
	p.mu.Lock()
	p.shut = true
	p.mu.Unlock()
	for _, c := range p.conns {
		if p.piped {
			c.cmu.Lock()
			p.dropPiped(c, errPoolClosed, false)
			continue
		}
		c.cmu.Lock()
		busy, j, started, written := c.busy, c.job, c.started, c.written
		c.closeFD()
		c.busy, c.job = false, h1Job{}
		c.cmu.Unlock()
		if busy {
			j.done(started, outcome(0, sendTimes{written: written}, errPoolClosed))
		}
	}
	p.closeLoops()
}
