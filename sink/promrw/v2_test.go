package promrwsink

import (
	"context"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	remote "github.com/prometheus/client_golang/exp/api/remote"
	writev2 "github.com/prometheus/client_golang/exp/api/remote/genproto/v2"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload/promrw"
)

// client_golang's own remote-write 2.0 client (exp/api/remote) writes to
// the sink: every sequence-numbered sample arrives once, the other kinds
// are counted apart, and the client reads the samples written from the
// sink's answer headers (it takes a receiver without them for a 1.0 one).
// With a fault, the client sees the status and the samples count as
// faulted.
func TestRemoteWrite2FromClientGolang(t *testing.T) {
	arr := &testutil.Arrivals{}
	s := start(t, arr)
	u, _ := url.Parse(s.Endpoint())
	api, err := remote.NewAPI("http://"+u.Host, remote.WithAPIPath(u.Path), remote.WithAPIBackoff(remote.BackoffConfig{Min: 10 * time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 1}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	build := func(first uint64, n int) *writev2.Request {
		st := writev2.NewSymbolTable()
		req := &writev2.Request{}
		for i := 0; i < n; i += 10 {
			ts := &writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels([]string{"__name__", "load", "pipebench", "seq", "series", strings.Repeat("x", i/10+1)}, nil)}
			for j := i; j < min(i+10, n); j++ {
				ts.Samples = append(ts.Samples, &writev2.Sample{Value: float64(first + uint64(j)), Timestamp: now})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		req.Timeseries = append(req.Timeseries,
			&writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels([]string{"__name__", "served", "job", "x"}, nil), Samples: []*writev2.Sample{{Value: 1, Timestamp: now}, {Value: 2, Timestamp: now + 1}}},
			&writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels([]string{"__name__", "up"}, nil), Samples: []*writev2.Sample{{Value: 1, Timestamp: now}}},
			&writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels([]string{"__name__", "served", "job", "x"}, nil), Samples: []*writev2.Sample{{Value: math.Float64frombits(promrw.StaleNaN), Timestamp: now + 2}}},
		)
		req.Symbols = st.Symbols()
		return req
	}
	stats, err := api.Write(context.Background(), remote.WriteV2MessageType, build(1000, 95))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Samples != 95+4 {
		t.Errorf("the client read %d samples written, want 99", stats.Samples)
	}
	st := s.Stats()
	if st.V2 != 1 || st.Series != 10+3 || st.Matched != 95 || st.Other != 2 || st.Report != 1 || st.Stale != 1 {
		t.Errorf("stats %+v", st)
	}
	arr.ExpectEachOnce(t, 1000, 1094, "seq")

	s.SetFaults(pipebench.FaultPolicy{ErrorRatio: 1, ErrorStatus: 500}, time.Now())
	if _, err := api.Write(context.Background(), remote.WriteV2MessageType, build(5000, 20)); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("with every request faulted, the client got %v", err)
	}
	if _, f := arr.Count(); f < 24 || arr.Times(5000) != 0 {
		t.Errorf("faulted %d samples, seq 5000 arrived %d times", f, arr.Times(5000))
	}
}

// A request that names a message the sink does not know is refused with
// 415 and a reason naming both versions.
func TestUnknownMessageRefused(t *testing.T) {
	s := start(t, &testutil.Arrivals{})
	req := request(1, 5)
	code := postCT(t, s.Endpoint(), req, "application/x-protobuf;proto=io.prometheus.write.v3.Request")
	if code != 415 {
		t.Errorf("status %d, want 415", code)
	}
	if code := postCT(t, s.Endpoint(), req, "application/x-protobuf;proto=prometheus.WriteRequest"); code != 204 {
		t.Errorf("proto=prometheus.WriteRequest: status %d, want 204", code)
	}
}
