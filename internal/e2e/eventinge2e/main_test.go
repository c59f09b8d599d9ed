package eventinge2e

import (
	"os"
	"testing"

	"github.com/pipebench/pipebench/builtins"
)

func TestMain(m *testing.M) {
	builtins.MaybeRunChild() // the test binary is also the nats-server nodes and the event proxy
	os.Exit(m.Run())
}
