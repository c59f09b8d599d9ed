package httpdriver

import (
	"context"
	"time"

	"github.com/pipebench/pipebench"
)

// h1Job is one send handed to a pool with event loops (loop_linux.go).
type h1Job struct {
	ctx     context.Context
	b       *pipebench.Batch
	at      time.Time // when it was queued (zero: a connection was free): its wait for a connection runs from here
	done    func(time.Time, pipebench.Outcome)
	retried bool // sent again once already, after the connection failed before any answer
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

// unanswered is the outcome of a request written at written that ends
// with no answer: cancelled, or past its send's own deadline, when ctx
// says so, else failed with err.
func unanswered(ctx context.Context, written time.Time, err error) pipebench.Outcome {
	switch cerr := ctx.Err(); {
	case cerr == context.Canceled:
		out := cancelled(ctx)
		out.Written = written
		return out
	case cerr != nil: // the send's own deadline
		err = cerr
	}
	return outcome(0, sendTimes{written: written}, err)
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
