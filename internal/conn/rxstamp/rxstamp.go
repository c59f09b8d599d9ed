// Package rxstamp reads a socket with the time the kernel received its
// bytes (SO_TIMESTAMPNS), for the drivers that time an answer from its
// arrival at the machine rather than from when they got round to reading
// it: the HTTP/1.1 driver's event loops and pipelined reader, the grpc
// driver's own client. Linux only; elsewhere Enable says no and nothing is
// stamped.
package rxstamp

import "time"

// Arrived turns a kernel receive time (Unix nanoseconds) into a time on the
// process's monotonic clock: now less how long ago the kernel received it.
// It is zero when rx is 0 or not within the last 10 seconds (the wall clock
// was stepped meanwhile).
func Arrived(rx int64, now time.Time) time.Time {
	if rx == 0 {
		return time.Time{}
	}
	ago := now.UnixNano() - rx
	if ago < 0 || ago > int64(10*time.Second) {
		return time.Time{}
	}
	return now.Add(-time.Duration(ago))
}
