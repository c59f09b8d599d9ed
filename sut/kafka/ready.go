package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// waitReady waits until broker b answers metadata naming every broker of
// the cluster (the broker's own word that it is ready), for as long as it
// makes progress: it fails at once when the JVM exits, when the JVM has
// used no CPU and written nothing to its log for ClusterParams.Stall
// (stuck, not slow), or past the
// deadline (start_timeout). While it waits it logs how far the broker
// has come (the time taken, the CPU the JVM used, its log's last line)
// every 10 s (or Stall, if shorter), as a warning from the third time on.
func (c *Cluster) waitReady(ctx context.Context, b *Broker, deadline time.Time, log *slog.Logger) error {
	began := time.Now()
	var lastCPU time.Duration
	var lastLog int64
	lastMove := began
	every := min(10*time.Second, c.p.Stall)
	nextTell := began.Add(every)
	for {
		slice := min(time.Second, c.p.Stall/4, time.Until(deadline))
		if slice <= 0 {
			return fmt.Errorf("Kafka broker %d was still starting when start_timeout (%s) ran out (raise start_timeout on a busy machine); its log:\n%s",
				b.ID, c.p.StartTimeout, b.proc.Tail())
		}
		err := b.proc.WaitReady(ctx, slice, func() bool { return c.answers(b) })
		if err == nil {
			log.Info("Kafka broker ready", "broker", b.ID, "took", time.Since(began).Round(100*time.Millisecond))
			return nil
		}
		if errors.Is(err, childproc.ErrExited) || ctx.Err() != nil {
			return err
		}
		now := time.Now()
		cpu, cpuOK := cpuTime(b.PID())
		size := fileSize(b.Log())
		if (cpuOK && cpu-lastCPU > 200*time.Millisecond) || size != lastLog {
			lastMove = now
		}
		lastCPU, lastLog = cpu, size
		if now.Sub(lastMove) > c.p.Stall {
			return fmt.Errorf("Kafka broker %d stopped making progress: not ready after %s, and it used no CPU and logged nothing for %s; its log:\n%s",
				b.ID, now.Sub(began).Round(time.Second), c.p.Stall, b.proc.Tail())
		}
		if now.After(nextTell) {
			nextTell = now.Add(every)
			level := slog.LevelInfo
			if now.Sub(began) >= 3*every {
				level = slog.LevelWarn
			}
			log.Log(ctx, level, "Kafka broker still starting", "broker", b.ID, "after", now.Sub(began).Round(time.Second),
				"cpu", cpu.Round(100*time.Millisecond), "log", lastLine(b.proc.Tail()))
		}
	}
}

// cpuTime is the CPU time process pid used (user and system), from
// /proc/PID/stat; false where that cannot be read.
func cpuTime(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// After the command: state is field 3, utime 14 and stime 15 (1-based
	// over the whole line), so 11 and 12 here.
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+k) * time.Second / 100, true // USER_HZ is 100 on Linux
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return st.Size()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
