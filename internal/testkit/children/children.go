// Package children is for tests only: the TestMain of a test package that
// runs scenarios with embedded systems under test calls MaybeRun first, so
// that the test binary is itself every child those systems start (the
// light ones pipebench runs from itself, and the heavy ones pipebench-sut
// carries): a test needs no program built beside it.
package children

import (
	"github.com/pipebench/pipebench/sut/all"
	"github.com/pipebench/pipebench/sut/heavy"
)

// MaybeRun runs, and then exits, the child this test binary was started to
// be, if any; otherwise it returns at once.
func MaybeRun() {
	all.MaybeRunChild()
	heavy.MaybeRunChild()
}
