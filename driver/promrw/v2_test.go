package promrwdriver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	remote "github.com/prometheus/client_golang/exp/api/remote"
	writev2 "github.com/prometheus/client_golang/exp/api/remote/genproto/v2"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
)

// The direct conversion from the OTLP wire bytes writes the same request,
// byte for byte, as the conversion through pdata, in both protocol
// versions, for every metric type, with churn and producers in the labels.
func TestDirectEncodingMatchesPdata(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		for _, typ := range []string{"gauge", "sum", "histogram"} {
			gen, err := otlpgen.MetricsFactory().New(&otlpgen.MetricsConfig{Producers: 13, Attributes: 12, Type: typ, Churn: 0.3}, pipebench.Env{})
			if err != nil {
				t.Fatal(err)
			}
			direct := &work{v2: v2, names: map[string]string{}, bnames: map[string][]byte{}}
			viaPdata := &work{v2: v2, names: map[string]string{}, bnames: map[string][]byte{}}
			for i := 0; i < 5; i++ {
				b := gen.Next(uint64(1+i*200), 200, time.Now())
				enc := b.Data.(*otlpgen.Encoded)
				_, n1, err := direct.encodeWire(enc.Body)
				if err != nil {
					t.Fatal(err)
				}
				md, err := enc.Metrics()
				if err != nil {
					t.Fatal(err)
				}
				_, n2 := viaPdata.encode(md)
				got, want := direct.enc.Bytes(), viaPdata.enc.Bytes()
				if v2 {
					got, want = direct.enc2.Bytes(), viaPdata.enc2.Bytes()
				}
				if n1 != 200 || n2 != 200 || !bytes.Equal(got, want) {
					t.Fatalf("v2 %v %s batch %d: %d and %d samples, requests equal: %v", v2, typ, i, n1, n2, bytes.Equal(got, want))
				}
			}
		}
	}
}

// An attribute that is not a scalar is converted through pdata.
func TestComplexAttributeFallsBackToPdata(t *testing.T) {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("x")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetIntValue(3)
	dp.Attributes().PutEmptySlice("list").AppendEmpty().SetStr("a")
	dp.Attributes().PutInt(otlpgen.AttrSeq, 42)
	dp.Attributes().PutInt(otlpgen.AttrSent, time.Now().UnixNano())
	body, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	w := &work{names: map[string]string{}, bnames: map[string][]byte{}}
	if _, _, err := w.encodeWire(body); err != otlpgen.ErrComplexValue {
		t.Fatalf("encodeWire: %v, want ErrComplexValue", err)
	}
	s := startStore(t)
	cfg := DefaultConfig()
	cfg.Protocol = "2.0"
	d, err := New(*cfg, s.url)
	if err != nil {
		t.Fatal(err)
	}
	b := pipebench.Batch{Seq: 42, Count: 1, Data: &otlpgen.Encoded{Signal: otlpgen.SignalMetrics, Body: body}}
	if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
		t.Fatalf("send: %+v", o)
	}
	if s.seqs[42] != 1 || s.labels[42]["list"] != `["a"]` {
		t.Errorf("seq 42 arrived %d times with labels %v", s.seqs[42], s.labels[42])
	}
}

// store is a remote-write 2.0 receiver made of client_golang's own
// handler (exp/api/remote) and protobuf decoding: it keeps each
// sequence-numbered sample's series labels and timestamp.
type store struct {
	mu     sync.Mutex
	url    string
	seqs   map[uint64]int
	labels map[uint64]map[string]string
	ts     map[uint64]int64
}

func (s *store) Store(r *http.Request, msgType remote.WriteMessageType) (*remote.WriteResponse, error) {
	resp := remote.NewWriteResponse()
	if msgType != remote.WriteV2MessageType {
		resp.SetStatusCode(http.StatusUnsupportedMediaType)
		return resp, fmt.Errorf("not 2.0: %s", msgType)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return resp, err
	}
	var req writev2.Request
	if err := proto.Unmarshal(body, &req); err != nil {
		resp.SetStatusCode(http.StatusBadRequest)
		return resp, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ts := range req.Timeseries {
		ls := writev2.DesymbolizeLabels(ts.LabelsRefs, req.Symbols, nil)
		m := map[string]string{}
		for i := 0; i+1 < len(ls); i += 2 {
			m[ls[i]] = ls[i+1]
		}
		for _, smp := range ts.Samples {
			if m["pipebench"] == "seq" {
				q := uint64(smp.Value)
				s.seqs[q]++
				s.labels[q] = m
				s.ts[q] = smp.Timestamp
			}
			resp.Samples++
		}
	}
	return resp, nil
}

func startStore(t *testing.T) *store {
	t.Helper()
	s := &store{seqs: map[uint64]int{}, labels: map[uint64]map[string]string{}, ts: map[uint64]int64{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/v1/write", remote.NewWriteHandler(s, remote.MessageTypes{remote.WriteV2MessageType}))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/api/v1/write"
	return s
}

// The driver speaking 2.0 into client_golang's own 2.0 handler: every
// point arrives once with its labels and send time; a 1.0 driver is
// refused by that handler (415), as a 2.0-only receiver should.
func TestRemoteWrite2IntoClientGolangHandler(t *testing.T) {
	s := startStore(t)
	cfg := DefaultConfig()
	cfg.Protocol = "2.0"
	d, err := Factory().New(cfg, pipebench.Env{Target: s.url})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	testutil.Start(t, d.Start, d.Shutdown)
	start := time.Now()
	seq := sendEveryType(t, d, 5, 10)
	s.mu.Lock()
	defer s.mu.Unlock()
	for q := uint64(1); q < seq; q++ {
		if s.seqs[q] != 1 {
			t.Fatalf("seq %d arrived %d times", q, s.seqs[q])
		}
		if ms := s.ts[q]; ms < start.UnixMilli()-1 || ms > time.Now().UnixMilli() {
			t.Fatalf("seq %d carries send time %d, outside the test", q, ms)
		}
	}
	if l := s.labels[1]; l["__name__"] != "pipebench_load_gauge" || l["attr_0"] != "value-0" {
		t.Errorf("labels of the first point: %v", l)
	}
	if l := s.labels[seq-1]; l["__name__"] != "pipebench_load_histogram_count" {
		t.Errorf("labels of the last (histogram) point: %v", l)
	}
	v1, err := New(*DefaultConfig(), s.url)
	if err != nil {
		t.Fatal(err)
	}
	gen, _ := otlpgen.MetricsFactory().New(nil, pipebench.Env{})
	b := gen.Next(seq, 5, time.Now())
	if o := v1.Send(ctx, &b); o.Class != pipebench.ClassError || o.Code != 415 {
		t.Errorf("1.0 into a 2.0-only handler: %+v, want a 415 error", o)
	}
}

// The driver speaking 2.0 into pipebench's own sink: every sample is
// matched once, and the sink counts the requests as 2.0.
func TestRemoteWrite2IntoSink(t *testing.T) {
	ctx := context.Background()
	sink, a := startSink(t)
	cfg := DefaultConfig()
	cfg.Protocol = "2.0"
	d, err := New(*cfg, sink.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	gen, _ := otlpgen.MetricsFactory().New(nil, pipebench.Env{})
	for i := 0; i < 10; i++ {
		b := gen.Next(uint64(1+i*100), 100, time.Now())
		if o := d.Send(ctx, &b); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	if st := sink.Stats(); st.V2 != 10 || st.Matched != 1000 || st.Series != 1000 {
		t.Errorf("sink stats %+v", st)
	}
	eachOnce(t, a.seqs, 1000)
	if err := (&Config{Timeout: 1, Connections: 1, Protocol: "3.0"}).Validate(); err == nil || !strings.Contains(err.Error(), "protocol:") {
		t.Errorf("protocol 3.0: %v", err)
	}
}
