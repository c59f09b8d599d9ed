//go:build linux

package fdlimit

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// A soft limit below the need is raised to the hard limit; a need above
// the hard limit is an error that says how to raise it.
func TestEnsureRaisesSoftLimitAndExplainsHardLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	if orig.Max < 512 {
		t.Skipf("hard limit %d too low to test", orig.Max)
	}
	low := orig
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(100); err != nil {
		t.Fatal(err)
	}
	if soft, _ := Current(); soft != 256 {
		t.Errorf("a need below the soft limit changed it to %d", soft)
	}
	if err := Ensure(300); err != nil {
		t.Fatal(err)
	}
	if soft, hard := Current(); soft != orig.Max || hard != orig.Max {
		t.Errorf("after Ensure(300) the limits are %d/%d, want %d/%d", soft, hard, orig.Max, orig.Max)
	}
	if orig.Max >= 1<<40 {
		return
	}
	err := Ensure(int(orig.Max) + 10)
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("a need above the hard limit: %v", err)
	}
	for _, want := range []string{"ulimit -n", "LimitNOFILE="} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
