package eventinge2e

import (
	"os"
	"testing"

	"github.com/pipebench/pipebench/sut/all"
)

func TestMain(m *testing.M) {
	all.MaybeRunChild() // the test binary is also the nats-server nodes and the event proxy
	os.Exit(m.Run())
}
