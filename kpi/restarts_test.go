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
	t0 := time.Unix(1000, 0)
	at := func(s int, v float64) pipebench.TimeValue {
		return pipebench.TimeValue{T: t0.Add(time.Duration(s) * time.Second), V: v}
	}
	series := []pipebench.Series{
		{Name: "database_restarts", Points: []pipebench.TimeValue{at(-5, 1), at(0, 1), at(10, 1), at(31, 2), at(40, 3)}},
		{Name: "apiserver_restarts", Points: []pipebench.TimeValue{at(0, 0), at(40, 0)}},
		{Name: "database_connections", Points: []pipebench.TimeValue{at(0, 1), at(40, 9)}},
	}
	got := Restarts(series, t0, t0.Add(45*time.Second))
	if len(got) != 1 || !strings.Contains(got[0], "database restarted 2 time(s)") || !strings.Contains(got[0], "31s into it") {
		t.Errorf("reasons %q", got)
	}
}
