// Package resulttest holds Results built by hand for tests (reporters,
// stores, the dashboard, the history commands) and golden-file checks with
// an -update flag.
package resulttest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Golden compares got with testdata/NAME.golden, or rewrites it with -update.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/... -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended)\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func k(name string, v float64, u pipebench.Unit, labels ...string) pipebench.KPI {
	kp := pipebench.KPI{Name: name, Value: v, Unit: u}
	if len(labels) > 0 {
		kp.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			kp.Labels[labels[i]] = labels[i+1]
		}
	}
	return kp
}

// Pipeline returns a three-phase collector run (sustained, backpressure,
// recovery) of the given version, with numbers shaped like the reference.
func Pipeline(version, caseName string, accepted float64) *pipebench.Result {
	phase := func(i int, name string, acc, exp, queue, mem0, mem1 float64, lost float64) pipebench.PhaseResult {
		st := t0.Add(time.Duration(i) * time.Minute)
		return pipebench.PhaseResult{Name: name, Started: st, Ended: st.Add(time.Minute), KPIs: []pipebench.KPI{
			k("target_rate", acc, pipebench.UnitPerSecond), k("sent_rate", acc, pipebench.UnitPerSecond),
			k("accepted_rate", acc, pipebench.UnitPerSecond), k("sent", acc*60, pipebench.UnitCount),
			k("dropped", 0, pipebench.UnitCount),
			k("errors", 0, pipebench.UnitCount, "class", "refused"), k("errors", 0, pipebench.UnitCount, "class", "timeout"), k("errors", 0, pipebench.UnitCount, "class", "error"),
			k("latency.p50", 0.42, pipebench.UnitMillis), k("latency.p75", 0.61, pipebench.UnitMillis), k("latency.p90", 0.9, pipebench.UnitMillis),
			k("latency.p95", 1.3, pipebench.UnitMillis), k("latency.p99", 4.2, pipebench.UnitMillis), k("latency.p999", 12.5, pipebench.UnitMillis), k("latency.max", 31, pipebench.UnitMillis),
			k("receiver_accepted_rate", acc, pipebench.UnitPerSecond, "instance", "collector-0"),
			k("exporter_sent_rate", exp, pipebench.UnitPerSecond, "instance", "collector-0"),
			k("exporter_queue_size.max", queue, pipebench.UnitCount, "instance", "collector-0"),
			k("memory_mb", mem0, pipebench.UnitMB, "instance", "collector-0"), k("memory_mb", mem1, pipebench.UnitMB, "instance", "collector-1"),
			k("cpu_cores", 0.9, pipebench.UnitCores, "instance", "collector-0"), k("cpu_cores", 1.1, pipebench.UnitCores, "instance", "collector-1"),
			k("delivered_rate", exp, pipebench.UnitPerSecond), k("delivered", exp*60, pipebench.UnitCount),
			k("e2e_latency.p50", 210, pipebench.UnitMillis), k("e2e_latency.p99", 980, pipebench.UnitMillis),
			k("lost", lost, pipebench.UnitCount), k("duplicates", 0, pipebench.UnitCount), k("reordered", 17, pipebench.UnitCount), k("faulted", 0, pipebench.UnitCount),
		}}
	}
	r := &pipebench.Result{Schema: pipebench.ResultSchema,
		Manifest: pipebench.Manifest{RunID: "20261122T100000Z-" + version, Tool: "pipebench", ToolVersion: "test", Scenario: "otel-traces",
			Version: version, Case: caseName, Item: "span", Started: t0, Ended: t0.Add(3*time.Minute + 20*time.Second), Status: pipebench.StatusFailed,
			Reasons: []string{`threshold "lost == 0" failed in phase backpressure: lost is 120, not == 0`}},
		Phases: []pipebench.PhaseResult{
			phase(0, "sustained", accepted, accepted, 0, 137, 139, 0),
			phase(1, "backpressure", accepted, accepted*0.3, 509, 1929, 1726, 120),
			phase(2, "recovery", accepted, accepted*1.4, 12, 880, 870, 0),
		},
		Thresholds: []pipebench.ThresholdResult{
			{Expr: "latency.p99 < 500ms", Phase: "sustained", Passed: true, Observed: 4.2, Limit: 500},
			{Expr: "lost == 0", Phase: "backpressure", Passed: false, Observed: 120, Limit: 0, Message: "lost is 120, not == 0"},
		},
		Detections: []pipebench.Detection{{Detector: "backlog_growth", Series: `exporter_queue_size{instance="collector-0"}`, Phase: "backpressure",
			Began: t0.Add(70 * time.Second), Message: "exporter_queue_size grew by 509 in phase backpressure (8.5 items/s)", Value: 8.5}},
	}
	for i := range 3 {
		r.Series = append(r.Series, pipebench.Series{Name: "exporter_queue_size", Labels: map[string]string{"instance": "collector-0"}, Unit: pipebench.UnitCount,
			Points: []pipebench.TimeValue{{T: t0.Add(time.Duration(i) * time.Minute), V: float64(i * 100)}}})
	}
	return r
}
