package natse2e

import (
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
)

// registry is every plug-in pipebench ships, as the CLI wires them.
func registry(t *testing.T) *pipebench.Registry {
	t.Helper()
	reg, err := builtins.Registry()
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
