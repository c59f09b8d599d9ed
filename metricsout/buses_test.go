package metricsout_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/metricsout"
)

// The dashboard after a Kafka run (the built-in OMB workload on the
// embedded broker, with the kafka observer) and a JetStream run (the
// built-in capacity scenario, with the nats observer), each scraped by a
// real Prometheus: every query runs, every panel shows data (the Kafka
// panels after the Kafka run, the JetStream ones after the JetStream run,
// consumer pending after both), and every stat panel's query gives one
// series: the run's status and phase now, not every state it went
// through.
func TestDashboardAfterKafkaAndJetStream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Kafka and a JetStream scenario")
	}
	kafkatest.Need(t)
	kafkaAddr, natsAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	p := startPrometheus(t, true, scrapeJob{name: "pipebench", targets: []string{kafkaAddr, natsAddr}})
	for _, c := range []struct {
		builtin, addr string
		dur           time.Duration
		buses, absent []string // panels that must show data; panels of what the scenario does not observe
	}{
		{"kafka-1-topic-16-partitions-1kb", kafkaAddr, 8 * time.Second, []string{"Kafka", "Consumer pending"}, []string{"Exporter queue"}},
		{"nats-capacity", natsAddr, 8 * time.Second, []string{"JetStream", "Consumer pending"}, []string{"Exporter queue", "Memory", "CPU"}},
	} {
		t.Run(c.builtin, func(t *testing.T) {
			plan, reg := suitetest.BuiltinPlan(t, c.builtin, c.dur)
			plan.Drain = pipebench.Duration(10 * time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			lv, err := execute.StartLive(ctx, execute.LiveOptions{MetricsAddr: c.addr}, plan)
			if err != nil {
				t.Fatal(err)
			}
			defer lv.Close(nil, io.Discard)
			began := time.Now()
			out := execute.Run(ctx, plan, execute.Params{Registry: reg, Keep: execute.Keep{NoStore: true},
				Progress: lv.Update, Show: func(r *pipebench.Result) error { lv.Finish(r); return nil }})
			if out.Result == nil {
				t.Fatalf("no result: %v", out.Err)
			}
			id := string(out.Result.Manifest.RunID)
			sel := `run_id="` + id + `", instance="` + c.addr + `"`
			testutil.Eventually(t, 30*time.Second, func() bool {
				s, err := p.tryQuery(metricsout.MetricFinished + "{" + sel + "}")
				return err == nil && len(s) == 1 && s[0].Value == 1
			}, "prometheus never stored the final values of %s", c.builtin)
			ended := time.Now().Add(time.Second)
			vars := map[string]string{"__rate_interval": "2s", "job": "pipebench", "instance": c.addr, "run": id}
			checkDashboard(t, p, vars, began, ended, c.buses, c.absent)
			st := p.query(t, `last_over_time(pipebench_run_status{`+sel+`}[10m]) == 1`)
			if len(st) != 1 || st[0].Metric["status"] != string(out.Result.Manifest.Status) {
				t.Errorf("the status stat reads %v, the run is %s", st, out.Result.Manifest.Status)
			}
		})
	}
}
