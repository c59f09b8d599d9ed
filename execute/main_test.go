package execute_test

import (
	"os"
	"testing"

	"github.com/pipebench/pipebench/internal/testkit/children"
)

func TestMain(m *testing.M) {
	children.MaybeRun() // the test binary is also the health-event service's document store
	os.Exit(m.Run())
}
