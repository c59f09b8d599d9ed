// Package grpcconns is what the drivers that speak gRPC (otlp over gRPC,
// grpc) share: opening their client connections by connopen's rule (what
// the target takes now, the rest in the background, unreached only when
// none became ready), counting the ready ones, and classifying a call's
// failure.
package grpcconns

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/connopen"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// Params configure Start.
type Params struct {
	// Timeout bounds one connection's try to become ready.
	Timeout time.Duration
	// Addr is where the connections go (host:port, or unix:/path), and
	// TLS what they speak there (nil: plain): Start opens a connection of
	// its own to tell why none became ready.
	Addr string
	TLS  *tls.Config
}

// errFailed is a connection that failed to become ready (the gRPC library
// does not say why; Start's own connection does).
var errFailed = errors.New("the gRPC connection failed")

// Start connects every connection: a try asks it to connect and waits
// until it is READY. What is not ready when Start's wait ends keeps trying
// in the background (connopen.Start; Close the Opener before closing the
// connections). When none became ready Start tells why with a connection
// of its own to Addr: its failure (refused, unreachable, no answer, a TLS
// handshake), or, when the target took it and a gRPC connection failed, a
// protocol mismatch (netclass.ErrProtocolMismatch: the target does not
// speak gRPC). When the target took it and every gRPC connection is still
// connecting, Start returns nil and the sends measure the rest.
func Start(ctx context.Context, conns []*grpc.ClientConn, p Params) (*connopen.Opener, error) {
	var failed atomic.Int64
	o, err := connopen.Start(ctx, connopen.Params{N: len(conns), Timeout: p.Timeout, Open: func(ctx context.Context, i int) error {
		cc := conns[i]
		cc.Connect()
		for {
			switch st := cc.GetState(); st {
			case connectivity.Ready:
				return nil
			case connectivity.TransientFailure, connectivity.Shutdown:
				failed.Add(1)
				return errFailed
			default:
				if !cc.WaitForStateChange(ctx, st) {
					return ctx.Err()
				}
			}
		}
	}})
	if err != nil || o.Opened() > 0 {
		return o, err
	}
	c, derr := netclass.Dial(ctx, p.Addr, p.TLS, p.Timeout)
	switch {
	case derr != nil:
		if netclass.Classify(derr).Unreached {
			o.Close()
			return o, derr
		}
	case failed.Load() > 0:
		c.Close()
		o.Close()
		return o, fmt.Errorf("%w: %s takes connections but none of %d gRPC connections to it became ready: it does not speak gRPC (HTTP/2)", netclass.ErrProtocolMismatch, p.Addr, len(conns))
	default:
		c.Close()
	}
	return o, nil
}

// Ready counts the connections READY now. Safe for concurrent use.
func Ready(conns []*grpc.ClientConn) int {
	n := 0
	for _, cc := range conns {
		if cc.GetState() == connectivity.Ready {
			n++
		}
	}
	return n
}

// Classify maps a gRPC call's error to an outcome, the same for every
// driver: UNAVAILABLE and RESOURCE_EXHAUSTED are refused (backpressure),
// DEADLINE_EXCEEDED a timeout, CANCELLED and any other code an error
// (Detail the code's name as gRPC writes it, INVALID_ARGUMENT); a call that
// never reached the target is unreached, with netclass' Details: refused,
// no socket, a failed name lookup, an unreachable address or a connect
// that timed out, too many open files, a peer that does not speak gRPC, a
// failed TLS handshake. A nil error is ok.
func Classify(err error) pipebench.Outcome {
	st, _ := status.FromError(err)
	if st.Code() == codes.OK {
		return pipebench.Outcome{}
	}
	msg := err.Error()
	o := pipebench.Outcome{Code: int(st.Code()), Detail: upperSnake(st.Code()), Message: msg}
	unreached := func(c pipebench.Class, detail string) pipebench.Outcome {
		o.Class, o.Detail, o.Unreached = c, detail, true
		return netclass.MarkUnsent(o)
	}
	busy := st.Code() == codes.Unavailable || st.Code() == codes.ResourceExhausted
	switch {
	case strings.Contains(msg, "connection refused"):
		return unreached(pipebench.ClassRefused, netclass.DetailRefused)
	case strings.Contains(msg, "no such file or directory"):
		return unreached(pipebench.ClassRefused, netclass.DetailNoSocket)
	case strings.Contains(msg, "no such host"), strings.Contains(msg, "produced zero addresses"), strings.Contains(msg, "name resolver error"):
		return unreached(pipebench.ClassError, netclass.DetailDNS)
	case strings.Contains(msg, "no route to host"), strings.Contains(msg, "network is unreachable"):
		return unreached(pipebench.ClassError, netclass.DetailUnreachable)
	case strings.Contains(msg, "too many open files"):
		return unreached(pipebench.ClassError, netclass.DetailFiles)
	case netclass.IsMismatchText(msg),
		!busy && (strings.Contains(msg, "unexpected HTTP status code") || strings.Contains(msg, "received unexpected content-type")):
		return unreached(pipebench.ClassError, netclass.DetailMismatch)
	case strings.Contains(msg, "authentication handshake failed"), strings.Contains(msg, "tls: "):
		return unreached(pipebench.ClassError, netclass.DetailTLS)
	case strings.Contains(msg, "Error while dialing"):
		// Any other failure to connect: nothing took the connection.
		return unreached(pipebench.ClassError, netclass.DetailUnreachable)
	}
	return withClass(o, st.Code())
}

// Status is the outcome of a call the server ended with code (not OK) and
// message msg, by Classify's rules for a server's codes: the server
// answered, so it is never unreached, whatever msg says.
func Status(code codes.Code, msg string) pipebench.Outcome {
	o := pipebench.Outcome{Code: int(code), Detail: upperSnake(code), Message: status.New(code, msg).String()}
	return withClass(o, code)
}

// withClass gives o the class of a server's code: UNAVAILABLE and
// RESOURCE_EXHAUSTED refused, DEADLINE_EXCEEDED a timeout, any other an
// error.
func withClass(o pipebench.Outcome, code codes.Code) pipebench.Outcome {
	switch code {
	case codes.Unavailable, codes.ResourceExhausted:
		o.Class = pipebench.ClassRefused
	case codes.DeadlineExceeded:
		o.Class, o.Detail = pipebench.ClassTimeout, "timeout"
	case codes.Canceled:
		o.Class, o.Detail = pipebench.ClassError, "cancelled"
	default:
		o.Class = pipebench.ClassError
	}
	return o
}

// upperSnake is a code's name as gRPC writes it: INVALID_ARGUMENT.
func upperSnake(c codes.Code) string {
	s := c.String()
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}
