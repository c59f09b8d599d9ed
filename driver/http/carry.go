package httpdriver

import (
	"context"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// Carriers: on a plain TCP connection on Linux (where the request is written
// by the read that waits for its answer, exchange), each connection of the
// pool has a goroutine of its own, its carrier, started by the first request
// it carries and kept until the pool closes. A send is handed to the carrier
// of the connection idle longest, or, when every connection is busy, queued
// (first in, first out) for the first carrier that finishes. Nothing else
// runs per request: no goroutine, no timer, no channel but the hand-off to
// an idle carrier. Send (a closed loop's) carries its request itself when a
// connection is idle. The open-model runner hands over every send due at one
// wake-up of its pacer in a row (SendAsync), so their requests go out back
// to back, as an event loop would write them.

// h1Job is one send handed to a carrier.
type h1Job struct {
	ctx  context.Context
	b    *pipebench.Batch
	at   time.Time // when it was queued (zero: handed to an idle carrier): its wait for a connection runs from here
	done func(time.Time, pipebench.Outcome)
}

// sendAsync hands b to the carrier of an idle connection, or queues it.
func (p *h1Pool) sendAsync(ctx context.Context, b *pipebench.Batch, done func(time.Time, pipebench.Outcome)) {
	j := h1Job{ctx: ctx, b: b, done: done}
	p.mu.Lock()
	if p.freeN == 0 {
		j.at = time.Now()
		if p.waitHead > 256 && p.waitHead > len(p.waiting)/2 { // keep the queue's memory bounded
			n := copy(p.waiting, p.waiting[p.waitHead:])
			clear(p.waiting[n:])
			p.waiting, p.waitHead = p.waiting[:n], 0
		}
		p.waiting = append(p.waiting, j)
		p.mu.Unlock()
		return
	}
	p.handOff(p.popFree(), j) // unlocks
}

// send is Send with carriers. On an idle connection the caller's goroutine
// carries the request itself (a closed loop needs no hand-off); with none
// idle it queues as sendAsync does, and waits.
func (p *h1Pool) send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	p.mu.Lock()
	if p.freeN == 0 {
		p.mu.Unlock()
		ch := outcomeChans.Get().(chan pipebench.Outcome)
		p.sendAsync(ctx, b, func(_ time.Time, o pipebench.Outcome) { ch <- o })
		out := <-ch
		outcomeChans.Put(ch)
		return out
	}
	c := p.popFree()
	p.mu.Unlock()
	out := outcome(p.roundTrip(ctx, c, time.Now(), b.ContentType, b.Headers, b.Body))
	p.mu.Lock()
	if j, ok := p.nextWaiting(); ok {
		p.handOff(c, j) // unlocks
	} else {
		p.pushFree(c)
		p.mu.Unlock()
	}
	return out
}

var outcomeChans = sync.Pool{New: func() any { return make(chan pipebench.Outcome, 1) }}

// handOff gives j to the carrier of c, an idle connection taken from the
// ring, starting the carrier if it has none yet. p.mu is held; handOff
// unlocks it.
func (p *h1Pool) handOff(c *h1Conn, j h1Job) {
	start := !c.carrying
	c.carrying = true
	p.mu.Unlock()
	if start {
		go p.carry(c, j)
		return
	}
	c.work <- j // the carrier waits for it: never blocks
}

// popFree takes the connection idle longest; pushFree puts one back. p.mu
// is held.
func (p *h1Pool) popFree() *h1Conn {
	c := p.free[p.freeHead]
	p.free[p.freeHead] = nil
	p.freeHead = (p.freeHead + 1) % len(p.free)
	p.freeN--
	return c
}

func (p *h1Pool) pushFree(c *h1Conn) {
	p.free[(p.freeHead+p.freeN)%len(p.free)] = c
	p.freeN++
}

// nextWaiting takes the send queued longest, if any. p.mu is held.
func (p *h1Pool) nextWaiting() (h1Job, bool) {
	if p.waitHead == len(p.waiting) {
		return h1Job{}, false
	}
	j := p.waiting[p.waitHead]
	p.waiting[p.waitHead] = h1Job{}
	if p.waitHead++; p.waitHead == len(p.waiting) {
		p.waiting, p.waitHead = p.waiting[:0], 0
	}
	return j, true
}

// carry runs the requests handed to c, then those queued, until the pool
// closes.
func (p *h1Pool) carry(c *h1Conn, j h1Job) {
	for {
		p.carryOne(c, j)
		p.mu.Lock()
		var ok bool
		if j, ok = p.nextWaiting(); ok {
			p.mu.Unlock()
			continue
		}
		p.pushFree(c)
		p.mu.Unlock()
		if j, ok = <-c.work; !ok {
			return
		}
	}
}

// carryOne sends one request on c and reports its outcome. A send handed
// to an idle carrier starts when the carrier takes it up (until then the
// generator's goroutines had the processor); a queued one when it was
// queued.
func (p *h1Pool) carryOne(c *h1Conn, j h1Job) {
	now := time.Now()
	started := j.at
	if started.IsZero() {
		started = now
	}
	if j.ctx.Err() != nil {
		j.done(started, cancelled(j.ctx))
		return
	}
	if !j.at.IsZero() && now.Sub(j.at) > p.timeout {
		j.done(started, classifyErr(errNoConn))
		return
	}
	j.done(started, outcome(p.roundTrip(j.ctx, c, now, j.b.ContentType, j.b.Headers, j.b.Body)))
}

// outcome classifies what a request came to.
func outcome(status int, at sendTimes, err error) pipebench.Outcome {
	out := statuses.Classify(status)
	if err != nil {
		out = classifyErr(err)
	}
	out.Written, out.Answered = at.written, at.answered
	return out
}
