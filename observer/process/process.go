// Package procobs observes processes: resident memory and CPU time per
// instance, read from /proc.
package procobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/procfs"

	"github.com/pipebench/pipebench"
)

// Config chooses the processes: a pid, the process listening on a local
// TCP port, or (both empty) every process of the embedded system under test;
// Self adds pipebench's own.
type Config struct {
	PID  int    `yaml:"pid" json:"pid,omitempty"`
	Port int    `yaml:"port" json:"port,omitempty"`
	Name string `yaml:"name" json:"name,omitempty"` // instance label; default pid-N / port-N
	// Self also observes pipebench's own process, as instance
	// "pipebench" (the generator, the sink and what runs inside it), so
	// that a soak shows the generator's memory beside the system's.
	Self bool `yaml:"self" json:"self,omitempty"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.PID < 0 {
		errs = append(errs, fmt.Errorf("pid: must be a process id"))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port: %d is not a TCP port", c.Port))
	}
	if c.PID > 0 && c.Port > 0 {
		errs = append(errs, fmt.Errorf("pid: give pid or port, not both"))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "process" observer.
func Factory() pipebench.Factory[pipebench.Observer] {
	return pipebench.NewFactory("process", "resident memory and CPU of processes (by pid, by listening port, or the embedded system's)",
		func() *Config { return &Config{} },
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) { return New(*c, env.Instances) })
}

type proc struct {
	name    string
	pid     int
	current func() int // the pid now, for a process that may be restarted
}

// Observer reads /proc for its processes.
type Observer struct {
	fs    procfs.FS
	procs []proc
}

var _ pipebench.Observer = (*Observer)(nil)

// New resolves the processes to observe.
func New(c Config, instances []pipebench.Instance) (*Observer, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, fmt.Errorf("process observer needs /proc: %w", err)
	}
	o := &Observer{fs: fs}
	switch {
	case c.PID > 0:
		o.procs = []proc{{name: nameOr(c.Name, "pid-"+strconv.Itoa(c.PID)), pid: c.PID}}
	case c.Port > 0:
		pid, err := ListeningPID(fs, c.Port)
		if err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("no process listens on port %d", c.Port), "start the system under test first, or give its pid", err)
		}
		o.procs = []proc{{name: nameOr(c.Name, "port-"+strconv.Itoa(c.Port)), pid: pid}}
	default:
		for _, in := range instances {
			if in.PID > 0 {
				o.procs = append(o.procs, proc{name: in.Name, pid: in.PID, current: in.CurrentPID})
			}
		}
	}
	if c.Self {
		o.procs = append(o.procs, proc{name: "pipebench", pid: os.Getpid()})
	}
	if len(o.procs) == 0 {
		return nil, pipebench.UsageError("the process observer has no process to watch", "give pid or port, or use it with an embedded sut", nil)
	}
	return o, nil
}

func nameOr(n, def string) string {
	if n != "" {
		return n
	}
	return def
}

// Observe returns memory_rss_bytes (gauge) and cpu_seconds (counter) per
// process, labelled instance.
func (o *Observer) Observe(_ context.Context, at time.Time) ([]pipebench.Point, error) {
	var pts []pipebench.Point
	var errs []error
	for _, p := range o.procs {
		if p.current != nil {
			p.pid = p.current() // restarted: its new process
		}
		pr, err := o.fs.Proc(p.pid)
		if err != nil {
			errs = append(errs, fmt.Errorf("process %s (pid %d): %w", p.name, p.pid, err))
			continue
		}
		st, err := pr.Stat()
		if err != nil {
			errs = append(errs, fmt.Errorf("process %s (pid %d) has exited or is unreadable: %w", p.name, p.pid, err))
			continue
		}
		lb := map[string]string{"instance": p.name}
		pts = append(pts,
			pipebench.Point{Name: "memory_rss_bytes", Labels: lb, Kind: pipebench.KindGauge, At: at, Value: float64(st.ResidentMemory())},
			pipebench.Point{Name: "cpu_seconds", Labels: lb, Kind: pipebench.KindCounter, At: at, Value: st.CPUTime()})
	}
	return pts, errors.Join(errs...)
}

// ListeningPID finds the process listening on 127.0.0.1/0.0.0.0/:: port:
// the socket inode from /proc/net/tcp{,6}, then the process holding it.
func ListeningPID(fs procfs.FS, port int) (int, error) {
	inodes := map[uint64]bool{}
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			continue
		}
		for _, l := range lines {
			if l.LocalPort == uint64(port) && l.St == 10 { // 10 = LISTEN
				inodes[l.Inode] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no listening socket on port %d", port)
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		targets, err := p.FileDescriptorTargets()
		if err != nil {
			continue
		}
		for _, t := range targets {
			var ino uint64
			if _, err := fmt.Sscanf(t, "socket:[%d]", &ino); err == nil && inodes[ino] {
				return p.PID, nil
			}
		}
	}
	return 0, fmt.Errorf("the socket on port %d belongs to no process this user can see (pid %d)", port, os.Getpid())
}
