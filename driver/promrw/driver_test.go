package promrwdriver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/payload/promrw"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// receiver is a real remote-write HTTP server on loopback (drivertest's)
// that decodes every request and counts its matched samples.
func receiver(t *testing.T) drivertest.Receiver {
	return drivertest.HTTPReceiver(t, "/api/v1/write", func(r *http.Request, body []byte) (int64, error) {
		if v := r.Header.Get(promrw.VersionHeader); v != promrw.Version {
			return 0, fmt.Errorf("remote-write version %q, want %s", v, promrw.Version)
		}
		plain, err := snappy.Decode(nil, body)
		if err != nil {
			return 0, err
		}
		c, err := promrw.Decode(plain, nil)
		if err != nil {
			return 0, err
		}
		return int64(c.Matched), nil
	})
}

func TestConformance(t *testing.T) {
	gen, _ := otlpgen.MetricsFactory().New(nil, pipebench.Env{})
	drivertest.Run(t, drivertest.Harness{
		Factory: Factory(), Generator: gen, Count: 10, Receiver: receiver,
		Configure: func(cfg any) {
			c := cfg.(*Config)
			c.Timeout, c.Connections = pipebench.Duration(time.Second), 4
		},
		Invalid: func(cfg any) string { cfg.(*Config).Protocol = "3.0"; return "protocol" },
		Target:  func(addr string) string { return "http://" + addr + "/api/v1/write" },
		Mismatches: []drivertest.Mismatch{
			{Name: "TLS server for a plain client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
				return "http://" + drivertest.TLSServer(t) + "/api/v1/write"
			}},
		},
	})
}

type arrivals struct {
	mu   sync.Mutex
	seqs map[uint64]int
	lat  time.Duration
}

func (a *arrivals) Arrive(seq uint64, sent, at time.Time) {
	a.mu.Lock()
	a.seqs[seq]++
	a.lat = max(a.lat, at.Sub(sent))
	a.mu.Unlock()
}
func (a *arrivals) Faulted(int)   {}
func (a *arrivals) Unmatched(int) {}

// The driver against pipebench's own remote-write sink: every metric point
// of every type arrives once as a sample, matched by its sequence number,
// with a send time close to now.
func TestDriverIntoSink(t *testing.T) {
	ctx := context.Background()
	sink, a := startSink(t)
	d, err := Factory().New(DefaultConfig(), pipebench.Env{Target: sink.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, d.Start, d.Shutdown)
	seq := sendEveryType(t, d, 7, 20)
	st := sink.Stats()
	if st.Matched != int(seq-1) || st.Series != int(seq-1) || st.Other != 0 {
		t.Fatalf("sink stats %+v, want %d matched samples", st, seq-1)
	}
	eachOnce(t, a.seqs, seq-1)
	if a.lat > time.Minute || a.lat < -time.Second {
		t.Errorf("e2e latency %v: send times are not carried", a.lat)
	}
	// Faults at the sink are refusals at the driver.
	sink.SetFaults(pipebench.FaultPolicy{ErrorRatio: 1, ErrorStatus: 429}, time.Now())
	gen, _ := otlpgen.MetricsFactory().New(nil, pipebench.Env{})
	b := gen.Next(seq, 10, time.Now())
	if o := d.Send(ctx, &b); o.Class != pipebench.ClassRefused || o.Code != 429 {
		t.Errorf("under a 429 fault: %+v", o)
	}
}

// startSink starts pipebench's remote-write sink until the test ends, and
// returns it with the arrivals it reports to.
func startSink(t *testing.T) (*promrwsink.Sink, *arrivals) {
	t.Helper()
	a := &arrivals{seqs: map[uint64]int{}}
	sink := promrwsink.New(*promrwsink.DefaultConfig())
	testutil.Start(t, func(ctx context.Context) error { return sink.Start(ctx, a) }, sink.Shutdown)
	return sink, a
}

// sendEveryType sends, through d, sends batches of 50 points of each
// metric type (gauge, sum, histogram) from producers producers, sequence
// numbers from 1 on; a send that is not OK fails the test. It returns the
// next sequence number.
func sendEveryType(t *testing.T, d pipebench.Driver, producers, sends int) uint64 {
	t.Helper()
	seq := uint64(1)
	for _, typ := range []string{"gauge", "sum", "histogram"} {
		gen, err := otlpgen.MetricsFactory().New(&otlpgen.MetricsConfig{Producers: producers, Attributes: 3, Type: typ}, pipebench.Env{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < sends; i++ {
			b := gen.Next(seq, 50, time.Now())
			seq += 50
			if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
				t.Fatalf("%s send %d: %+v", typ, i, o)
			}
		}
	}
	return seq
}

// eachOnce fails the test unless seqs counts each of 1..n once.
func eachOnce(t *testing.T, seqs map[uint64]int, n uint64) {
	t.Helper()
	for q := uint64(1); q <= n; q++ {
		if seqs[q] != 1 {
			t.Fatalf("seq %d arrived %d times", q, seqs[q])
		}
	}
}

func TestBadInput(t *testing.T) {
	c := Config{Endpoint: "ftp://x", Timeout: 0, Connections: 0}
	err := c.Validate()
	for _, key := range []string{"endpoint:", "timeout:", "connections:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate: %v lacks %s", err, key)
		}
	}
	d, err := New(*DefaultConfig(), "http://127.0.0.1:1/api/v1/write")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err == nil || !pipebench.IsUnreached(err) {
		t.Errorf("Start against a closed port: %v, want unreached", err)
	}
	b := pipebench.Batch{Seq: 1, Count: 1, Data: "text"}
	if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassError || o.Message == "" {
		t.Errorf("non-metrics batch: %+v", o)
	}
}
