package netclass

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Real failures on loopback land in the right class, with Unreached set
// only when the target never answered.
func TestClassifyRealFailures(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, refused := Dial(ctx, closed, nil, time.Second)

	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plain.Close()
	_, handshake := Dial(ctx, plain.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true}, time.Second)

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	c, err := Dial(ctx, silent.Addr().String(), nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, timeout := c.Read(make([]byte, 1))

	for _, tc := range []struct {
		name      string
		err       error
		class     pipebench.Class
		detail    string
		unreached bool
	}{
		{"refused", refused, pipebench.ClassRefused, DetailRefused, true},
		{"tls to a plain server", handshake, pipebench.ClassError, DetailTLS, true},
		{"silent server", timeout, pipebench.ClassTimeout, "timeout", false},
		{"mismatch", fmt.Errorf("%w: saw SMTP", ErrProtocolMismatch), pipebench.ClassError, DetailMismatch, true},
		{"h2 to h1", errors.New("http2: frame too large, note that the frame header looked like an HTTP/1.1 header"), pipebench.ClassError, DetailMismatch, true},
		{"too many files", &os.SyscallError{Syscall: "socket", Err: syscall.EMFILE}, pipebench.ClassError, DetailFiles, true},
		{"unreachable", &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.EHOSTUNREACH}}, pipebench.ClassError, DetailUnreachable, true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}, pipebench.ClassError, "connection reset", false},
		{"eof", io.EOF, pipebench.ClassError, "eof", false},
	} {
		if tc.err == nil {
			t.Fatalf("%s: no error to classify", tc.name)
		}
		o := Classify(tc.err)
		if o.Class != tc.class || o.Detail != tc.detail || o.Unreached != tc.unreached || o.Message != tc.err.Error() {
			t.Errorf("%s: %+v; want class %s, detail %q, unreached %t and the error's text", tc.name, o, tc.class, tc.detail, tc.unreached)
		}
	}
}

func TestPlainToTLS(t *testing.T) {
	if !PlainToTLS(400, []byte("Client sent an HTTP request to an HTTPS server.\n")) || PlainToTLS(400, []byte("bad json")) ||
		PlainToTLS(200, []byte("HTTP request to an HTTPS server")) {
		t.Error("PlainToTLS")
	}
}
