package execute_test

import (
	"os"
	"testing"

	"github.com/pipebench/pipebench/builtins"
)

func TestMain(m *testing.M) {
	builtins.MaybeRunChild() // the test binary is also the health-event service's document store
	os.Exit(m.Run())
}
