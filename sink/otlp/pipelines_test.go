package otlpsink

import (
	"context"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/kpi"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
)

// Requests that name their pipeline (x-pipebench-pipeline, as gRPC
// metadata or an HTTP header) are counted per pipeline: the same spans
// through two pipelines are no duplicates; a fault policy limited to one
// pipeline fails its requests alone; a request naming no pipeline, or an
// invalid one, counts in the totals only.
func TestSinkKeepsPipelinesApart(t *testing.T) {
	ctx := context.Background()
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	arr.SetRunning(0)
	s := New(Config{GRPCListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}, 1)
	testutil.Start(t, func(ctx context.Context) error { return s.Start(ctx, arr) }, s.Shutdown)
	s.SetFaults(pipebench.FaultPolicy{ErrorRatio: 1, ErrorStatus: 503, Pipeline: "p3"}, time.Now())
	gen, _ := otlpgen.TracesFactory().New(nil, pipebench.Env{})
	send := func(protocol, pipeline string, seq uint64) pipebench.Outcome {
		t.Helper()
		cfg := otlpdriver.DefaultConfig()
		cfg.Protocol = protocol
		if pipeline != "" {
			cfg.Headers = map[string]string{pipebench.PipelineHeader: pipeline}
		}
		d, err := otlpdriver.Factory().New(cfg, pipebench.Env{Targets: s.Endpoints(), Target: s.Endpoint()})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Shutdown(ctx)
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		b := gen.Next(seq, 100, time.Now())
		return d.Send(ctx, &b)
	}
	arr.Accept(1, 200)
	for _, c := range []struct {
		protocol, pipeline string
		seq                uint64
		ok                 bool
	}{
		{"grpc", "p1", 1, true}, {"http", "p2", 1, true}, // the same 100 spans through two pipelines
		{"grpc", "p3", 1, false}, {"http", "p3", 101, false}, // p3's exports all fail
		{"grpc", "", 101, true}, {"http", "not valid", 101, true}, // the totals alone: the second copy is a duplicate there
		{"http", "p1", 101, true},
	} {
		if o := send(c.protocol, c.pipeline, c.seq); (o.Class == pipebench.ClassOK) != c.ok {
			t.Errorf("%s %q seq %d: %+v", c.protocol, c.pipeline, c.seq, o)
		}
	}
	st := arr.Stats(0, 201)
	p1, p2, p3 := st.Pipelines["p1"], st.Pipelines["p2"], st.Pipelines["p3"]
	if len(st.Pipelines) != 3 || p1.Delivered != 200 || p2.Delivered != 100 || p3.Delivered != 0 || p3.Faulted != 200 || p1.Faulted != 0 {
		t.Errorf("pipelines %+v", st.Pipelines)
	}
	if st.Duplicates != 100 || p1.Duplicates != 0 || p2.Duplicates != 0 {
		t.Errorf("duplicates: total %d, p1 %d, p2 %d; want 100 (the two copies that named no valid pipeline), 0, 0", st.Duplicates, p1.Duplicates, p2.Duplicates)
	}
	if p2.Lost != 100 || p3.Lost != 200 || st.Lost != 300 {
		t.Errorf("lost: p2 %d, p3 %d, total %d; want 100, 200, 300", p2.Lost, p3.Lost, st.Lost)
	}
	if f, _ := arr.Totals(); f != 200 {
		t.Errorf("faulted in all %d, want 200", f)
	}
}
