// Package netclass turns the failures of a network send into
// pipebench.Outcomes the same way for every driver: connection refused (or
// a Unix socket that is not there) is refused and unreached; an unreachable address, a failed name lookup, a
// failed TLS handshake or a peer speaking another protocol is an error and
// unreached; a peer that accepted the connection and did not answer in time
// is a timeout (reached). It also dials connections so that a TLS handshake
// failure can be told from a TCP one.
package netclass

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/pipebench/pipebench"
)

// The short Details of unreached outcomes.
const (
	DetailRefused     = "connection refused"
	DetailNoSocket    = "no socket"
	DetailUnreachable = "unreachable"
	DetailDNS         = "dns"
	DetailTLS         = "tls handshake"
	DetailMismatch    = "protocol mismatch"
	DetailFiles       = "too many open files"
)

// ErrProtocolMismatch marks an answer in another protocol than the one
// spoken (a TLS record to a plain HTTP request, an HTTP/1.1 answer to
// HTTP/2). Drivers wrap it with what they saw.
var ErrProtocolMismatch = errors.New("protocol mismatch")

// HandshakeError is a TLS handshake that failed after the TCP connection
// was opened.
type HandshakeError struct {
	Addr string
	Err  error
}

// Error names the address and the cause.
func (e *HandshakeError) Error() string { return "tls handshake with " + e.Addr + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *HandshakeError) Unwrap() error { return e.Err }

// Dial opens a TCP connection to addr (host:port), or a Unix socket's
// (unix:/path or unix:///path), and, when tlsCfg is not nil, does the TLS
// handshake, all within timeout (and ctx). A handshake failure is
// returned as a *HandshakeError.
func Dial(ctx context.Context, addr string, tlsCfg *tls.Config, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	network, where := "tcp", addr
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, where = "unix", "/"+strings.TrimLeft(p, "/")
	}
	c, err := d.DialContext(ctx, network, where)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil {
		return c, nil
	}
	tc := tls.Client(c, tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, &HandshakeError{Addr: addr, Err: err}
	}
	return tc, nil
}

// Classify maps a transport error to an outcome with a short Detail and the
// full text in Message. It never returns ClassOK.
func Classify(err error) pipebench.Outcome {
	if err == nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "unknown"}
	}
	msg := err.Error()
	o := pipebench.Outcome{Class: pipebench.ClassError, Message: msg}
	unreached := func(c pipebench.Class, d string) pipebench.Outcome {
		o.Class, o.Detail, o.Unreached = c, d, true
		return MarkUnsent(o)
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var hsErr *HandshakeError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused"):
		return unreached(pipebench.ClassRefused, DetailRefused)
	case errors.As(err, &opErr) && opErr.Op == "dial" && errors.Is(err, syscall.ENOENT):
		// A Unix socket's file is not there: nothing listens.
		return unreached(pipebench.ClassRefused, DetailNoSocket)
	case errors.As(err, &dnsErr) || strings.Contains(msg, "no such host"):
		return unreached(pipebench.ClassError, DetailDNS)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EADDRNOTAVAIL),
		errors.Is(err, syscall.ENETDOWN), errors.Is(err, syscall.EHOSTDOWN),
		strings.Contains(msg, "no route to host"), strings.Contains(msg, "network is unreachable"):
		return unreached(pipebench.ClassError, DetailUnreachable)
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return unreached(pipebench.ClassError, DetailFiles)
	case errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Timeout():
		// Nothing accepted the connection in time: no host answers there.
		return unreached(pipebench.ClassError, DetailUnreachable)
	case isTimeout(err):
		o.Class, o.Detail = pipebench.ClassTimeout, "timeout"
		return o
	case errors.Is(err, ErrProtocolMismatch) || IsMismatchText(msg):
		return unreached(pipebench.ClassError, DetailMismatch)
	case errors.As(err, &hsErr) || isTLS(err):
		return unreached(pipebench.ClassError, DetailTLS)
	case errors.Is(err, syscall.ECONNRESET):
		o.Detail = "connection reset"
	case errors.Is(err, syscall.EPIPE):
		o.Detail = "broken pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		o.Detail = "eof"
	case errors.Is(err, context.Canceled):
		o.Detail = "cancelled"
	default:
		o.Detail = "transport"
	}
	return o
}

// MarkUnsent sets an unreached outcome's Unsent by its Detail: a connect
// refused, to a socket that is not there, or not accepted in time never
// sent the request, and the system under test kept it (OwnerSystem);
// pipebench's own file limit kept it too (OwnerPipebench). A failed name
// lookup, TLS handshake or a peer of another protocol stay sent: the
// scenario aims at the wrong thing, which the run's validity names when
// nothing else reached it.
func MarkUnsent(o pipebench.Outcome) pipebench.Outcome {
	switch o.Detail {
	case DetailRefused, DetailNoSocket, DetailUnreachable:
		o.Unsent = pipebench.OwnerSystem
	case DetailFiles:
		o.Unsent = pipebench.OwnerPipebench
	}
	return o
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

func isTLS(err error) bool {
	var rh tls.RecordHeaderError
	var alert tls.AlertError
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &rh) || errors.As(err, &alert) || errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &host) || errors.As(err, &invalid) || strings.Contains(err.Error(), "tls: ")
}

// IsMismatchText reports whether an error text is what HTTP/2 and gRPC
// clients say when the peer speaks HTTP/1.1 (or something else).
func IsMismatchText(msg string) bool {
	for _, s := range []string{"error reading server preface", "frame too large", "server preface",
		"malformed HTTP response", "malformed status line", "HTTP/1.x transport connection broken", "bogus greeting",
		"client conn could not be established"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// PlainToTLS reports whether an HTTP answer is a TLS server's complaint
// about a plain-text request (Go's net/http and nginx answer 400 with such
// a body), which means the target wants https://.
func PlainToTLS(status int, body []byte) bool {
	return status == 400 && (bytes.Contains(body, []byte("HTTP request to an HTTPS server")) ||
		bytes.Contains(body, []byte("plain HTTP request was sent to HTTPS port")))
}

// LooksLikeTLS reports whether bytes read where an HTTP status line was
// expected are a TLS record (an alert or a handshake).
func LooksLikeTLS(b []byte) bool {
	return len(b) >= 3 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03
}

// StartError is a driver's Start failure as the runner and the user get it:
// "<what> (<detail>): <err>; <hint>", marked pipebench.Unreached when the
// failure says the target was not reached (the run is then invalid).
func StartError(what string, err error, hint string) error {
	o := Classify(err)
	e := fmt.Errorf("%s (%s): %w; %s", what, o.Detail, err, hint)
	if o.Unreached {
		return pipebench.Unreached(e)
	}
	return e
}
