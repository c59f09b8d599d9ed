package protoschema

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/reflection"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	rpbalpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
)

func TestCompileAndFindMethod(t *testing.T) {
	fsys := fstest.MapFS{
		"a/svc.proto": {Data: []byte(`syntax = "proto3";
package a.v1;
import "google/protobuf/empty.proto";
service S { rpc Do(google.protobuf.Empty) returns (google.protobuf.Empty); }
`)},
		"bad.proto": {Data: []byte("syntax = \"proto3\";\nmessage M { strin x = 1; }\n")},
	}
	files, err := Compile(context.Background(), []string{"a/svc.proto"}, nil, fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.v1.S/Do", "/a.v1.S/Do", "a.v1.S.Do"} {
		md, err := Method(files, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if FullMethod(md) != "/a.v1.S/Do" {
			t.Errorf("%s: full method %s", name, FullMethod(md))
		}
	}
	if _, err := Method(files, "a.v1.S/Nope"); err == nil || !strings.Contains(err.Error(), "it has Do") {
		t.Errorf("missing method: %v", err)
	}
	if _, err := Method(files, "a.v1.T/Do"); err == nil || !strings.Contains(err.Error(), "not defined") {
		t.Errorf("missing service: %v", err)
	}
	if _, err := Compile(context.Background(), []string{"bad.proto"}, nil, fsys); err == nil || !strings.Contains(err.Error(), "bad.proto:2:") {
		t.Errorf("a syntax error should name file and line: %v", err)
	}
	if _, _, err := SplitMethod("Do"); err == nil {
		t.Errorf("a bare name was accepted")
	}
}

// Both reflection versions, each from a real gRPC server on a Unix socket
// serving only that version.
func TestFromReflectionV1AndV1Alpha(t *testing.T) {
	fsys := fstest.MapFS{"a/svc.proto": {Data: []byte(`syntax = "proto3";
package a.v1;
import "google/protobuf/timestamp.proto";
message Req { google.protobuf.Timestamp at = 1; }
service S { rpc Do(Req) returns (Req); }
`)}}
	files, err := Compile(context.Background(), []string{"a/svc.proto"}, nil, fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, alpha := range []bool{false, true} {
		srv := grpc.NewServer()
		opts := reflection.ServerOptions{Services: srv, DescriptorResolver: files}
		if alpha {
			rpbalpha.RegisterServerReflectionServer(srv, reflection.NewServer(opts))
		} else {
			rpb.RegisterServerReflectionServer(srv, reflection.NewServerV1(opts))
		}
		sock := filepath.Join(t.TempDir(), "r.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromReflection(context.Background(), cc, "a.v1.S")
		if err != nil {
			t.Errorf("alpha=%v: %v", alpha, err)
		} else if md, err := Method(got, "a.v1.S/Do"); err != nil || md.Input().Fields().ByName("at") == nil {
			t.Errorf("alpha=%v: %v %v", alpha, md, err)
		}
		if _, err := FromReflection(context.Background(), cc, "a.v1.Nope"); err == nil {
			t.Errorf("alpha=%v: an unknown symbol was found", alpha)
		}
		cc.Close()
		srv.Stop()
	}
}
