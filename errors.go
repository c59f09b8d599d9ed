package pipebench

import (
	"errors"
	"sort"
)

// Exit codes of the pipebench command.
const (
	ExitOK      = 0 // ran and every threshold held
	ExitFailure = 1 // pipebench itself failed
	ExitUsage   = 2 // bad usage or bad scenario
	// ExitUndecided: `gate` could not decide every KPI it judges (too
	// few runs, too erratic, an interval that reaches past the
	// tolerance): no evidence that the candidate did not regress. CI
	// treats it as a failure, as any non-zero code; --allow-undecided
	// passes it.
	ExitUndecided  = 97
	ExitInvalid    = 98 // the generator could not hold the asked rate
	ExitThresholds = 99 // thresholds failed
	// ExitCut: cut short by a second signal (128 + SIGINT, as shells
	// report it); the partial Result was still kept.
	ExitCut = 130
)

// Error is an error meant for a person: what went wrong, a hint saying what
// to do, and the exit code it maps to. Only cmd/pipebench turns it into an
// exit.
type Error struct {
	Code int    // one of the Exit* constants
	Msg  string // what went wrong, in plain words
	Hint string // what to do about it; may be empty
	Err  error  // the cause, if any
}

// Error returns the message followed by the cause.
func (e *Error) Error() string {
	s := e.Msg
	if e.Err != nil {
		if s != "" {
			s += ": "
		}
		s += e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// UsageError returns an Error with ExitUsage.
func UsageError(msg, hint string, cause error) *Error {
	return &Error{Code: ExitUsage, Msg: msg, Hint: hint, Err: cause}
}

// ExitCode returns the exit code err maps to: an *Error's Code, ExitOK for
// nil, ExitFailure otherwise.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitFailure
}

func sortStrings(s []string) { sort.Strings(s) }

// Unreached marks err as the reason a driver could not reach its target at
// all when it started (refused, unreachable, a TLS or protocol mismatch):
// the runner then ends the run as invalid (exit 98), since nothing it could
// measure would describe the system under test.
func Unreached(err error) error {
	if err == nil {
		return nil
	}
	return &unreachedError{err}
}

type unreachedError struct{ err error }

func (e *unreachedError) Error() string { return e.err.Error() }
func (e *unreachedError) Unwrap() error { return e.err }

// IsUnreached reports whether err, or an error it wraps, was marked by
// Unreached.
func IsUnreached(err error) bool {
	var u *unreachedError
	return errors.As(err, &u)
}
