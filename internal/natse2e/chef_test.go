package natse2e

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	natsdriver "github.com/pipebench/pipebench/driver/nats"
	"github.com/pipebench/pipebench/examples"
	natsobs "github.com/pipebench/pipebench/observer/nats"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/scenario"
	natssink "github.com/pipebench/pipebench/sink/nats"
	"github.com/pipebench/pipebench/sut/jetstream"
)

// The built-in chef-capacity scenario end to end at half its length (as
// --duration 30s does): 2,000 connections held to the embedded JetStream,
// steps across a consumer limited to 600 events/s, a backlog built with the
// consumer paused and drained while the producers go on. The Result has
// the chef table's figures: a capacity below the consumer's limit, a
// backlog, the drain estimated and measured, every event delivered.
func TestChefCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s run with 2,000 connections through nats-server")
	}
	reg := pipebench.NewRegistry()
	for _, err := range []error{
		reg.Generators.Register(payload.EventFactory()),
		reg.Drivers.Register(natsdriver.Factory()),
		reg.Sinks.Register(natssink.Factory()),
		reg.SUTs.Register(jetstream.Factory()),
		reg.Observers.Register(natsobs.Factory()),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := fs.ReadFile(examples.FS, "chef-capacity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse("chef-capacity.yaml", data, scenario.Params{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	if plan, err = plan.Scale(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) float64 { v, _ := res.Total.Get(name); return v }
	t.Logf("capacity %v/s, backlog max %v, headroom-based drain %v s, measured drain %v s at %v/s; summary:\n%s",
		get("capacity"), get("backlog.max"), get("drain_estimate"), get("drain_measured"), get("drain_rate"), strings.Join(res.Summary, "\n"))
	if got := get("connections_open.max"); got != 2000 {
		t.Errorf("connections open %v, want 2,000", got)
	}
	if sent, del := get("sent"), get("delivered"); sent != float64(plan.Items()) || del != sent || get("lost") != 0 {
		t.Errorf("sent %v of %d planned, delivered %v, lost %v: want every event delivered", sent, plan.Items(), del, get("lost"))
	}
	if c := get("capacity"); c <= 0 || c > 600 {
		t.Errorf("capacity %v/s, want a step at or below the consumer's 600/s", c)
	}
	if get("backlog.max") <= 0 || get("drain_estimate") <= 0 {
		t.Errorf("backlog max %v, drain estimate %v: want both", get("backlog.max"), get("drain_estimate"))
	}
	if get("drain_measured") <= 0 || get("drain_rate") <= 0 {
		t.Errorf("no drain measured after the consumer resumed; summary:\n%s", strings.Join(res.Summary, "\n"))
	}
}
