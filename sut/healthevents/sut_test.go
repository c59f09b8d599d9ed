package healthevents_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/children"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	. "github.com/pipebench/pipebench/sut/healthevents"
)

// TestMain lets the test binary be the service's child (and its store's),
// as pipebench-sut is for pipebench.
func TestMain(m *testing.M) {
	children.MaybeRun()
	os.Exit(m.Run())
}

// The system under test runs the service as a child process: it starts,
// serves on a socket in the run's folder when listen is not given, lists
// its processes (the service's own, apart from pipebench's), and a bad
// configuration is refused naming its keys.
func TestFactoryDefaultsToASocketInTheRunDirectory(t *testing.T) {
	dir := t.TempDir()
	sut, err := Factory().New(nil, pipebench.Env{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, sut.Start, sut.Shutdown)
	if in := sut.Instances(); len(in) == 0 || in[0].PID == 0 || in[0].PID == os.Getpid() {
		t.Errorf("instances %+v: want the service's own process first", in)
	}
	if want := "unix://" + filepath.Join(dir, "healthevents.sock"); sut.Endpoint() != want {
		t.Errorf("endpoint %q, want %q", sut.Endpoint(), want)
	}
	if _, err := Factory().New(&Config{Listen: "somewhere", HTTPListen: "x", EffectRate: -1, QueueSize: 0}, pipebench.Env{}); err == nil ||
		!strings.Contains(testutil.ErrorText(err), "effect_rate:") || !strings.Contains(testutil.ErrorText(err), "listen:") {
		t.Errorf("bad config error: %v", err)
	}
}
