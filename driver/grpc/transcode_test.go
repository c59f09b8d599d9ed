package grpcdriver

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pipebench/pipebench/internal/format/protoschema"
)

const kitchenSink = `syntax = "proto3";
package t.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }
message Inner { string name = 1; repeated int32 codes = 2; Inner next = 3; }
message All {
  string s = 1; bytes b = 2; bool ok = 3;
  int32 i32 = 4; int64 i64 = 5; uint32 u32 = 6; uint64 u64 = 7;
  sint32 s32 = 8; sint64 s64 = 9; fixed32 f32 = 10; fixed64 f64 = 11; sfixed32 sf32 = 12; sfixed64 sf64 = 13;
  float fl = 14; double db = 15; Color color = 16; repeated Color colors = 17;
  Inner inner = 18; repeated Inner inners = 19; google.protobuf.Timestamp at = 20;
  map<string, int32> counts = 21; google.protobuf.Int32Value wrapped = 22;
  optional int32 maybe = 23; repeated string tags = 24; repeated double ds = 25;
  oneof pick { string one = 26; int64 two = 27; }
}
`

func allDescriptor(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	files, err := protoschema.Compile(context.Background(), []string{"t.proto"}, nil, fstest.MapFS{"t.proto": {Data: []byte(kitchenSink)}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName("t.v1.All")
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.MessageDescriptor)
}

// The fast path gives the same message as protojson for every shape it
// takes, and declines (ok false) the rest, which protojson then handles.
func TestTranscodeMatchesProtojson(t *testing.T) {
	md := allDescriptor(t)
	fast := []string{
		`{}`,
		`{"s":"héllo \"q\" \\ \n \u00e9","b":"AAEC/w==","ok":true,"i32":-5,"i64":"-9007199254740993","u32":7,"u64":"18446744073709551615"}`,
		`{"s32":-3,"s64":"-4","f32":5,"f64":"6","sf32":-7,"sf64":-8,"fl":1.5,"db":-2.25e10}`,
		`{"color":"GREEN","colors":["RED",2,"COLOR_UNSPECIFIED"],"maybe":0}`,
		`{"inner":{"name":"a","codes":[1,-2,3],"next":{"name":"b"}},"inners":[{"name":"x"},{}]}`,
		`{"at":"2026-01-02T03:04:05.123456789Z","tags":["a","b"],"ds":[0.5,1]}`,
		`{"at":"2026-01-02T03:04:05+02:00","one":"x"}`,
		`{"two":"12"}`,
		` { "s" : "spaced" , "i32" : "12" } `,
		`{"s":null,"inner":null,"tags":null}`,
		`{"i32":0,"s":"","ok":false}`,
		// A nested message longer than 127 bytes: its length takes two
		// bytes, written after it was encoded in place.
		`{"inner":{"name":"` + strings.Repeat("n", 200) + `","next":{"name":"` + strings.Repeat("m", 20000) + `"}},"i32":1}`,
		`{"b":"_-8=","at":"2026-03-04T23:59:59.5-05:30"}`,
		`{"at":"1970-01-01T00:00:00Z"}`,
		`{"at":"2024-02-29T12:00:00.000000001+14:00"}`,
		`{"at":"0001-01-01T00:00:00Z"}`,
	}
	ix := newNames(md)
	for _, js := range fast {
		w, ok := transcode(nil, []byte(js), md)
		if !ok {
			t.Errorf("fast path declined %s", js)
			continue
		}
		// The same bytes looked up in the driver's index of names,
		// appended after bytes already there.
		if w2, ok := transcodeWith([]byte("prefix"), []byte(js), md, ix); !ok || string(w2[6:]) != string(w) || string(w2[:6]) != "prefix" {
			t.Errorf("%s: with the index of names: %v, %q; without: %q", js, ok, w2, w)
		}
		got := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(w, got); err != nil {
			t.Errorf("%s: wire form does not decode: %v", js, err)
			continue
		}
		want := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal([]byte(js), want); err != nil {
			t.Fatalf("%s: protojson: %v", js, err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s:\n fast %v\n want %v", js, got, want)
		}
	}
	declined := []string{
		`{"counts":{"a":1}}`, `{"wrapped":5}`, `{"nope":1}`, `{"fl":"NaN"}`, `{"i32":1.5}`, `{"i32":"x"}`,
		`{"color":"BLUE"}`, `{"s":"\ud83d\ude00"}`, `{"s":"a"`, `{"s":"a"} x`, `{"ok":"true"}`, `{"i32":+1}`,
		`{"at":"yesterday"}`, `{"b":"***"}`, `{"inners":[null]}`,
		`{"at":"2026-02-30T00:00:00Z"}`, `{"at":"2026-01-02T03:04:05"}`, `{"at":"2026-01-02T03:04:05.Z"}`,
		`{"inner":{"name":"a","next":{"name":1}}}`,
	}
	for _, js := range declined {
		if w, ok := transcodeWith([]byte("kept"), []byte(js), md, ix); ok || string(w) != "kept" {
			t.Errorf("fast path took %s, or changed what was before it: %q", js, w)
		}
		if _, ok := transcode(nil, []byte(js), md); ok {
			t.Errorf("fast path took %s", js)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	s := startServer(b, "unix")
	_ = s
	d, err := New(Config{Endpoint: s.target, Method: "pipebench.healthevents.v1.HealthEventService/Report",
		ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: 1e9, Connections: 1}, "")
	if err != nil {
		b.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	g := newGen(b, eventTemplate())
	bt := g.Next(1, 1, testNow())
	b.Run("transcode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = transcodeWith(buf[:0], bt.Body, d.method.Input(), d.names); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		for b.Loop() {
			msg := dynamicpb.NewMessage(d.method.Input())
			if err := d.opts.Unmarshal(bt.Body, msg); err != nil {
				b.Fatal(err)
			}
			if _, err := d.enc.Marshal(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func testNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC) }
