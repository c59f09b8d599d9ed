package service_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/sut/all"
	"github.com/pipebench/pipebench/sut/healthevents"
	"github.com/pipebench/pipebench/sut/healthevents/service"
)

// storeReading is the test's own reading of the service: the store's
// documents (all, and those not yet marked quarantined) through the
// official driver, and the service's own counters from its /metrics.
type storeReading struct {
	docs, notQuarantined float64
	queued, applied      float64
	done                 time.Time // when the reading finished
}

// The health-event service stopped mid-drain (the sustained case scaled:
// events arrive at 150/s, the quarantine stage cordons one at a time at
// 50/s): the events it stored and has not cordoned yet are pending at the
// end, counted by the store itself; those that took effect are the
// service's applied count; none is lost; and the run ends with work left.
func TestLedgerHealthEventsMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service with its store")
	}
	cfg := healthevents.DefaultConfig()
	cfg.Listen = "unix://" + filepath.Join(t.TempDir(), "he.sock")
	cfg.QuarantineWorkers, cfg.EffectRate = 1, 50
	srv, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	cl, err := mongo.Connect(options.Client().ApplyURI(srv.Store().URI()).SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	coll := cl.Database(cfg.Store.Database).Collection(cfg.Store.Collection)
	rd := testutil.NewReading(func(ctx context.Context, env pipebench.Env) (storeReading, error) {
		var r storeReading
		n, err := coll.CountDocuments(ctx, bson.D{})
		if err != nil {
			return r, err
		}
		q, err := coll.CountDocuments(ctx, bson.D{{Key: "healtheventstatus.nodequarantined", Value: "Quarantined"}})
		if err != nil {
			return r, err
		}
		r.docs, r.notQuarantined = float64(n), float64(n-q)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.HTTPURL()+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return r, err
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil {
			return r, err
		}
		r.queued = fams["healthevents_connector_queue_depth"].GetMetric()[0].GetGauge().GetValue()
		r.applied = fams["healthevents_effects_applied_total"].GetMetric()[0].GetCounter().GetValue()
		r.done = time.Now()
		return r, nil
	})
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		reg.SUTs.Register(pipebench.NewSimpleFactory("started", "the test's", func(pipebench.Env) (pipebench.SUT, error) { return started{srv}, nil })),
		reg.Observers.Register(rd.Factory("reading")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := runner.Run(ctx, runner.Params{Registry: reg, Plan: scenariotest.Plan(t, reg, "ledger-he.yaml", `
name: ledger-he
sut: {type: started}
target: {driver: grpc, method: pipebench.healthevents.v1.HealthEventService/Report}
workload:
  generator: grpc-message
  message: {version: 1, events: [{node_name: "node-{{seq % 50}}", sequence: "{{seq}}", severity: SEVERITY_FATAL}]}
observers:
  - {type: effect, url: /effects, cursor_param: from, cursor: next, items: effects, seq: seq, sent: sent, at: applied, backlog: backlog}
  - {type: reading}
interval: 500ms
drain: 1s
phases:
  - {name: load, duration: 3s, rate: 150/s}
`)})
	if err != nil {
		t.Fatal(err)
	}
	got, at, err := rd.Last()
	if err != nil || at.IsZero() {
		t.Fatalf("the test's reading: %v at %v", err, at)
	}
	tot := res.Total
	get := func(name string) float64 {
		v, ok := tot.Get(name)
		if !ok {
			t.Fatalf("the total has no %s:\n%s", name, strings.Join(res.Summary, "\n"))
		}
		return v
	}
	accepted, effected, missing, pending, lost := get("accepted"), get("effected"), get("missing"), get("pending_at_end"), get("lost")
	left, where := kpi.WorkLeft(res)
	t.Logf("the store: %v documents, %v not quarantined; the service: %v queued, %v applied (read in %v)\n%s\nwork left: %v (%s)", got.docs, got.notQuarantined, got.queued, got.applied,
		got.done.Sub(at).Round(time.Millisecond), strings.Join(res.Summary, "\n"), left, where)
	// The last observation reads the ledger and then the test's reading,
	// one after the other, all between its start (at) and the end of the
	// test's reading, while the quarantine stage cordons at 50/s: the two
	// may differ by what the stage cordons in that time (a few items on a
	// quiet machine, more when the store answers slowly), and no more.
	slack := 2 + float64(cfg.EffectRate)*got.done.Sub(at).Seconds()
	near := func(a, b float64) bool { return a-b <= slack && b-a <= slack }
	if !near(pending, got.notQuarantined+got.queued) || pending == 0 {
		t.Errorf("pending %v, the store's documents not quarantined %v + the connector's queue %v: want them equal and not 0", pending, got.notQuarantined, got.queued)
	}
	if !near(effected, got.applied) {
		t.Errorf("took effect %v, the service applied %v", effected, got.applied)
	}
	if lost != 0 || effected+pending != accepted || missing != pending {
		t.Errorf("took effect %v + pending %v + lost %v, accepted %v, missing %v", effected, pending, lost, accepted, missing)
	}
	if left != pending || !strings.Contains(where, "store (stored, not yet cordoned)") {
		t.Errorf("work left %v (%s), want the %v pending in the store", left, where, pending)
	}
	if s := strings.Join(res.Summary, "\n"); !strings.Contains(s, fmt.Sprintf("%s took effect", pipebench.FormatCount(effected))) {
		t.Errorf("the summary's ledger does not say what took effect:\n%s", s)
	}
}
