package schedule

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkClocks drives the pacer with each clock, interleaved (Coarse,
// the Sleeper, Precise, twice at each rate), for one second each and reports
// how late sends were emitted and the process CPU it cost. Read it on an
// idle machine; a shared one shows its neighbours.
func BenchmarkClocks(b *testing.B) {
	for b.Loop() {
		for _, rate := range []float64{500, 2000, 10000, 40000} {
			for _, round := range []int{1, 2} {
				for _, c := range []Clock{Coarse, Sleeper, Precise} {
					name := map[Clock]string{Coarse: "coarse", Sleeper: "sleeper", Precise: "precise"}[c]
					p, _ := New(constant(rate, time.Second))
					lates := make([]time.Duration, 0, int(rate))
					cpu0 := cpuTime()
					start := time.Now()
					RunWith(context.Background(), p, start, c, func(_ uint64, at time.Time) bool {
						lates = append(lates, time.Since(at))
						return true
					})
					cpu := cpuTime() - cpu0
					el := time.Since(start)
					slices.Sort(lates)
					fmt.Printf("rate %6.0f/s round %d %-7s late p50 %6dµs p99 %6dµs max %6dµs cpu %.3f cores\n",
						rate, round, name, lates[len(lates)/2].Microseconds(), lates[len(lates)*99/100].Microseconds(),
						lates[len(lates)-1].Microseconds(), cpu.Seconds()/el.Seconds())
				}
			}
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}
