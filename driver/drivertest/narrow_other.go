//go:build !linux

package drivertest

import (
	"net"
	"testing"
)

// Narrow is Linux only (it sets a listener's accept backlog); see
// narrow_linux.go.
type Narrow struct{ Addr string }

// Open is Linux only.
func (*Narrow) Open() int { return 0 }

// NarrowListener skips the test: Linux only.
func NarrowListener(t *testing.T, upstream string) *Narrow {
	t.Skip("a listener with a backlog of 1 is set up on Linux only")
	return nil
}

// FullListener skips the test: Linux only.
func FullListener(t *testing.T) string {
	t.Skip("a listener with a backlog of 1 is set up on Linux only")
	return ""
}

// ListenBacklog skips the test: Linux only.
func ListenBacklog(t *testing.T, n int) net.Listener {
	t.Skip("a listener's backlog is set on Linux only")
	return nil
}
