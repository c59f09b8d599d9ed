// Package truth measures pipebench's latency error against a server of
// known behaviour: every request is held until a fixed time after it
// arrived, every Nth is answered 503, and the server counts exactly what it
// received and records how long it held each request (the truth: from when
// the request reached the server's socket, by the kernel's receive
// timestamp on Linux, to the write of its answer; the server's own
// scheduling and timer delays are in it, only the loopback is not). Run it
// with
//
//	go test -run '^$' -bench Truth -benchtime 1x ./bench/truth/
//
// It prints, at several rates and in one interleaved pass (before, user,
// after, runner; twice), the truth's quantiles, pipebench's, and the error:
//
//   - before: the pacer on a Go timer (schedule.Coarse) and latency from the
//     scheduled time including the generator's own lateness (as pipebench
//     measured before the Precise clock and the wait/service split);
//   - user: the Precise clock (a timerfd the runtime's poller watches, then
//     a spin) and the recorder's latency (wait + service), each answer
//     timed when the generator read it (kernel_timestamps: false);
//   - after: the same, each answer timed when it reached the machine (the
//     kernel's receive timestamp; the default), the wait until the
//     generator read it reported apart as read lag;
//   - runner: the whole runner (scenario, generator, http driver, recorder).
//
// before, user and after drive the pacer, the http driver and the recorder
// with one goroutine per send (Driver.Send), as the open-model executor did
// before it handed sends to the driver's connections (AsyncSender); runner
// shows the executor as it is. The loopback and parsing on both sides
// (tens of µs) show as a small positive error.
package truth
