package kafkae2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/sut/all"
	"github.com/pipebench/pipebench/sut/kafka"
)

// A broker frozen in the middle of the load (SIGSTOP: its process holds
// its connections and answers nothing, as a broker in a long GC pause or
// on a hung disk does): the run does not hang on it. The sends made to
// it end as timeouts at the driver's delivery timeout, the run ends
// within that of the load's end, and its verdict says what happened; the
// records acknowledged before the freeze are counted, none twice.
func TestFrozenBrokerEndsTheRun(t *testing.T) {
	kafkatest.Need(t)
	c, err := kafka.StartCluster(context.Background(), kafka.ClusterParams{
		Dir: t.TempDir(), Heap: "384m", JVMOpts: []string{"-XX:TieredStopAtLevel=1"}, StartTimeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	broker := c.Brokers()[0]
	defer func() {
		syscall.Kill(broker.PID(), syscall.SIGCONT)
		c.Stop(context.Background())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := kafka.CreateTopics(ctx, c.Bootstrap(), 1, []kafka.Topic{{Name: "frozen", Partitions: 2}}); err != nil {
		t.Fatal(err)
	}
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	plan := scenariotest.Plan(t, reg, "frozen.yaml", `name: frozen
target:
  driver: kafka
  bootstrap: `+c.Bootstrap()+`
  topic: frozen
  acks: all
  timeout: 4s
workload: {generator: event, size: 200}
interval: 1s
phases:
  - {name: load, duration: 8s, rate: 200/s}
thresholds: ["errors == 0"]
`)
	// Freeze the broker once the load has had its records acknowledged
	// for a few seconds.
	frozen := make(chan time.Time, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	held := func() int64 {
		offs, err := adm.ListEndOffsets(ctx, "frozen")
		if err != nil {
			return 0
		}
		var n int64
		offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	go func() {
		if !testutil.Poll(60*time.Second, func() bool { return held() >= 400 }) {
			return
		}
		syscall.Kill(broker.PID(), syscall.SIGSTOP)
		frozen <- time.Now()
	}()
	start := time.Now()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var at time.Time
	select {
	case at = <-frozen:
	default:
		t.Fatal("the load never reached 400 records on the broker: nothing was frozen")
	}
	get := func(name string) float64 { v, _ := res.Total.Get(name); return v }
	timeouts, _ := res.Total.Get("errors", "class", "timeout")
	m := res.Manifest
	t.Logf("frozen %.1f s after the start; the run took %v: %s %q, sent %v, accepted %v, timeouts %v; summary %q",
		at.Sub(start).Seconds(), elapsed.Round(time.Millisecond), m.Status, m.Reasons, get("sent"), get("accepted"), timeouts, res.Summary)
	// 8 s of load, then at most the 4 s delivery timeout and the
	// teardown: far from the default 10-minute bound on sends.
	if elapsed > 60*time.Second {
		t.Errorf("the run took %v with a frozen broker", elapsed)
	}
	if m.Status != pipebench.StatusFailed {
		t.Errorf("status %s %q with the broker frozen for the last part of the load, want failed (errors == 0 cannot hold)", m.Status, m.Reasons)
	}
	// The broker held 400 records when it was frozen; the
	// acknowledgements of the last of them may not have left it.
	if a := get("accepted"); a < 200 || a >= get("sent") {
		t.Errorf("accepted %v of %v sent: want the records acknowledged before the freeze, not those after", a, get("sent"))
	}
	// Thawed, the broker holds every record it acknowledged (and maybe
	// some the run counted as timed out).
	syscall.Kill(broker.PID(), syscall.SIGCONT)
	var on int64
	testutil.Eventually(t, 60*time.Second, func() bool { on = held(); return float64(on) >= get("accepted") },
		"the thawed broker holds the %v records acknowledged (it holds %s)", get("accepted"), testutil.Lazy(func() string { return fmt.Sprint(on) }))
	// Every send after the freeze timed out: those of the load's last
	// seconds at 200/s, less what the producer acknowledged first.
	if timeouts < 200 || get("accepted")+timeouts != get("sent") {
		t.Errorf("%v timeouts, %v accepted of %v sent: want every unacknowledged send a timeout", timeouts, get("accepted"), get("sent"))
	}
	if !strings.Contains(strings.Join(res.Summary, "\n"), "timeout") {
		t.Errorf("the summary %q does not say the sends timed out", res.Summary)
	}
}
