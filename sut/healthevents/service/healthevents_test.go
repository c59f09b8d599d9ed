package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/sut/plumbing/docstore"
)

func TestMain(m *testing.M) {
	docstore.MaybeRunChild() // the test binary is also the document store's child
	os.Exit(m.Run())
}

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Shutdown is bounded: past it the gRPC server stops without waiting
	// for its streams.
	testutil.Start(t, s.Start, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return s.Shutdown(ctx)
	})
	return s
}

// report sends one event for node with seq as a real gRPC client would.
func report(t *testing.T, s *Server, cc *grpc.ClientConn, seq int, node string) error {
	t.Helper()
	in := dynamicpb.NewMessage(s.report.Input())
	doc := `{"events":[{"node_name":"` + node + `","sequence":"` + itoa(seq) + `","severity":"SEVERITY_FATAL","recommended_action":"ACTION_CORDON"}]}`
	if err := protojson.Unmarshal([]byte(doc), in); err != nil {
		t.Fatal(err)
	}
	return cc.Invoke(context.Background(), "/"+MethodReport, in, dynamicpb.NewMessage(s.report.Output()))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// A blast of N events over a Unix socket is applied one at a time at the
// set rate: completion time N-1 intervals, peak backlog about N, and each
// event's effect visible on /effects and /metrics.
func TestEffectsAtTheSetRate(t *testing.T) {
	const n, rate = 60, 40.0
	s := start(t, Config{Listen: "unix://" + filepath.Join(t.TempDir(), "he.sock"), HTTPListen: "127.0.0.1:0", EffectRate: rate, QueueSize: 1000, Store: StoreConfig{Type: StoreNone}})
	if !strings.HasPrefix(s.Endpoint(), "unix:///") {
		t.Fatalf("endpoint %q", s.Endpoint())
	}
	cc, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var wg sync.WaitGroup
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 10 {
				if err := report(t, s, cc, i+1, "node-"+itoa(i%25)); err != nil {
					t.Errorf("report %d: %v", i+1, err)
				}
			}
		}(w)
	}
	wg.Wait()
	var page EffectsPage
	getJSON(t, s.HTTPURL()+"/effects?from=0", &page)
	if page.Backlog < n-10 {
		t.Errorf("backlog right after the blast = %d, want about %d", page.Backlog, n)
	}
	testutil.Poll(30*time.Second, func() bool { return len(s.Applied()) >= n })
	effects := s.Applied()
	if len(effects) != n {
		t.Fatalf("%d effects after 30 s, want %d", len(effects), n)
	}
	took := effects[n-1].Applied.Sub(effects[0].Applied)
	want := time.Duration(float64(n-1) / rate * float64(time.Second))
	if took < want-want/20 || took > want+want/2 {
		t.Errorf("%d effects took %v, want about %v at %g/s", n, took, want, rate)
	}
	seen := map[uint64]bool{}
	for _, e := range effects {
		seen[e.Seq] = true
		if e.Applied.Before(e.Received) {
			t.Errorf("effect %d applied before it was received", e.Seq)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct sequence numbers in effects, want %d", len(seen), n)
	}
	// Paging: from=50 returns the last 10 and the cursor n.
	getJSON(t, s.HTTPURL()+"/effects?from=50", &page)
	if len(page.Effects) != 10 || page.Next != n || page.Backlog != 0 {
		t.Errorf("page from 50: %d effects, next %d, backlog %d", len(page.Effects), page.Next, page.Backlog)
	}
	var nodes map[string]struct{ Quarantined bool }
	getJSON(t, s.HTTPURL()+"/nodes", &nodes)
	if len(nodes) != 25 {
		t.Errorf("%d nodes quarantined, want 25", len(nodes))
	}
	resp, err := http.Get(s.HTTPURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"healthevents_effects_applied_total 60", "healthevents_effect_latency_seconds_count 60", "healthevents_backlog 0", "healthevents_nodes_quarantined 25"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestFullQueueIsResourceExhausted(t *testing.T) {
	s := start(t, Config{Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", EffectRate: 1, QueueSize: 2, Store: StoreConfig{Type: StoreNone}})
	cc, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var last error
	for i := 1; i <= 5 && last == nil; i++ {
		last = report(t, s, cc, i, "n")
	}
	if status.Code(last) != codes.ResourceExhausted {
		t.Errorf("a full queue answered %v, want RESOURCE_EXHAUSTED", last)
	}
}

// A listen path naming an ordinary file is an error, and the file stays.
func TestListenNeverRemovesAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "keep.txt")
	if err := os.WriteFile(f, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Listen: "unix://" + f, HTTPListen: "127.0.0.1:0", EffectRate: 1, QueueSize: 1, Store: StoreConfig{Type: StoreNone}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		s.Shutdown(context.Background())
		t.Fatal("listening on an ordinary file's path succeeded")
	}
	if b, err := os.ReadFile(f); err != nil || string(b) != "data" {
		t.Errorf("the file was touched: %q %v", b, err)
	}
}

// ReportStream queues every event of a client stream and acknowledges the
// count.
func TestReportStream(t *testing.T) {
	s := start(t, Config{Listen: "unix://" + filepath.Join(t.TempDir(), "he.sock"), HTTPListen: "127.0.0.1:0", EffectRate: 1000, QueueSize: 100, StoreWorkers: 1, Store: StoreConfig{Type: StoreNone}})
	cc, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	st, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true}, "/"+MethodStream)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		ev := dynamicpb.NewMessage(s.stream.Input())
		if err := protojson.Unmarshal([]byte(`{"node_name":"n`+itoa(i)+`","sequence":"`+itoa(i)+`"}`), ev); err != nil {
			t.Fatal(err)
		}
		if err := st.SendMsg(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	ack := dynamicpb.NewMessage(s.stream.Output())
	if err := st.RecvMsg(ack); err != nil {
		t.Fatal(err)
	}
	if n := ack.Get(s.stream.Output().Fields().ByName("accepted")).Uint(); n != 5 {
		t.Errorf("accepted %d, want 5", n)
	}
	testutil.Poll(10*time.Second, func() bool { return len(s.Applied()) >= 5 })
	if got := s.Applied(); len(got) != 5 || got[4].Seq != 5 || got[4].Node != "n5" {
		t.Errorf("applied %+v", got)
	}
}
