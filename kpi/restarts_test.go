package kpi

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// A restart counter that grew during the run makes it invalid, with the
// count and when it was first seen; one that stayed put, or grew before
// the run, does not.
func TestRestartsDuringTheRun(t *testing.T) {
	series := []pipebench.Series{
		{Name: "database_restarts", Points: []pipebench.TimeValue{reading(-5, 1), reading(0, 1), reading(10, 1), reading(31, 2), reading(40, 3)}},
		{Name: "apiserver_restarts", Points: []pipebench.TimeValue{reading(0, 0), reading(40, 0)}},
		{Name: "database_connections", Points: []pipebench.TimeValue{reading(0, 1), reading(40, 9)}},
	}
	got := Restarts(series, t0, t0.Add(45*time.Second))
	if len(got) != 1 || !strings.Contains(got[0], "database restarted 2 time(s)") || !strings.Contains(got[0], "31s into it") {
		t.Errorf("reasons %q", got)
	}
}
