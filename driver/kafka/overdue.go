package kafkadriver

import (
	"fmt"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// overdue ends the sends the brokers leave unanswered past the delivery
// timeout. franz-go fails a record at its delivery timeout only while it
// waits in the producer's buffer: an idempotent producer cannot fail one
// already sent in a request that got no answer (a broker frozen in a GC
// pause, on a hung disk, or stopped), since failing it could leave a gap
// in its sequence numbers, so it keeps retrying, and without this the
// send would never end. Each send is linked here in the order it was
// made (sends share one timeout, so the oldest are first); every 200 ms
// the sends past their deadline are ended as timeouts. The records stay
// with their producer (they may still be written once the broker wakes,
// and count as delivered if a sink sees them) and fill its buffer, so
// that later sends are refused as "buffer full" rather than piled up.
type overdue struct {
	after      time.Duration // the delivery timeout and a second of grace
	mu         sync.Mutex
	head, tail *send
	stop       chan struct{}
	stopped    chan struct{}
}

func newOverdue(timeout time.Duration) *overdue {
	return &overdue{after: timeout + time.Second}
}

// start runs the sweep until close.
func (w *overdue) start() {
	w.stop, w.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.stopped)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case now := <-t.C:
				w.expire(now)
			}
		}
	}()
}

func (w *overdue) close() {
	if w.stop != nil {
		close(w.stop)
		<-w.stopped
		w.stop = nil
	}
}

// add links s, made at s.started, at the tail.
func (w *overdue) add(s *send) {
	w.mu.Lock()
	s.deadline, s.reported, s.linked = s.started.Add(w.after), false, true
	s.prev, s.next = w.tail, nil
	if w.tail != nil {
		w.tail.next = s
	} else {
		w.head = s
	}
	w.tail = s
	w.mu.Unlock()
}

// settle unlinks s, whose records all have their outcome, and reports
// whether its outcome is still to be given (false when expire gave it).
func (w *overdue) settle(s *send) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.linked {
		w.unlink(s)
	}
	report := !s.reported
	s.reported = true
	return report
}

func (w *overdue) unlink(s *send) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		w.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		w.tail = s.prev
	}
	s.prev, s.next, s.linked = nil, nil, false
}

// expire ends every send past its deadline at now as a timeout.
func (w *overdue) expire(now time.Time) {
	type ended struct {
		started time.Time
		done    func(time.Time, pipebench.Outcome)
	}
	var due []ended
	w.mu.Lock()
	for s := w.head; s != nil && now.After(s.deadline); s = w.head {
		w.unlink(s)
		s.reported = true
		due = append(due, ended{s.started, s.done})
	}
	w.mu.Unlock()
	if len(due) == 0 {
		return
	}
	o := pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "delivery timeout",
		Message: fmt.Sprintf("no answer from the brokers within the delivery timeout and a second (%s): the records stay with the producer, in a request the broker has not answered", pipebench.FormatDuration(w.after))}
	for _, e := range due {
		e.done(e.started, o)
	}
}
