package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

// A test binary carries the toolchain's build info: the version given at
// link time wins, the Go version is the running one, and every line is
// there.
func TestRead(t *testing.T) {
	i := Read("v1.2.3")
	if i.Version != "v1.2.3" || i.Go != runtime.Version() || i.Module == "" {
		t.Errorf("%+v", i)
	}
	s := i.String()
	for _, want := range []string{"pipebench v1.2.3\n", "module:  ", "commit:  ", "go:      " + runtime.Version()} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in:\n%s", want, s)
		}
	}
	if Read("").Version == "" || Read("dev").Version == "" {
		t.Error("no version without one linked")
	}
}
