package builtins_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	httpsink "github.com/pipebench/pipebench/sink/http"
	"github.com/pipebench/pipebench/sut/all"
)

// post sends one event of n items, the first with sequence number seq, to
// url, and returns the status the sink answered.
func post(t *testing.T, url string, seq, n int) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Pipebench-Seq", fmt.Sprint(seq))
	req.Header.Set("Pipebench-Sent", fmt.Sprint(time.Now().UnixNano()))
	req.Header.Set("Pipebench-Count", fmt.Sprint(n))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// serve starts the stand-alone sink s until the test ends.
func serve(t *testing.T, reg *pipebench.Registry, s builtins.SinkServe) *builtins.ServedSink {
	t.Helper()
	sk, err := builtins.ServeSink(context.Background(), reg, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sk.Shutdown(ctx)
	})
	return sk
}

// `pipebench sink` with --listen and --path: the HTTP sink of the registry
// on that address and path, counting what arrives, injecting the fault
// flags' faults (every second request refused with 503).
func TestServeSinkHTTP(t *testing.T) {
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	sk := serve(t, reg, builtins.SinkServe{Listen: addr, ListenSet: true, Path: "/events", Seed: 7,
		Faults: pipebench.FaultPolicy{ErrorRatio: 0.5, ErrorStatus: 503}})
	if want := "http://" + addr + "/events (metrics at http://" + addr + "/metrics)"; sk.Where != want {
		t.Errorf("where %q, want %q", sk.Where, want)
	}
	var codes []int
	for i := 0; i < 4; i++ {
		codes = append(codes, post(t, "http://"+addr+"/events", 1+10*i, 10))
	}
	line, delivered := sk.Counts(0, time.Second)
	if refused := strings.Count(fmt.Sprint(codes), "503"); refused != 2 || delivered != 20 || !strings.Contains(line, "faulted 20") {
		t.Errorf("answers %v, delivered %d: %s", codes, delivered, line)
	}
}

// The remote-write and OTLP sinks, each from the registry, say where they
// listen as before; the remote-write sink adds its own counts.
func TestServeSinkRemoteWriteAndOTLP(t *testing.T) {
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	rw := testutil.FreeAddr(t)
	sk := serve(t, reg, builtins.SinkServe{Path: "/", RemoteWrite: rw})
	if want := "http://" + rw + "/api/v1/write for remote write (metrics at http://" + rw + "/metrics)"; sk.Where != want {
		t.Errorf("where %q, want %q", sk.Where, want)
	}
	if line, _ := sk.Counts(0, time.Second); !strings.Contains(line, "series 0  samples 0") {
		t.Errorf("counts %q lack the remote-write sink's own", line)
	}
	g, h := testutil.FreeAddr(t), testutil.FreeAddr(t)
	sk = serve(t, reg, builtins.SinkServe{Path: "/", OTLPGRPC: g, OTLPHTTP: h})
	if want := g + " for OTLP/gRPC, http://" + h + "/v1/{traces,metrics,logs} for OTLP/HTTP (metrics at http://" + h + "/metrics)"; sk.Where != want {
		t.Errorf("where %q, want %q", sk.Where, want)
	}
}

// A sink's configuration is the factory's, its keys set from the flags and
// checked by its Validate, each problem named by its flag.
func TestServeSinkConfigurationProblemsNameTheFlag(t *testing.T) {
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	_, err = builtins.ServeSink(context.Background(), reg, builtins.SinkServe{Listen: "127.0.0.1:0", Path: "events"})
	if err == nil || !strings.Contains(testutil.ErrorText(err), `--path: "events" must start with /`) {
		t.Errorf("a path without / : %v", testutil.ErrorText(err))
	}
	_, err = builtins.ServeSink(context.Background(), reg, builtins.SinkServe{Path: "/", RemoteWrite: "no-port"})
	if err == nil || !strings.Contains(err.Error(), `--remote-write "no-port" is not an address`) {
		t.Errorf("a remote-write address without a port: %v", err)
	}
}

// recordingSink is a sink whose factory records what ServeSink gave it.
type recordingSink struct {
	cfg    *httpsink.Config
	seed   uint64
	faults pipebench.FaultPolicy
	rec    pipebench.Arrivals
}

func (s *recordingSink) Start(_ context.Context, rec pipebench.Arrivals) error {
	s.rec = rec
	return nil
}
func (s *recordingSink) Endpoint() string                               { return "http://127.0.0.1:1" + s.cfg.Path }
func (s *recordingSink) Shutdown(context.Context) error                 { return nil }
func (s *recordingSink) SetFaults(p pipebench.FaultPolicy, _ time.Time) { s.faults = p }
func (s *recordingSink) SeedFaults(seed uint64)                         { s.seed = seed }

// The stand-alone sink is the registry's: a registry whose http sink is
// another plug-in runs that one, with the configuration its factory made
// (the flags' keys set in it), the seed and the faults.
func TestServeSinkBuildsThroughTheRegistry(t *testing.T) {
	var built *recordingSink
	reg := pipebench.NewRegistry()
	def := httpsink.Factory().NewConfig
	f := pipebench.NewFactory("http", "records", func() *httpsink.Config { return def().(*httpsink.Config) },
		func(c *httpsink.Config, _ pipebench.Env) (pipebench.Sink, error) {
			built = &recordingSink{cfg: c}
			return built, nil
		})
	if err := reg.Sinks.Register(f); err != nil {
		t.Fatal(err)
	}
	faults := pipebench.FaultPolicy{ErrorRatio: 0.25, ErrorStatus: 500}
	sk := serve(t, reg, builtins.SinkServe{Listen: "127.0.0.1:9", ListenSet: true, Path: "/in", Seed: 42, Faults: faults})
	if built == nil {
		t.Fatal("the registry's http sink was not built")
	}
	if built.cfg.Listen != "127.0.0.1:9" || built.cfg.Path != "/in" || built.cfg.MaxBodyBytes != def().(*httpsink.Config).MaxBodyBytes {
		t.Errorf("configuration %+v", *built.cfg)
	}
	if built.seed != 42 || built.faults.ErrorRatio != 0.25 || built.rec == nil || sk.Arrivals == nil {
		t.Errorf("seed %d, faults %+v, recorder %v", built.seed, built.faults, built.rec)
	}
	if _, err := builtins.ServeSink(context.Background(), pipebench.NewRegistry(), builtins.SinkServe{Listen: "127.0.0.1:0", Path: "/"}); err == nil ||
		!strings.Contains(testutil.ErrorText(err), `no http sink`) {
		t.Errorf("a registry without the http sink: %v", err)
	}
}
