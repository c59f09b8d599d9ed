package procobs

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

func observe(t *testing.T, o *Observer) map[string]float64 {
	pts, err := o.Observe(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, p := range pts {
		m[p.Name] = p.Value
	}
	return m
}

func TestSelfByPIDAndPort(t *testing.T) {
	o, err := New(Config{PID: os.Getpid()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// burn a little CPU so cpu_seconds moves
	x := 0
	for start := time.Now(); time.Since(start) < 150*time.Millisecond; {
		x++
	}
	_ = x
	m := observe(t, o)
	if m["memory_rss_bytes"] < 1<<20 || m["cpu_seconds"] <= 0 {
		t.Errorf("self: %v", m)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fs, _ := procfs.NewDefaultFS()
	pid, err := ListeningPID(fs, ln.Addr().(*net.TCPAddr).Port)
	if err != nil || pid != os.Getpid() {
		t.Errorf("listening pid %d %v, want %d", pid, err, os.Getpid())
	}
}

func TestChildProcessAndItsExit(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	o, err := New(Config{}, []pipebench.Instance{{Name: "child", PID: cmd.Process.Pid}})
	if err != nil {
		t.Fatal(err)
	}
	// Right after exec the new image may not be mapped yet: wait for it.
	var m map[string]float64
	testutil.Poll(3*time.Second, func() bool { m = observe(t, o); return m["memory_rss_bytes"] > 0 })
	if m["memory_rss_bytes"] <= 0 {
		t.Errorf("child: %v", m)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := o.Observe(context.Background(), time.Now()); err == nil {
		t.Error("an exited process must be reported")
	}
	if _, err := New(Config{Port: 1}, nil); err == nil {
		t.Error("port with no listener accepted")
	}
}

// self: true adds pipebench's own process, as instance pipebench, to the
// system's.
func TestSelfBesideTheSystem(t *testing.T) {
	o, err := New(Config{Self: true}, []pipebench.Instance{{Name: "nats-0", PID: os.Getppid()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.procs) != 2 || o.procs[1].name != "pipebench" || o.procs[1].pid != os.Getpid() {
		t.Errorf("processes %+v", o.procs)
	}
}

// A process restarted under the observer (a node killed and started
// again) is followed by its current pid.
func TestRestartedProcessFollowed(t *testing.T) {
	pid := 999999999 // no such process: the one that was killed
	o, err := New(Config{}, []pipebench.Instance{{Name: "nats-1", PID: pid, CurrentPID: func() int { return pid }}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Observe(context.Background(), time.Now()); err == nil {
		t.Fatal("observed a process that is gone")
	}
	pid = os.Getpid() // started again
	if m := observe(t, o); m["memory_rss_bytes"] <= 0 {
		t.Errorf("after the restart: %v", m)
	}
}
