// Package sinktest starts pipebench's own sinks for tests of other
// packages, so that a test counts what it sent at a real receiver.
package sinktest

import (
	"context"
	"testing"

	"github.com/pipebench/pipebench/kpi"
	httpsink "github.com/pipebench/pipebench/sink/http"
)

// HTTP starts the HTTP sink on a free loopback port with its defaults
// (accept everything on any path, no faults) and returns it with what it
// counts: one phase, open from the start. It stops with the test.
func HTTP(tb testing.TB) (*httpsink.Sink, *kpi.Arrivals) {
	tb.Helper()
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 1)
	sink, err := httpsink.New(httpsink.Params{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := sink.Start(context.Background(), arr); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sink.Shutdown(context.Background()) })
	return sink, arr
}
