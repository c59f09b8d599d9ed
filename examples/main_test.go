package examples_test

import (
	"os"
	"testing"

	"github.com/pipebench/pipebench/internal/testkit/children"
)

func TestMain(m *testing.M) {
	// The test binary is also the embedded services' child processes
	// (the health-event service's document store, collectors).
	children.MaybeRun()
	os.Exit(m.Run())
}
