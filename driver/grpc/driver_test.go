package grpcdriver

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/examples"
	"github.com/pipebench/pipebench/internal/format/protoschema"
	"github.com/pipebench/pipebench/payload"
)

// server is a real gRPC server of the example HealthEventService built from
// the .proto at run time, with reflection, on a Unix socket or TCP.
type server struct {
	target   string
	addr     string // host:port over TCP
	srv      *grpc.Server
	gate     drivertest.Gate
	received atomic.Int64
	mu       sync.Mutex
	seqs     []uint64 // from the message field
	mdSeqs   []uint64 // from the metadata
}

func startServer(t testing.TB, network string) *server {
	t.Helper()
	return startServerOpts(t, network)
}

// healthSchema compiles examples/healthevents.proto and returns its files
// and the health-event service's Report method.
func healthSchema(t testing.TB) (*protoregistry.Files, protoreflect.MethodDescriptor) {
	t.Helper()
	files, err := protoschema.Compile(context.Background(), []string{"healthevents.proto"}, nil, examples.FS)
	if err != nil {
		t.Fatal(err)
	}
	report, err := protoschema.Method(files, "pipebench.healthevents.v1.HealthEventService/Report")
	if err != nil {
		t.Fatal(err)
	}
	return files, report
}

func startServerOpts(t testing.TB, network string, opts ...grpc.ServerOption) *server {
	t.Helper()
	files, report := healthSchema(t)
	stream, _ := protoschema.Method(files, "pipebench.healthevents.v1.HealthEventService/ReportStream")
	s := &server{}
	var ln net.Listener
	var err error
	if network == "unix" {
		sock := filepath.Join(t.TempDir(), "he.sock")
		ln, err = net.Listen("unix", sock)
		s.target = "unix://" + sock
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if ln != nil {
			s.target, s.addr = ln.Addr().String(), ln.Addr().String()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	s.srv = grpc.NewServer(opts...)
	ack := func(n int) *dynamicpb.Message {
		m := dynamicpb.NewMessage(report.Output())
		m.Set(report.Output().Fields().ByName("accepted"), protoreflect.ValueOfUint32(uint32(n)))
		return m
	}
	s.srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(report.Parent().FullName()),
		Methods: []grpc.MethodDesc{{
			MethodName: "Report",
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				in := dynamicpb.NewMessage(report.Input())
				if err := dec(in); err != nil {
					return nil, err
				}
				if err := s.gate.GRPC(ctx); err != nil {
					return nil, err
				}
				events := in.Get(report.Input().Fields().ByName("events")).List()
				for i := 0; i < events.Len(); i++ {
					s.record(ctx, events.Get(i).Message())
				}
				return ack(events.Len()), nil
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "ReportStream",
			ClientStreams: true,
			Handler: func(_ any, ss grpc.ServerStream) error {
				if err := s.gate.GRPC(ss.Context()); err != nil {
					return err
				}
				n := 0
				for {
					ev := dynamicpb.NewMessage(stream.Input())
					if err := ss.RecvMsg(ev); err != nil {
						break
					}
					s.record(ss.Context(), ev)
					n++
				}
				return ss.SendMsg(ack(n))
			},
		}},
	}, nil)
	rpb.RegisterServerReflectionServer(s.srv, reflection.NewServerV1(reflection.ServerOptions{Services: s.srv, DescriptorResolver: files}))
	go s.srv.Serve(ln)
	t.Cleanup(s.srv.Stop)
	return s
}

func (s *server) record(ctx context.Context, ev protoreflect.Message) {
	s.received.Add(1)
	seq := ev.Get(ev.Descriptor().Fields().ByName("sequence")).Uint()
	var mdSeq uint64
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("pipebench-seq")) > 0 {
		mdSeq, _ = strconv.ParseUint(md.Get("pipebench-seq")[0], 10, 64)
	}
	s.mu.Lock()
	s.seqs = append(s.seqs, seq)
	s.mdSeqs = append(s.mdSeqs, mdSeq)
	s.mu.Unlock()
}

// eventTemplate is one HealthEvents request carrying one event.
func eventTemplate() map[string]any {
	return map[string]any{
		"version": uint64(1),
		"events": []any{map[string]any{
			"node_name":          "node-{{seq % 150}}",
			"sequence":           "{{seq}}",
			"generated_at":       "{{now}}",
			"severity":           "{{choice SEVERITY_FATAL SEVERITY_WARNING}}",
			"recommended_action": "ACTION_CORDON",
			"is_healthy":         false,
			"error_codes":        []any{"79"},
		}},
	}
}

func newGen(t testing.TB, tree map[string]any) pipebench.Generator {
	t.Helper()
	g, err := payload.NewMessage(tree)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// conformance runs the suite against the example service over network
// (unix or tcp), the driver built by its factory from the .proto file.
func conformance(t *testing.T, network string) {
	drivertest.Run(t, drivertest.Harness{
		Factory: Factory(),
		Configure: func(cfg any) {
			c := cfg.(*Config)
			c.Method, c.ProtoFiles, c.ImportPaths = "pipebench.healthevents.v1.HealthEventService/Report", []string{"healthevents.proto"}, []string{"../../examples"}
			c.Timeout, c.Connections = pipebench.Duration(500*time.Millisecond), 2
		},
		Invalid: func(cfg any) string {
			cfg.(*Config).Method = "pipebench.healthevents.v1.HealthEventService/Nope"
			return "method"
		},
		Receiver: func(t *testing.T) drivertest.Receiver {
			s := startServer(t, network)
			return drivertest.Receiver{
				Target:   s.target,
				Addr:     s.addr,
				Received: s.received.Load,
				Set:      s.gate.Set,
				Close:    s.srv.Stop,
				Slow:     drivertest.SlowAnswer,
			}
		},
		Generator:   newGen(t, eventTemplate()),
		Connections: 2,
		Mismatches: []drivertest.Mismatch{
			{Name: "HTTP/1.1 server for a gRPC client", Detail: "protocol mismatch", Start: drivertest.HTTP1Server},
		},
	})
}

func TestConformanceUnix(t *testing.T) { conformance(t, "unix") }
func TestConformanceTCP(t *testing.T)  { conformance(t, "tcp") }

func TestSequenceTravelsInFieldAndMetadata(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			s := startServer(t, network)
			d, err := New(Config{Endpoint: s.target, Method: "/pipebench.healthevents.v1.HealthEventService/Report",
				ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: pipebench.Duration(5 * time.Second), Connections: 1}, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer d.Shutdown(context.Background())
			g := newGen(t, eventTemplate())
			// A batch of 3 items is 3 unary calls, seq 10, 11, 12.
			b := g.Next(10, 3, time.Now())
			if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
				t.Fatalf("send: %+v", o)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			// The three calls leave together: the server's handlers may
			// take them in any order, each with its own number in both.
			if len(s.seqs) != 3 {
				t.Fatalf("server got %d events, want 3", len(s.seqs))
			}
			got := map[uint64]bool{}
			for i := range s.seqs {
				if s.seqs[i] != s.mdSeqs[i] {
					t.Errorf("event %d: field seq %d, metadata seq %d", i, s.seqs[i], s.mdSeqs[i])
				}
				got[s.seqs[i]] = true
			}
			if !got[10] || !got[11] || !got[12] {
				t.Errorf("the server got seqs %v, want 10, 11 and 12", s.seqs)
			}
			if n := d.OpenConnections(); n != 1 {
				t.Errorf("OpenConnections = %d, want 1", n)
			}
		})
	}
}

func TestClientStreamByReflection(t *testing.T) {
	s := startServer(t, "unix")
	d, err := New(Config{Endpoint: s.target, Method: "pipebench.healthevents.v1.HealthEventService.ReportStream",
		Timeout: pipebench.Duration(5 * time.Second), Connections: 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("start by reflection: %v", err)
	}
	defer d.Shutdown(context.Background())
	ev := eventTemplate()["events"].([]any)[0].(map[string]any)
	g := newGen(t, ev)
	b := g.Next(1, 5, time.Now())
	if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
		t.Fatalf("send: %+v", o)
	}
	if got := s.received.Load(); got != 5 {
		t.Errorf("the stream delivered %d events, want 5", got)
	}
}

// Nothing listening (a Unix socket that is not there, a closed port):
// Start fails, refused and unreached.
func TestNoServerIsRefusedAndUnreached(t *testing.T) {
	dir := t.TempDir()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct{ ep, detail string }{{"unix://" + filepath.Join(dir, "none.sock"), "no socket"}, {closed, "connection refused"}} {
		d, err := New(Config{Endpoint: tc.ep, Method: "pipebench.healthevents.v1.HealthEventService/Report",
			ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: pipebench.Duration(2 * time.Second), Connections: 1}, "")
		if err != nil {
			t.Fatal(err)
		}
		err = d.Start(context.Background())
		d.Shutdown(context.Background())
		if err == nil || !pipebench.IsUnreached(err) || !strings.Contains(err.Error(), tc.detail) {
			t.Errorf("%s: Start %v, want %s, unreached", tc.ep, err, tc.detail)
		}
	}
}

func TestBadConfigurationIsClear(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Endpoint: "unix://relative.sock", Method: "a.B/C", Timeout: 1, Connections: 1}, "endpoint:"},
		{Config{Endpoint: "127.0.0.1", Method: "a.B/C", Timeout: 1, Connections: 1}, "endpoint:"},
		{Config{Endpoint: "127.0.0.1:1", Method: "Nope", Timeout: 1, Connections: 1}, "method:"},
		{Config{Endpoint: "127.0.0.1:1", Method: "a.B/C", Timeout: 1, Connections: 0}, "connections:"},
		{Config{Endpoint: "127.0.0.1:1", Method: "pipebench.healthevents.v1.HealthEventService/Nope", ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: 1, Connections: 1}, "has no method Nope"},
		{Config{Endpoint: "127.0.0.1:1", Method: "a.B/C", ProtoFiles: []string{"missing.proto"}, Timeout: 1, Connections: 1}, "missing.proto"},
	}
	for _, c := range cases {
		_, err := New(c.cfg, "")
		if err == nil || !strings.Contains(drivertest.ErrorText(err), c.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", c.cfg, err, c.want)
		}
	}
}

func TestBadMessageIsAnError(t *testing.T) {
	s := startServer(t, "unix")
	d, err := New(Config{Endpoint: s.target, Method: "pipebench.healthevents.v1.HealthEventService/Report",
		ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: pipebench.Duration(time.Second), Connections: 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	d.Start(context.Background())
	defer d.Shutdown(context.Background())
	b := newGen(t, map[string]any{"no_such_field": "x"}).Next(1, 1, time.Now())
	if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassError || !strings.Contains(o.Message, "no_such_field") {
		t.Errorf("bad message: %+v", o)
	}
}
