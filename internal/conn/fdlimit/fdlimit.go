// Package fdlimit makes sure the process may open enough file descriptors
// for the connections a driver is asked to hold: it raises the soft
// RLIMIT_NOFILE up to the hard limit when needed, and says how to raise the
// hard limit when even that is too low. On systems other than Linux it does
// nothing.
package fdlimit

import "fmt"

// Margin is what Ensure's callers add to their connection count for the
// descriptors the rest of the process holds (listeners, files, the
// runtime's own).
const Margin = 256

// Error says that the hard limit on open files is lower than what a run
// needs. Its message names the numbers and how to raise the limit.
type Error struct {
	Need, Soft, Hard uint64
}

// Error says how many files are needed, what the limits are and how to
// raise them.
func (e *Error) Error() string {
	return fmt.Sprintf("this run needs about %d open files but the limit is %d (hard limit %d): "+
		"raise it before starting pipebench, e.g. `ulimit -n %d` in the shell, LimitNOFILE=%d in a systemd unit, "+
		"or `--ulimit nofile=%d:%d` for docker; or ask for fewer connections",
		e.Need, e.Soft, e.Hard, e.Need, e.Need, e.Need, e.Need)
}

// Ensure makes the soft limit on open files at least need, raising it (to
// the hard limit, so other parts of the process gain headroom too) only
// when it is lower. It returns an *Error when the hard limit is below
// need. Safe for concurrent use; it changes the whole process's limit.
func Ensure(need int) error {
	if need <= 0 {
		return nil
	}
	return ensure(uint64(need))
}

// Current returns the soft and hard limits on open files (0, 0 where not
// known).
func Current() (soft, hard uint64) { return current() }
