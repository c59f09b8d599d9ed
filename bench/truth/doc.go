// Package truth measures pipebench's latency error against a server of
// known behaviour: every request is held for a fixed time, every Nth is
// answered 503, and the server counts exactly what it received and how long
// it held each request (the truth). Run it with
//
//	go test -run '^$' -bench Truth -benchtime 1x ./bench/truth/
//
// It prints, at several rates and in one interleaved pass (before, sleeper,
// after, runner; twice), the truth's quantiles, pipebench's, and the error:
//
//   - before: the pacer on a Go timer (schedule.Coarse) and latency from the
//     scheduled time including the generator's own lateness (as pipebench
//     measured before the Precise clock and the wait/service split);
//   - sleeper: the recorder's latency with the pacer's earlier precise
//     clock (schedule.Sleeper: nanosleep on a locked thread, then a spin);
//   - after: the Precise clock (a timerfd the runtime's poller watches, then
//     a spin) and the recorder's latency (wait + service);
//   - runner: the whole runner (scenario, generator, http driver, recorder).
//
// before, sleeper and after drive the pacer, the http driver and the recorder
// with one goroutine per send (Driver.Send), as the open-model executor did
// before it handed sends to the driver's connections (AsyncSender); runner
// shows the executor as it is. The truth is the
// server's hold time (request read to answer written): the loopback and
// parsing on both sides (tens of µs) show as a small positive error.
package truth
