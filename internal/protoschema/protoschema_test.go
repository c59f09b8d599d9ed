package protoschema

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
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
