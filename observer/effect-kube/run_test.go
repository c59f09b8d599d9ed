package effectkube_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	effectkube "github.com/pipebench/pipebench/observer/effect-kube"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/runner"
	httpsink "github.com/pipebench/pipebench/sink/http"
)

// watchRunning reports whether an effect-kube watch goroutine is alive.
func watchRunning() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Contains(string(buf), "observer/effect-kube.(*Observer).watch(")
}

// The runner closes its observers after the last observation: the
// effect-kube observer's watch on a real kube-apiserver was running
// during the run and is gone once runner.Run returns.
func TestRunnerClosesTheWatch(t *testing.T) {
	c := kubetest.Start(t, kubetest.Options{})
	if watchRunning() {
		t.Fatal("a watch runs before the run")
	}
	reg := scenariotest.Registry(t, payload.EventFactory(), httpdriver.Factory(), httpsink.Factory(), effectkube.Factory())
	plan := scenariotest.Plan(t, reg, "close.yaml", fmt.Sprintf(`
name: close
target: {driver: http}
sink: {type: http}
interval: 200ms
observers:
  - {type: effect-kube, kubeconfig: %q}
phases:
  - {name: a, duration: 600ms, rate: 50/s}
`, c.Kubeconfig))
	var during atomic.Bool
	res, err := runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg, Progress: func(runner.Progress) {
		if watchRunning() {
			during.Store(true)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Status == pipebench.StatusAborted {
		t.Fatalf("run %s: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	if !during.Load() {
		t.Fatal("no watch goroutine was seen during the run: the check would not see one after it either")
	}
	// Close waits for the watch to end; its goroutine may still be
	// unwinding for a moment.
	testutil.Eventually(t, 5*time.Second, func() bool { return !watchRunning() }, "the effect-kube watch still runs after the run: the runner did not close the observer")
}
