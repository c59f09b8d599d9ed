//go:build !linux

package httpdriver

import (
	"context"
	"net"
	"time"

	"github.com/pipebench/pipebench"
)

// canLoop: elsewhere than Linux a send writes its request and reads its
// answer itself (h1Pool.do).
const canLoop = false

// evloop is Linux only.
type evloop struct{}

func (p *h1Pool) attach(*h1Conn, net.Conn, bool) error { panic("event loops are Linux only") }
func (p *h1Pool) admit(*h1Conn)                        { panic("event loops are Linux only") }
func (p *h1Pool) closeLoopConns()                      {}
func (c *h1Conn) openLoop() bool                       { return false }
func (p *h1Pool) flushPiped()                          {}

func (p *h1Pool) sendAsync(context.Context, *pipebench.Batch, func(time.Time, pipebench.Outcome), bool) {
	panic("event loops are Linux only")
}

func (p *h1Pool) send(context.Context, *pipebench.Batch) pipebench.Outcome {
	panic("event loops are Linux only")
}

// stampedReader is Linux only: newStampedReader returns nil elsewhere.
type stampedReader struct{ last time.Time }

func newStampedReader(net.Conn) *stampedReader { return nil }

func (*stampedReader) Read([]byte) (int, error) { panic("stampedReader is Linux only") }
