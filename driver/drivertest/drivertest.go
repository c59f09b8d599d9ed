// Package drivertest is the conformance suite every driver runs against a
// real receiver of its protocol on loopback.
package drivertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Answer is how a receiver should answer the next requests.
type Answer int

// The answers a Receiver must be able to give.
const (
	AnswerOK      Answer = iota // accept
	AnswerRefused               // backpressure: HTTP 503, gRPC UNAVAILABLE
	AnswerError                 // a non-retryable failure: HTTP 400, gRPC INVALID_ARGUMENT
	AnswerSlow                  // answer after longer than the driver's timeout
)

// Receiver is a live server of the driver's protocol on loopback.
type Receiver struct {
	Target   string        // what the driver is aimed at
	Received func() int64  // items received and accepted so far
	Set      func(Answer)  // how to answer from now on
	Close    func()        // stop the server (later sends must fail cleanly)
	Slow     time.Duration // how long AnswerSlow waits
}

// Harness is what a driver's test gives the suite.
type Harness struct {
	// New builds the driver aimed at target, with a timeout shorter than
	// the receiver's Slow.
	New func(t *testing.T, target string) pipebench.Driver
	// Receiver starts a fresh receiver.
	Receiver func(t *testing.T) Receiver
	// Generator builds the batches to send.
	Generator pipebench.Generator
	// Count is the items per batch (default 1).
	Count int
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.Count < 1 {
		h.Count = 1
	}
	send := func(d pipebench.Driver, seq uint64) pipebench.Outcome {
		b := h.Generator.Next(seq, h.Count, time.Now())
		return d.Send(context.Background(), &b)
	}
	t.Run("lifecycle and counts", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			if o := send(d, uint64(1+i*h.Count)); o.Class != pipebench.ClassOK {
				t.Fatalf("send %d: %+v", i, o)
			}
		}
		if got := r.Received(); got != int64(50*h.Count) {
			t.Errorf("receiver got %d items, want %d", got, 50*h.Count)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Run("refused is backpressure", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Set(AnswerRefused)
		if o := send(d, 1); o.Class != pipebench.ClassRefused {
			t.Errorf("refused answer classified %+v", o)
		}
		r.Set(AnswerError)
		if o := send(d, 2); o.Class != pipebench.ClassError {
			t.Errorf("error answer classified %+v", o)
		}
	})
	t.Run("slow answer is a timeout", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Set(AnswerSlow)
		start := time.Now()
		if o := send(d, 1); o.Class != pipebench.ClassTimeout {
			t.Errorf("slow answer classified %+v", o)
		}
		if el := time.Since(start); el >= r.Slow {
			t.Errorf("the timeout took %v, as long as the receiver's delay", el)
		}
	})
	t.Run("receiver gone is an error, not a panic", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Close()
		if o := send(d, 1); o.Class == pipebench.ClassOK {
			t.Errorf("send to a closed receiver classified ok")
		}
	})
	t.Run("cancelled context does not hang", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		r.Set(AnswerSlow)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		b := h.Generator.Next(1, h.Count, time.Now())
		done := make(chan pipebench.Outcome, 1)
		go func() { done <- d.Send(ctx, &b) }()
		select {
		case o := <-done:
			if o.Class == pipebench.ClassOK {
				t.Errorf("cancelled send classified ok")
			}
		case <-time.After(r.Slow + 5*time.Second):
			t.Fatal("send with a cancelled context hung")
		}
	})
	t.Run("concurrent sends", func(t *testing.T) {
		r := h.Receiver(t)
		d := h.New(t, r.Target)
		d.Start(context.Background())
		defer d.Shutdown(context.Background())
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					if o := send(d, uint64((g*20+i)*h.Count+1)); o.Class != pipebench.ClassOK {
						t.Errorf("concurrent send: %+v", o)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		if got := r.Received(); got != int64(640*h.Count) {
			t.Errorf("receiver got %d, want %d", got, 640*h.Count)
		}
	})
}
