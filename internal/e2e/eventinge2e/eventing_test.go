// Package eventinge2e runs the eventing reference's cases end to end: the
// event proxy in front of a three-node JetStream cluster, each failure
// type provoked and detected by name.
package eventinge2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/report/markdown"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/sut/eventproxy"
)

// failureTypes are the detectors that name the eventing reference's
// failure types.
var failureTypes = []string{"storage_full_node", "storage_full_all", "dispatch_stalled", "shortfall", "node_restart"}

// detected returns which failure types the suite table's Failure type
// column names for a run (a shortfall after a crash is the crash's).
func detected(res *pipebench.Result) []string {
	var out []string
	for _, d := range markdown.FailingDetectors(res) {
		if slices.Contains(failureTypes, d) {
			out = append(out, d)
		}
	}
	return out
}

// Every case of the eventing suite, scaled down, on the three-node cluster
// behind the proxy: each provokes its failure type, which is detected by
// name, and no other failure type is (a false positive fails the test).
// The rates below the consumer's are clean; a rate drop is shown as the
// reference shows it. Counts are checked against the proxy's own metrics:
// what pipebench had answered 2xx is exactly what the proxy published.
func TestEventingFailureTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("eight runs of a 3-node JetStream cluster behind the proxy")
	}
	// Half the builtins' storage, so that it fills in half the time.
	halfStorage := func(p *pipebench.Plan) {
		cfg := *p.SUT.Config.(*eventproxy.Config)
		cfg.NATS.MaxStore /= 2
		cfg.Stream.MaxBytes /= 2
		p.SUT.Config = &cfg
	}
	for _, c := range []struct {
		name string
		dur  time.Duration
		want []string
	}{
		{"kyma-eventing-250", 8 * time.Second, nil},
		{"kyma-eventing-500", 12 * time.Second, []string{"storage_full_all"}},
		{"kyma-eventing-f1", 12 * time.Second, []string{"storage_full_node"}},
		{"kyma-eventing-f3", 18 * time.Second, []string{"dispatch_stalled"}},
		{"kyma-eventing-f4", 12 * time.Second, []string{"shortfall"}},
		{"kyma-eventing-restart", 12 * time.Second, []string{"node_restart"}},
		{"kyma-eventing-drop", 20 * time.Second, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := suitetest.RunBuiltin(t, c.name, c.dur, 500*time.Millisecond, 3*time.Second, halfStorage)
			got := detected(res)
			var msgs []string
			for _, d := range res.Detections {
				msgs = append(msgs, d.Detector+": "+d.Message)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("failure types %v, want %v; detections:\n%s", got, c.want, strings.Join(msgs, "\n"))
			}
			accepted, _ := res.Total.Get("accepted")
			published, _ := res.Total.Get("handled.total", "instance", "eventproxy-0")
			if accepted != published {
				t.Errorf("pipebench had %v answered 2xx, the proxy counted %v published", accepted, published)
			}
			if c.name == "kyma-eventing-drop" {
				before, ok1 := res.Total.Get("rate_before_drop")
				after, ok2 := res.Total.Get("rate_after_drop")
				if !ok1 || !ok2 || before < 250 || after > 110 {
					t.Errorf("rate drop: before %v (%v), after %v (%v); want about 290 and 70; detections:\n%s", before, ok1, after, ok2, strings.Join(msgs, "\n"))
				}
			}
		})
	}
}
