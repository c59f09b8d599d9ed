package scenariotest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/pipebench/pipebench"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	"github.com/pipebench/pipebench/payload"
)

// A scenario written in the test runs through the real runner against a
// loopback server, which receives what the Result says was sent.
func TestRun(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer srv.Close()
	reg := Registry(t, payload.EventFactory(), httpdriver.Factory())
	res := Run(t, reg, "run.yaml", fmt.Sprintf(`
name: run
target: {driver: http, url: %q}
workload: {generator: event, size: 64}
phases:
  - {name: hold, duration: 500ms, rate: 40/s}
`, srv.URL))
	sent, _ := res.Total.Get("sent")
	if sent < 10 || int64(sent) != got.Load() {
		t.Errorf("sent %v, the server received %d", sent, got.Load())
	}
}

// A value that is not a plug-in's factory, or a name twice, fails the
// test.
func TestRegistryRefuses(t *testing.T) {
	for name, factories := range map[string][]any{
		"not a factory": {"event"},
		"twice":         {payload.EventFactory(), payload.EventFactory()},
	} {
		ft := &fatalTB{TB: t}
		func() {
			defer func() { recover() }()
			Registry(ft, factories...)
		}()
		if !ft.failed {
			t.Errorf("%s: accepted", name)
		}
	}
	if reg := Registry(t, payload.EventFactory()); len(reg.Generators.Names()) != 1 {
		t.Errorf("generators %v", reg.Generators.Names())
	}
	var _ *pipebench.Registry = Registry(t)
}

type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatal(...any) {
	f.failed = true
	panic("fatal")
}
