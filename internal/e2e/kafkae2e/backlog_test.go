package kafkae2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/runner"
)

// The built-in OMB backlog scenario end to end at a third of its length
// (as --duration 13s does), on the embedded broker it starts: every event
// produced is consumed exactly once, the backlog built while the group was
// paused is seen both as accepted - delivered and as the group's lag on
// the broker, and its drain after the resume is measured.
func TestBuiltinBacklog(t *testing.T) {
	kafkatest.Need(t)
	plan, reg := suitetest.BuiltinPlan(t, "kafka-backlog", 13*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) float64 { v, _ := res.Total.Get(name); return v }
	t.Logf("sent %v, delivered %v, backlog max %v, group lag max %v, drain %v s at %v/s; summary:\n%s", get("sent"), get("delivered"),
		get("backlog.max"), lagMax(res.Total.KPIs), get("drain_measured"), get("drain_rate"), strings.Join(res.Summary, "\n"))
	if sent := get("sent"); sent != float64(plan.Items()) || get("accepted") != sent || get("delivered") != sent || get("lost") != 0 || get("duplicates") != 0 {
		t.Errorf("sent %v of %d planned, accepted %v, delivered %v, lost %v, duplicates %v: want every event accepted and delivered once",
			sent, plan.Items(), get("accepted"), get("delivered"), get("lost"), get("duplicates"))
	}
	// The consumer was paused for a third of the backlog phase (5 s at
	// 5,000/s): a backlog of up to 25,000, less when the loaded machine
	// sent late; at least a second's worth.
	if b := get("backlog.max"); b < 5000 {
		t.Errorf("backlog max %v, want about 25,000", b)
	}
	// The group's lag on the broker saw the same backlog. It counts
	// what the broker holds past the offsets committed every second,
	// sampled every second; the backlog counts what was acknowledged and
	// not yet consumed. So the lag may run above it by two seconds of
	// traffic and the records on the broker whose acknowledgements were
	// still on their way (the produce latency's p99 worth), and below it
	// by what one sample missed.
	const rate = 5000.0
	l, b := lagMax(res.Total.KPIs), get("backlog.max")
	if upper := b + (2+get("latency.p99")/1000)*rate; l < 0.5*b || l > upper {
		t.Errorf("the group's lag peaked at %v, the backlog at %v (the lag may reach %v)", l, b, upper)
	}
	// The broker's own count of the records it appended (its JMX
	// exporter, the kafka preset of the prometheus observer): every
	// event the run counted accepted, and beyond them only the records
	// of the consumer group's offset commits (Kafka's internal topic).
	var brokerIn float64
	for _, k := range res.Total.All("broker_messages_in.total") {
		brokerIn += k.Value
	}
	t.Logf("the broker appended %v records, pipebench counted %v accepted", brokerIn, get("accepted"))
	if brokerIn < get("accepted") || brokerIn > get("accepted")*1.02 {
		t.Errorf("the broker counted %v records appended, the run %v accepted", brokerIn, get("accepted"))
	}
	if get("drain_measured") <= 0 || get("drain_rate") <= 0 {
		t.Errorf("no drain measured after the consumer resumed; summary:\n%s", strings.Join(res.Summary, "\n"))
	}
}
