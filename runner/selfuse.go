package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/pipebench/pipebench/kpi"
)

// selfUse is a reading of what pipebench's own process has spent so far:
// its CPU time (user and system, getrusage) and how long its threads were
// ready to run but waited for a CPU (the run delay of schedstat, summed
// over /proc/self/task; 0 where the system does not say).
type selfUse struct {
	cpu, wait time.Duration
	ok        bool
}

func readSelfUse() selfUse {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return selfUse{}
	}
	u := selfUse{cpu: time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)), ok: true}
	u.wait = runDelay()
	return u
}

// runDelay sums the run delay (schedstat's second field, ns) of the
// process's threads: what they waited on a run queue.
func runDelay() time.Duration {
	if runtime.GOOS != "linux" {
		return 0
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
			sum += v
		}
	}
	return time.Duration(sum)
}

// since is what the process spent from u0 to u: nil when either reading
// failed.
func (u selfUse) since(u0 selfUse) *kpi.GeneratorUse {
	if !u.ok || !u0.ok {
		return nil
	}
	return &kpi.GeneratorUse{CPU: max(u.cpu-u0.cpu, 0), Wait: max(u.wait-u0.wait, 0), CPUs: runtime.GOMAXPROCS(0)}
}
