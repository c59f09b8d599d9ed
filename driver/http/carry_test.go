package httpdriver

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
)

// waitingSends counts the sends waiting for a window slot (pipelined).
func waitingSends(d *Driver) int {
	if d.pipe != nil {
		return int(d.pipe.nwaiting.Load())
	}
	d.h1.mu.Lock()
	defer d.h1.mu.Unlock()
	return len(d.h1.waiting) - d.h1.waitHead
}

// asyncOutcomes hands n sends of "{}" to d.sendAsync (the factory's
// SendAsync) one after the other, as the open-model runner does, and
// returns their outcomes by send, each checked to come exactly once,
// within bound.
func asyncOutcomes(t *testing.T, d *Driver, n int, bound time.Duration) []pipebench.Outcome {
	t.Helper()
	batches := make([]pipebench.Batch, n)
	for i := range batches {
		batches[i] = pipebench.Batch{Body: []byte("{}"), Count: 1}
	}
	return batchOutcomes(t, d, batches, bound)
}

// batchOutcomes is asyncOutcomes for the given batches.
func batchOutcomes(t *testing.T, d *Driver, batches []pipebench.Batch, bound time.Duration) []pipebench.Outcome {
	t.Helper()
	outs, _ := rowOutcomes(t, d, batches, bound)
	return outs
}

// rowOutcomes is batchOutcomes that also says how long handing the
// batches over took, from the first send to the Flush.
func rowOutcomes(t *testing.T, d *Driver, batches []pipebench.Batch, bound time.Duration) ([]pipebench.Outcome, time.Duration) {
	t.Helper()
	n := len(batches)
	outs := make([]pipebench.Outcome, n)
	calls := make([]int, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(n)
	start := time.Now()
	for i := range n {
		d.sendAsync(context.Background(), &batches[i], func(_ time.Time, o pipebench.Outcome) {
			mu.Lock()
			outs[i] = o
			calls[i]++
			mu.Unlock()
			wg.Done()
		})
	}
	handed := time.Since(start)
	asyncDriver{d}.Flush() // the end of the row, as the runner's pacer
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(bound):
		t.Fatalf("not every send was answered within %v", bound)
	}
	for i, c := range calls {
		if c != 1 {
			t.Errorf("send %d was answered %d times", i, c)
		}
	}
	return outs, handed
}

// More sends than connections: the sends no connection is free for wait
// (their wait shows in Written) and go out as connections free up.
func TestCarriersQueueSendsBeyondTheConnections(t *testing.T) {
	cc := newConnCounter(t)
	c := defaultConfig()
	c.Connections = 2
	d := started(t, c, "http://"+cc.addr+"/in")
	before := time.Now()
	for i, o := range asyncOutcomes(t, d, 60, 10*time.Second) {
		if o.Class != pipebench.ClassOK || o.Written.Before(before) {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	if n := cc.distinct(); n != 2 {
		t.Errorf("the sends went over %d connections, want 2", n)
	}
}

// A send that waits for a connection longer than the timeout fails as "no
// free connection", without being written (three sends: see waitedTooLong).
func TestCarriersNoFreeConnection(t *testing.T) {
	addr := drivertest.SilentServer(t) // accepts and never answers
	c := defaultConfig()
	c.Connections, c.Timeout = 1, pipebench.Duration(200*time.Millisecond)
	d := started(t, c, "http://"+addr+"/in")
	outs := asyncOutcomes(t, d, 3, 10*time.Second)
	if o := outs[0]; o.Class != pipebench.ClassTimeout || o.Written.IsZero() {
		t.Errorf("the send that was written: %+v, want a timeout", o)
	}
	waitedTooLong(t, outs[1:], "no free connection")
}

// waitedTooLong checks the outcomes of sends queued behind one that holds
// the only way out (a connection, a window slot) until it times out: each
// timed out, at least one without being written, as detail, and none
// failed as detail was written. The send right behind the first may win
// the way out by microseconds when it frees, one timeout after the first
// was written, or lose it; the one after it waited longer than the timeout
// either way.
func waitedTooLong(t *testing.T, outs []pipebench.Outcome, detail string) {
	t.Helper()
	n := 0
	for i, o := range outs {
		switch {
		case o.Class != pipebench.ClassTimeout:
			t.Errorf("waiting send %d: %+v, want a timeout", i+1, o)
		case o.Detail == detail:
			n++
			if !o.Written.IsZero() {
				t.Errorf("waiting send %d failed as %s but was written: %+v", i+1, detail, o)
			}
		case o.Written.IsZero():
			t.Errorf("waiting send %d: %+v, want %s or written", i+1, o, detail)
		}
	}
	if n == 0 {
		t.Errorf("no waiting send failed as %s: %+v", detail, outs)
	}
}

// Pipelined, sends handed over one after the other (a row, then Flush)
// share a connection (one write, one read), instead of one connection
// each: on the event loops exactly one, and the next row takes the next
// connection; with the pipelined client's writers, those the writer had
// not taken yet. A row whose handing over took flushEvery or longer (the
// test descheduled on a loaded machine) may be written in parts, as a
// pacer that fell behind is: it must still share.
func TestPipelinedSendAsyncBurstSharesAConnection(t *testing.T) {
	cc := newConnCounter(t)
	d := started(t, pipelinedConfig(16, 32, 5*time.Second), "http://"+cc.addr+"/in")
	// One P: the writers run only once this goroutine waits.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	row := make([]pipebench.Batch, 16)
	for i := range row {
		row[i] = pipebench.Batch{Body: []byte("{}"), Count: 1}
	}
	before := 0
	for r := 1; r <= 2; r++ {
		outs, handed := rowOutcomes(t, d, row, 10*time.Second)
		for i, o := range outs {
			if o.Class != pipebench.ClassOK || o.Written.IsZero() {
				t.Fatalf("row %d, send %d: %+v", r, i, o)
			}
		}
		n := cc.distinct() - before
		before += n
		switch {
		case canPipeline(nil) && handed < flushEvery && n != 1:
			t.Errorf("row %d of 16 sends, handed over in %v, went over %d new connections, want one", r, handed, n)
		case n >= 16:
			t.Errorf("row %d of 16 sends went over %d new connections, want them to share", r, n)
		case canPipeline(nil) && n != 1:
			t.Logf("row %d: handed over in %v (a pacer behind), written over %d connections", r, handed, n)
		}
	}
}

// The factory's driver is an AsyncSender where sends are handed over
// without a goroutine each (HTTP/1.1 on plain TCP on Linux, pipelined), and
// not over HTTP/2, where the runner's goroutine per send makes its batch in
// parallel.
func TestFactoryAsyncWhereItPays(t *testing.T) {
	for _, tc := range []struct {
		yaml  func(c *Config)
		async bool
	}{
		{func(c *Config) {}, canLoop},
		{func(c *Config) { c.Pipeline = 8 }, true},
		{func(c *Config) { c.HTTP2 = true }, false},
	} {
		c := defaultConfig()
		c.URL = "http://127.0.0.1:1/"
		tc.yaml(c)
		d, err := Factory().New(c, pipebench.Env{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.(pipebench.AsyncSender); ok != tc.async {
			t.Errorf("%+v: AsyncSender %v, want %v", c, ok, tc.async)
		}
		if _, ok := d.(pipebench.ConnectionReporter); !ok {
			t.Errorf("%+v: not a ConnectionReporter", c)
		}
	}
}

// Pipelined, sends beyond the window (connections x pipeline) wait in a
// queue the readers serve as answers come back; each is answered once.
func TestPipelinedSendAsyncBeyondTheWindow(t *testing.T) {
	cc := newConnCounter(t)
	d := started(t, pipelinedConfig(1, 2, 5*time.Second), "http://"+cc.addr+"/in")
	before := time.Now()
	for i, o := range asyncOutcomes(t, d, 50, 10*time.Second) {
		if o.Class != pipebench.ClassOK || o.Written.Before(before) {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	if n := waitingSends(d); n != 0 {
		t.Errorf("%d sends still wait", n)
	}
}

// Pipelined, a send that waited for a window slot longer than the timeout
// fails as the pipeline being full, never written (three sends: see
// waitedTooLong).
func TestPipelinedSendAsyncWindowFull(t *testing.T) {
	addr := drivertest.SilentServer(t) // accepts and never answers
	d := started(t, pipelinedConfig(1, 1, 200*time.Millisecond), "http://"+addr+"/in")
	outs := asyncOutcomes(t, d, 3, 10*time.Second)
	if o := outs[0]; o.Class != pipebench.ClassTimeout || o.Written.IsZero() {
		t.Errorf("the send on the wire: %+v, want a timeout", o)
	}
	waitedTooLong(t, outs[1:], "pipeline full")
}
