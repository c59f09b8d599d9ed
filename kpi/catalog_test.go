package kpi

import (
	"strings"
	"testing"
)

// The names pipebench computes come from assembling runs, not from a
// list: every KPI a run's phases and total have is known, a name of a
// family pipebench owns that it never computes is refused with what it
// does compute, and a name of another family (an observer's) is left to
// the run.
func TestCatalog(t *testing.T) {
	for _, n := range []string{"sent", "accepted_rate", "latency.p99", "latency.p999", "e2e_latency.p50", "e2e_latency.p99", "pending_at_end", "lost", "missing",
		"unread_at_source", "lost_confirmed", "time_to_complete", "peak_backlog", "pipeline_lost", "drain_time", "backlog.max", "service_time.p99", "errors"} {
		if c, _ := Computed(n); !c {
			t.Errorf("%s is not known to be computed", n)
		}
	}
	if err := CheckName("e2e_latency.p42"); err == nil || !strings.Contains(err.Error(), "e2e_latency.p50") {
		t.Errorf("e2e_latency.p42: %v, want it refused naming what is computed", err)
	}
	for _, n := range []string{"stream_max_msgs.max", "filesystem_buffer_kbytes.max", "memory_mb", "apiserver_latency_seconds.p75"} {
		if err := CheckName(n); err != nil {
			t.Errorf("%s (an observer's): %v", n, err)
		}
	}
}
