//go:build linux

package httpdriver

import (
	"context"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/pipebench/pipebench/internal/conn/rxstamp"
)

// Pipelined on the event loops: over plain TCP on Linux, `pipeline: N`
// runs on the event loops of loop_linux.go, each connection carrying up to
// N requests answered in order (a first-in, first-out list of its calls).
//
// The sends handed over at one wake-up of the open model's pacer (a row)
// join one connection while it has room, then the next with room after it,
// in turn, and are held until the runner's Flush after the row
// (pipebench.Flusher): each connection's held requests then go out in one
// write. Their answers are read as the unpipelined ones are: by the pacer,
// at its next wake-up (reads follow the pacer). A row costs about one
// write and one read, and wakes no goroutine and no thread. This is wrk's
// pipelined loop on the open model's schedule: wrk writes when answers
// free its pipeline, pipebench when the sends fall due.
//
// A connection that fails (an error, the server closing it, an answer
// that is not HTTP/1.1) fails the requests written on it; those held and
// not written yet go out on a new connection, opened at once. A request
// with no answer within the timeout fails every request written on its
// connection, which is closed, as a closed loop's read deadline would.
// With every window slot taken (connections x depth), a send waits in the
// pool's queue until an answer frees one, or fails as "pipeline full"
// after the timeout.

// sendPiped hands j to the connection the current row joins, or queues it
// while every window slot is taken. A send that is not the pacer's (paced
// false: Send, waiting for its answer) is written at once; so are the
// requests of a connection it fills, and, when the pacer read answers
// before it (polled: at most every pollEvery) and the oldest request held
// has waited flushEvery, those held before it: a pacer that fell behind
// hands sends over without a break, and its row would not end until it
// caught up.
func (p *h1Pool) sendPiped(j h1Job, paced, polled bool) {
	if polled && p.ndirty.Load() > 0 && time.Since(epoch)-time.Duration(p.heldAt.Load()) >= flushEvery {
		p.flushPiped()
	}
	p.mu.Lock()
	c := p.roomy()
	if c == nil {
		j.at = time.Now()
		p.queue(j)
		p.mu.Unlock()
		return
	}
	c.load++
	p.room--
	full := c.load == p.depth
	p.mu.Unlock()
	p.assign(c, j)
	switch {
	case !paced:
		p.flushPiped()
	case full:
		c.cmu.Lock()
		if c.fd < 0 {
			c.cmu.Unlock() // the dial opening it writes them
			return
		}
		if err := p.writeHeld(c, time.Now()); err != nil {
			p.dropPiped(c, err, true)
			return
		}
		c.cmu.Unlock()
	}
}

// roomy returns the connection the next send joins: the current row's
// while it has room, else the next one in use with room (nil: every
// window slot is taken). p.mu is held.
func (p *h1Pool) roomy() *h1Conn {
	if p.room <= 0 {
		return nil
	}
	if c := p.cur; c != nil && c.load < p.depth {
		return c
	}
	for range p.conns {
		c := p.conns[p.rr]
		if p.rr++; p.rr == len(p.conns) {
			p.rr = 0
		}
		if c.admitted && c.load < p.depth {
			p.cur = c
			return c
		}
	}
	return nil
}

// assign appends j's request to those c holds for the next flush,
// opening c first when it is closed. Its slot is counted already.
func (p *h1Pool) assign(c *h1Conn, j h1Job) {
	b := j.b
	c.cmu.Lock()
	c.buf = append(appendRequest(c.buf, p.head, b.ContentType, b.Headers, len(b.Body)), b.Body...)
	c.calls = append(c.calls, h1Call{job: j, started: j.at})
	if c.fd < 0 && !c.dialing {
		c.dialing = true
		go p.redial(c)
	}
	if !c.dirty {
		c.dirty = true
		p.dmu.Lock()
		p.dirty = append(p.dirty, c)
		if p.ndirty.Add(1) == 1 { // the first request held since the last flush
			p.heldAt.Store(int64(time.Since(epoch)))
		}
		p.dmu.Unlock()
	}
	c.cmu.Unlock()
}

// flushPiped writes the requests held on every connection, those of one
// connection in one system call (more when its socket's buffer fills:
// the rest goes when the loop sees it drain), and ends the current row:
// the next send takes the next connection with room. A connection whose
// server closed it while it sat idle is opened again for them first.
func (p *h1Pool) flushPiped() {
	p.fmu.Lock()
	defer p.fmu.Unlock()
	p.mu.Lock()
	p.cur = nil
	p.mu.Unlock()
	// Failures while writing hand their slots to waiting sends, which
	// are held again: a few rounds take them too.
	for round := 0; round < 4 && p.ndirty.Load() > 0; round++ {
		p.dmu.Lock()
		list := p.dirty
		p.dirty, p.flushing = p.flushing[:0], list
		p.ndirty.Store(0)
		p.dmu.Unlock()
		now := time.Now()
		for i, c := range list {
			list[i] = nil
			c.cmu.Lock()
			c.dirty = false
			switch {
			case c.fd < 0: // the dial opening it writes them
				c.cmu.Unlock()
			case c.head == c.unsent && now.Sub(c.used) > idleCheck && peerClosedFD(c.fd):
				p.dropPiped(c, errConnClosed, true) // nothing written: all go on a new connection
			default:
				if err := p.writeHeld(c, now); err != nil {
					p.dropPiped(c, err, true)
					continue
				}
				c.cmu.Unlock()
			}
		}
	}
}

// writeHeld releases c's held requests for writing, each written now (its
// timeout runs from here), and writes what the socket takes. c.cmu is held.
func (p *h1Pool) writeHeld(c *h1Conn, now time.Time) error {
	for i := c.unsent; i < len(c.calls); i++ {
		k := &c.calls[i]
		k.written, k.expires = now, now.Add(p.timeout)
		if dl, ok := k.job.ctx.Deadline(); ok && dl.Before(k.expires) {
			k.expires = dl
		}
	}
	c.unsent, c.wlim = len(c.calls), len(c.buf)
	return c.writeOut()
}

// writeOut writes c's released bytes until they are out or the socket's
// buffer is full. c.cmu is held.
func (c *h1Conn) writeOut() error {
	for c.sent < c.wlim {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&c.buf[c.sent])), uintptr(c.wlim-c.sent))
		switch e {
		case 0:
			c.sent += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return nil
		default:
			return os.NewSyscallError("write", e)
		}
	}
	switch {
	case c.sent == len(c.buf):
		c.buf, c.sent, c.wlim = c.buf[:0], 0, 0
		if cap(c.buf) > 1<<20 {
			c.buf = nil
		}
	case c.sent > 64<<10: // requests held after a long write: keep the buffer small
		n := copy(c.buf, c.buf[c.sent:])
		c.buf, c.wlim, c.sent = c.buf[:n], c.wlim-c.sent, 0
	}
	return nil
}

// redial opens c again for its held requests and writes them; a dial that
// fails fails them.
func (p *h1Pool) redial(c *h1Conn) {
	netc, err := p.dialNet(context.Background(), time.Now().Add(p.timeout))
	if err == nil {
		err = p.attach(c, netc, true)
	}
	c.cmu.Lock()
	c.dialing = false
	if err == nil {
		c.rp.reset()
		err = p.writeHeld(c, time.Now())
	}
	if err != nil {
		p.dropPiped(c, err, false)
		p.flushPiped() // the sends the failures let in
		return
	}
	c.cmu.Unlock()
}

// dropPiped closes c and fails the requests written on it with err (a
// cancelled one as cancelled); the held ones are failed too unless keep,
// and otherwise go out on a new connection, opened now. c.cmu is held and
// released.
func (p *h1Pool) dropPiped(c *h1Conn, err error, keep bool) {
	c.closeFD()
	c.rp.reset()
	end := len(c.calls)
	if keep {
		end = c.unsent
	}
	var failed []h1Call
	if end > c.head {
		failed = append(failed, c.calls[c.head:end]...)
	}
	n := copy(c.calls, c.calls[end:])
	clear(c.calls[n:])
	c.calls, c.head, c.unsent = c.calls[:n], 0, 0
	if n > 0 {
		m := copy(c.buf, c.buf[c.wlim:])
		c.buf = c.buf[:m]
	} else {
		c.buf = c.buf[:0]
	}
	c.sent, c.wlim = 0, 0
	if n > 0 && !c.dialing {
		c.dialing = true
		go p.redial(c)
	}
	c.cmu.Unlock()
	for _, k := range failed {
		k.job.done(k.started, unanswered(k.job.ctx, k.written, err))
		p.releasePiped(c, true)
	}
}

// releasePiped counts one of c's requests as ended (ended false: c was
// just put to use, its slots are new) and hands the free slots to the
// sends waiting longest; those held are written by the next flush.
func (p *h1Pool) releasePiped(c *h1Conn, ended bool) {
	p.mu.Lock()
	if ended {
		c.load--
		p.room++
	}
	for p.room > 0 && !p.shut {
		j, ok := p.nextWaiting()
		if !ok {
			break
		}
		if cerr := j.ctx.Err(); cerr != nil || time.Since(j.at) > p.timeout {
			p.mu.Unlock()
			if cerr != nil {
				j.done(j.at, cancelled(j.ctx))
			} else {
				j.done(j.at, classifyErr(errPipelineFull))
			}
			p.mu.Lock()
			continue
		}
		to := p.roomy()
		to.load++
		p.room--
		p.mu.Unlock()
		p.assign(to, j)
		p.mu.Lock()
	}
	p.mu.Unlock()
}

// admitPiped puts c, just opened by start (or the background opener), to
// use, first for the sends waiting.
func (p *h1Pool) admitPiped(c *h1Conn) {
	p.mu.Lock()
	if !c.admitted {
		c.admitted = true
		p.room += p.depth - c.load
	}
	p.mu.Unlock()
	p.releasePiped(c, false)
	if p.ndirty.Load() > 0 {
		p.flushPiped()
	}
}

// handlePiped reads what came on pipelined c, answering its written
// requests in order, and writes the rest of those released when the
// socket takes them.
func (l *evloop) handlePiped(c *h1Conn, events uint32, now time.Time) {
	p := l.p
	c.cmu.Lock()
	if c.fd < 0 {
		c.cmu.Unlock()
		return
	}
	if c.sent < c.wlim {
		if err := c.writeOut(); err != nil {
			p.dropPiped(c, err, true)
			return
		}
	}
	hup := events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0
	if events&syscall.EPOLLIN == 0 && !hup {
		c.cmu.Unlock()
		return
	}
	for {
		n, rx, ok, err := l.recv(c)
		if !ok {
			return
		}
		if err != nil {
			if c.head < c.unsent {
				done, perr := c.rp.end(err)
				if done { // a body that ran until the close
					l.answered(c, now, rx)
				} else {
					err = perr
				}
			}
			if err == io.EOF {
				err = errConnClosed
			}
			p.dropPiped(c, err, true)
			return
		}
		for b := l.buf[:n]; len(b) > 0; {
			if c.head == c.unsent { // bytes no written request waits for
				p.dropPiped(c, errUnasked, true)
				return
			}
			used, done, perr := c.rp.feed(b)
			if perr != nil {
				p.dropPiped(c, perr, true)
				return
			}
			if b = b[used:]; !done {
				break
			}
			l.answered(c, now, rx)
			if c.rp.closeAfter {
				p.dropPiped(c, errConnClosed, true)
				return
			}
			c.rp.reset()
		}
		if n < len(l.buf) && !hup {
			c.cmu.Unlock() // all there was: the rest comes with another event
			return
		}
	}
}

// answered ends c's oldest request with the answer just parsed; its
// outcome waits in l.done. c.cmu is held.
func (l *evloop) answered(c *h1Conn, now time.Time, rx int64) {
	k := c.calls[c.head]
	c.calls[c.head] = h1Call{}
	c.head++
	at := sendTimes{written: k.written}
	if rx != 0 {
		at.answered = rxstamp.Arrived(rx, now)
	}
	l.done = append(l.done, finished{c: c, j: k.job, started: k.started, out: outcome(c.rp.status, at, nil)})
	c.used = now
	switch {
	case c.head == len(c.calls):
		c.calls, c.head, c.unsent = c.calls[:0], 0, 0
	case c.head > l.p.depth: // keep the list's array bounded
		n := copy(c.calls, c.calls[c.head:])
		clear(c.calls[n:])
		c.calls, c.unsent, c.head = c.calls[:n], c.unsent-c.head, 0
	}
}

// expirePiped closes each of l's connections whose oldest written request
// waited longer than its deadline or was cancelled, failing every request
// written on it (those held go on a new connection).
func (l *evloop) expirePiped(now time.Time) {
	for _, c := range l.conns {
		c.cmu.Lock()
		if c.fd < 0 || c.head == c.unsent {
			c.cmu.Unlock()
			continue
		}
		if k := &c.calls[c.head]; k.job.ctx.Err() == nil && !now.After(k.expires) {
			c.cmu.Unlock()
			continue
		}
		l.p.dropPiped(c, noAnswer(l.p.timeout), true)
	}
}
