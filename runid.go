package pipebench

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// NewRunID returns a sortable, unique run id: the UTC time t, the kind of
// Result when it is not a run's own ("limit", "merged"), and 4 random
// bytes, like 20261124T100000Z-limit-0a1b2c3d. Every Result's id is minted
// here.
func NewRunID(t time.Time, kind string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := t.UTC().Format("20060102T150405Z") + "-"
	if kind != "" {
		id += kind + "-"
	}
	return id + hex.EncodeToString(b[:])
}

// ExitFor returns the exit code of a Result of status s: 0 passed or
// completed, 99 failed, 98 invalid, 1 otherwise (aborted, error, a run
// still going).
func ExitFor(s Status) int {
	switch s {
	case StatusPassed, StatusCompleted:
		return ExitOK
	case StatusFailed:
		return ExitThresholds
	case StatusInvalid:
		return ExitInvalid
	default:
		return ExitFailure
	}
}

// Judged reports whether a Result of status s describes the system under
// test: it ran its whole plan validly (passed, completed or failed). Tables,
// comparisons and gates hold only judged runs as numbers.
func (s Status) Judged() bool {
	return s == StatusPassed || s == StatusCompleted || s == StatusFailed
}
