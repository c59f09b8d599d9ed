package otelcol_test

import (
	"os"
	"testing"

	"github.com/pipebench/pipebench/internal/testkit/children"
)

// TestMain lets the test binary be the collector child (and every other
// child a scenario starts), as pipebench-sut is for pipebench; the
// collector package linked here also gives validate its own check of a
// config_file in this process.
func TestMain(m *testing.M) {
	children.MaybeRun()
	os.Exit(m.Run())
}
