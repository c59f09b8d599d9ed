package kafkae2e

import (
	"context"
	"fmt"
	"strings"
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

// startBroker starts a one-broker Kafka cluster for one test, with a
// topic of 4 partitions, and stops it when the test ends.
func startBroker(t *testing.T, topic string) *kafkatest.Broker {
	t.Helper()
	kafkatest.Need(t)
	c, err := kafka.StartCluster(context.Background(), kafka.ClusterParams{
		Dir: t.TempDir(), Heap: "384m", JVMOpts: []string{"-XX:TieredStopAtLevel=1"}, StartTimeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kafka.CreateTopics(ctx, c.Bootstrap(), 1, []kafka.Topic{{Name: topic, Partitions: 4}}); err != nil {
		t.Fatal(err)
	}
	return &kafkatest.Broker{Cluster: c}
}

// ledgerScenario produces to topic at 500/s for 4 s (acks=all) while the
// sink's group consumes it, failing every record from 2 s on to the end of the run (the sink retries a failed record in place): the
// records produced then are still in the log when the run ends.
func ledgerScenario(bootstrap, topic string) string {
	return `
name: ledger-kafka
target: {driver: kafka, bootstrap: ` + bootstrap + `, topic: ` + topic + `, acks: all, linger: 1ms, timeout: 4s}
workload: {generator: event, size: 200}
sink: {type: kafka, bootstrap: ` + bootstrap + `, topic: ` + topic + `, group: ledger}
observers: [{type: kafka, bootstrap: "` + bootstrap + `", partitions: false}]
interval: 500ms
drain: 1s
phases:
  - {name: consumed, duration: 2s, rate: 500/s}
  - {name: paused, duration: 2s, rate: 500/s, faults: {error_ratio: 1}}
`
}

// The sink's group paused for the last half of the load and the drain:
// the records it has not consumed are pending at the end, not lost, and
// their count is the group's lag as Apache Kafka's own
// kafka-consumer-groups --describe gives it (after the run: nothing
// produced or consumed after the last observation moves it).
func TestLedgerKafkaMidDrain(t *testing.T) {
	b := startBroker(t, "ledger")
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: scenariotest.Plan(t, reg, "ledger-kafka.yaml", ledgerScenario(b.Cluster.Bootstrap(), "ledger")), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	lag, rows := b.GroupLag(t, "ledger", "ledger")
	tot := res.Total
	get := func(name string) float64 {
		v, ok := tot.Get(name)
		if !ok {
			t.Fatalf("the total has no %s:\n%s", name, strings.Join(res.Summary, "\n"))
		}
		return v
	}
	accepted, delivered, missing, pending, lost := get("accepted"), get("delivered"), get("missing"), get("pending_at_end"), get("lost")
	t.Logf("kafka-consumer-groups --describe: lag %d\n%s", lag, strings.Join(res.Summary, "\n"))
	if pending == 0 || pending != float64(lag) || get("held_at_end") != float64(lag) {
		t.Errorf("pending %v (held %v), the group's lag by Kafka's own tool %d (%+v): want them equal and not 0", pending, get("held_at_end"), lag, rows)
	}
	if lost != 0 || delivered+pending != accepted || missing != pending {
		t.Errorf("delivered %v + pending %v + lost %v, accepted %v, missing %v", delivered, pending, lost, accepted, missing)
	}
}

// The broker killed at the end of the load, before the sink consumed what
// it had acknowledged: its log cannot be read, so the ledger says so and
// counts the records not delivered as unaccounted for, not lost. Started
// again, the broker still holds every record it acknowledged (acks=all):
// none of them was lost.
func TestLedgerKafkaBrokerKilled(t *testing.T) {
	b := startBroker(t, "killed")
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Cluster.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	inLog := func() int64 {
		offs, err := adm.ListEndOffsets(ctx, "killed")
		if err != nil {
			return -1
		}
		var n int64
		offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	killed := make(chan int64, 1)
	go func() {
		// Kill once the paused phase has left records in the log.
		if !testutil.Poll(2*time.Minute, func() bool { return inLog() >= 1600 }) {
			return
		}
		n := inLog()
		b.Cluster.Kill(b.Cluster.Brokers()[0].ID)
		killed <- n
	}()
	res, err := runner.Run(ctx, runner.Params{Plan: scenariotest.Plan(t, reg, "ledger-kafka.yaml", ledgerScenario(b.Cluster.Bootstrap(), "killed")), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	var before int64
	select {
	case before = <-killed:
	default:
		t.Fatal("the broker was never killed")
	}
	tot := res.Total
	accepted, _ := tot.Get("accepted")
	delivered, _ := tot.Get("delivered")
	missing, _ := tot.Get("missing")
	t.Logf("killed with %d records in the log\n%s", before, strings.Join(res.Summary, "\n"))
	if _, ok := tot.Get("lost"); ok {
		t.Errorf("lost given although the broker's log could not be read: %v", tot.KPIs)
	}
	if u, _ := tot.Get("unaccounted"); missing == 0 || u != missing {
		t.Errorf("unaccounted %v, missing %v: want every record not delivered unaccounted for", u, missing)
	}
	if s := strings.Join(res.Summary, "\n"); !strings.Contains(s, fmt.Sprintf("%s unaccounted for (pending at end unknown, because", pipebench.FormatCount(missing))) {
		t.Errorf("the summary does not say which records are unaccounted for and why:\n%s", s)
	}
	// Started again, the broker holds every record it acknowledged.
	if err := b.Cluster.Restart(ctx, b.Cluster.Brokers()[0].ID); err != nil {
		t.Fatal(err)
	}
	var after int64
	testutil.Eventually(t, time.Minute, func() bool { after = inLog(); return float64(after) >= accepted },
		"the broker started again holds %s records, %v were acknowledged", testutil.Lazy(func() string { return fmt.Sprint(after) }), accepted)
	if float64(after)-delivered < missing {
		t.Errorf("the log holds %d records, %v were delivered: the %v missing are not all in it", after, delivered, missing)
	}
}
