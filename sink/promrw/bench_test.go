package promrwsink

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload/promrw"
)

// benchRequest is a remote-write request shaped like a Prometheus agent's:
// 500 samples (its max_samples_per_send), one per series of 12 labels.
func benchRequest(seq uint64) (plain []byte, compressed []byte) {
	return benchRequestWith(&promrw.Encoder{}, seq)
}

// benchRequestV2 is benchRequest as a 2.0 request.
func benchRequestV2(seq uint64) (plain []byte, compressed []byte) {
	return benchRequestWith(&promrw.V2Encoder{}, seq)
}

func benchRequestWith(e interface {
	Series([]promrw.Label, []float64, []int64)
	Bytes() []byte
}, seq uint64) (plain []byte, compressed []byte) {
	now := time.Now().UnixMilli()
	ls := []promrw.Label{{Name: "__name__", Value: "pb_load_metric_0042"}, {Name: "instance", Value: "127.0.0.1:40123"}, {Name: "job", Value: "producers"}}
	for j := 0; j < 8; j++ {
		ls = append(ls, promrw.Label{Name: "label_" + strconv.Itoa(j), Value: "value-" + strconv.Itoa(j)})
	}
	ls = append(ls, promrw.Label{Name: "pipebench", Value: "seq"}, promrw.Label{Name: "series", Value: ""})
	for i := 0; i < 500; i++ {
		ls[len(ls)-1].Value = strconv.Itoa(i)
		e.Series(ls, []float64{float64(seq + uint64(i))}, []int64{now})
	}
	return e.Bytes(), snappy.Encode(nil, e.Bytes())
}

type countArrivals struct{ n atomic.Int64 }

func (a *countArrivals) Arrive(uint64, time.Time, time.Time) { a.n.Add(1) }
func (a *countArrivals) Faulted(int)                         {}
func (a *countArrivals) Unmatched(int)                       {}

// BenchmarkDecode is the decoder's ceiling: samples/s on one goroutine.
func BenchmarkDecode(b *testing.B) {
	plain, _ := benchRequest(1)
	benchDecode(b, plain, promrw.Decode)
}

// BenchmarkDecodeV2 is BenchmarkDecode for the same request in 2.0.
func BenchmarkDecodeV2(b *testing.B) {
	plain, _ := benchRequestV2(1)
	var d promrw.V2Decoder
	benchDecode(b, plain, d.Decode)
}

// benchDecode decodes plain with decode in a loop and reports the samples
// decoded a second.
func benchDecode(b *testing.B, plain []byte, decode func([]byte, func(uint64, int64)) (promrw.Counts, error)) {
	n := 0
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		c, err := decode(plain, func(uint64, int64) {})
		if err != nil {
			b.Fatal(err)
		}
		n += c.Samples
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkSink posts agent-shaped requests to the sink over loopback
// HTTP from parallel clients (run with -cpu 1 for the one-core figure; the
// clients share that core).
func BenchmarkSink(b *testing.B) {
	a := &countArrivals{}
	s := New(*DefaultConfig())
	testutil.Start(b, func(ctx context.Context) error { return s.Start(ctx, a) }, s.Shutdown)
	_, body := benchRequest(1)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.SetBytes(int64(len(body)))
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, s.Endpoint(), bytes.NewReader(body))
			req.Header.Set("Content-Encoding", "snappy")
			req.Header.Set("Content-Type", "application/x-protobuf")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(a.n.Load())/b.Elapsed().Seconds(), "samples/s")
}
