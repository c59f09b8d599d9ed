package kafkae2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/runner"
)

// The built-in OMB fixed-rate workload, shortened, on the embedded broker:
// every KPI a column of the kafka suite names exists in the phase it
// reads (OMB's table: publish rate in msgs/s and MB/s, publish latency,
// publish delay and end-to-end latency at p50 ... p99.99 and max), every
// record is delivered once, and the megabytes per second published agree
// with the broker's own count of bytes in (its JMX exporter): the broker's
// is the records' bodies plus their headers and batch framing, so a few
// percent more and never less.
func TestBuiltinOMBTable(t *testing.T) {
	kafkatest.Need(t)
	plan, reg := suitetest.BuiltinPlan(t, "kafka-1-topic-16-partitions-1kb", 12*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) float64 { v, _ := res.Total.Get(name); return v }
	if sent := get("sent"); sent != float64(plan.Items()) || get("delivered") != sent || get("lost") != 0 || get("duplicates") != 0 {
		t.Errorf("sent %v of %d, delivered %v, lost %v, duplicates %v", sent, plan.Items(), get("delivered"), get("lost"), get("duplicates"))
	}
	s, err := builtins.Suite("builtin:kafka")
	if err != nil {
		t.Fatal(err)
	}
	phase := func(name string) *pipebench.PhaseResult {
		for i := range res.Phases {
			if res.Phases[i].Name == name {
				return &res.Phases[i]
			}
		}
		t.Fatalf("no phase %s", name)
		return nil
	}
	load := phase("load")
	for _, c := range s.Table.Columns {
		if strings.HasPrefix(c.Value, "@") || c.Value == "drain_measured" || c.Value == "drain_rate" {
			continue // the run's own values; the drain's are the backlog case's
		}
		p := res.Total
		if c.Phase != "" {
			p = phase(c.Phase)
		}
		if _, ok := p.Get(c.Value); !ok {
			t.Errorf("column %q names %s, which the run's %s has not", c.Title, c.Value, c.Phase)
		}
	}
	var brokerBytes float64
	for _, k := range res.Total.All("broker_bytes_in.total") {
		brokerBytes += k.Value
	}
	ours := get("accepted_bytes")
	t.Logf("accepted %v records, %v bytes (%.2f MB/s in load); the broker counted %v bytes in", get("accepted"), ours, func() float64 { v, _ := load.Get("accepted_mb_rate"); return v }(), brokerBytes)
	if ours != get("accepted")*1024 {
		t.Errorf("accepted_bytes %v for %v records of 1024 bytes", ours, get("accepted"))
	}
	if brokerBytes < ours || brokerBytes > ours*1.15 {
		t.Errorf("the broker counted %v bytes in, the run %v bytes accepted: want the broker's 0-15%% above", brokerBytes, ours)
	}
}
