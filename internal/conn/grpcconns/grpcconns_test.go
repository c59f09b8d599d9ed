package grpcconns

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// The codes a server answers with: busy is refused, a deadline a timeout,
// anything else an error named as gRPC writes it; none unreached.
func TestClassifyCodes(t *testing.T) {
	for _, tc := range []struct {
		code   codes.Code
		class  pipebench.Class
		detail string
	}{
		{codes.Unavailable, pipebench.ClassRefused, "UNAVAILABLE"},
		{codes.ResourceExhausted, pipebench.ClassRefused, "RESOURCE_EXHAUSTED"},
		{codes.DeadlineExceeded, pipebench.ClassTimeout, "timeout"},
		{codes.Canceled, pipebench.ClassError, "cancelled"},
		{codes.InvalidArgument, pipebench.ClassError, "INVALID_ARGUMENT"},
		{codes.Unimplemented, pipebench.ClassError, "UNIMPLEMENTED"},
	} {
		o := Classify(status.Error(tc.code, "x"))
		if o.Class != tc.class || o.Detail != tc.detail || o.Code != int(tc.code) || o.Unreached || o.Message == "" {
			t.Errorf("%v: %+v", tc.code, o)
		}
	}
	if o := Classify(nil); o.Class != pipebench.ClassOK {
		t.Errorf("nil: %+v", o)
	}
}

// Calls that never reached a server, against real ones on loopback: a
// closed port, a Unix socket that is not there, an HTTP/1.1 server.
func TestClassifyUnreached(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	h1 := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer h1.Close()
	for _, tc := range []struct{ target, detail string }{
		{closed, netclass.DetailRefused},
		{"unix:" + filepath.Join(t.TempDir(), "none.sock"), netclass.DetailNoSocket},
		{h1.Listener.Addr().String(), netclass.DetailMismatch},
	} {
		cc, err := grpc.NewClient(tc.target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = cc.Invoke(ctx, "/x.Y/Z", &emptypb.Empty{}, &emptypb.Empty{})
		cancel()
		cc.Close()
		if o := Classify(err); !o.Unreached || o.Detail != tc.detail {
			t.Errorf("%s: %+v, want %s, unreached", tc.target, o, tc.detail)
		}
	}
}

// Start against a real gRPC server opens every connection; against an
// HTTP/1.1 server it fails with a protocol mismatch, unreached.
func TestStart(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		mismatch bool
	}{{drivertest.GRPCServer(t), false}, {drivertest.HTTP1Server(t), true}} {
		var conns []*grpc.ClientConn
		for i := 0; i < 3; i++ {
			cc, err := grpc.NewClient(tc.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			conns = append(conns, cc)
		}
		o, err := Start(context.Background(), conns, Params{Timeout: time.Second, Addr: tc.addr})
		o.Close()
		switch {
		case tc.mismatch && (!errors.Is(err, netclass.ErrProtocolMismatch) || !netclass.Classify(err).Unreached):
			t.Errorf("%s: Start %v, want a protocol mismatch", tc.addr, err)
		case !tc.mismatch && (err != nil || Ready(conns) != 3):
			t.Errorf("%s: Start %v, %d of 3 ready", tc.addr, err, Ready(conns))
		}
	}
}
