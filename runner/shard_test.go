package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/sinktest"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/runner"
)

// Four shards of one plan, run as concurrent generators from a shared
// start against one real sink: merged, their Result counts exactly what
// the sink received, and the plan's items.
func TestShardsMergeToWhatTheSinkReceived(t *testing.T) {
	sink, arr := sinktest.HTTP(t)
	reg := registry(t)
	plan := compile(t, reg, scenariotest.TwoPhases("sharded", sink.Endpoint(), 4, 800, 1200))
	const n = 4
	start := time.Now().Add(500 * time.Millisecond)
	results := make([]*pipebench.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		shard, err := plan.Slice(i, n)
		if err != nil {
			t.Fatal(err)
		}
		shard.StartAt = start
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runner.Run(context.Background(), runner.Params{Plan: shard, Registry: reg})
			if err != nil {
				t.Errorf("shard %d: %v", i+1, err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	merged, err := kpi.Merge(results, reg)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Manifest.Status != pipebench.StatusPassed {
		t.Errorf("merged status %s: %v", merged.Manifest.Status, merged.Manifest.Reasons)
	}
	got := get(t, merged.Total, "accepted")
	if sunk := float64(arr.Delivered()); got != sunk {
		t.Errorf("merged accepted %v, the sink received %v unique items", got, sunk)
	}
	if sent := get(t, merged.Total, "sent"); sent != float64(plan.Items()) {
		t.Errorf("merged sent %v, the plan's items %d", sent, plan.Items())
	}
	for i, want := range []float64{800, 1200} {
		if tr := get(t, &merged.Phases[i], "target_rate"); tr < want*0.99 || tr > want*1.01 {
			t.Errorf("phase %d target_rate %v, want %v", i, tr, want)
		}
	}
	if p99 := get(t, merged.Total, "latency.p99"); p99 <= 0 {
		t.Errorf("merged latency.p99 %v", p99)
	}
	// Refusals: a missing shard, a shard twice, another plan's shard.
	if _, err := kpi.Merge(results[:3], nil); err == nil {
		t.Error("three of four shards merged")
	}
	if _, err := kpi.Merge([]*pipebench.Result{results[0], results[0], results[2], results[3]}, nil); err == nil {
		t.Error("a shard given twice merged")
	}
	other := *results[1]
	other.Plan.Digest = "another"
	if _, err := kpi.Merge([]*pipebench.Result{results[0], &other, results[2], results[3]}, nil); err == nil {
		t.Error("a shard of another plan merged")
	}
}

// Checkpoints while the run goes on: partial Results, status running, that
// only grow, taken from another goroutine than the sends (run with -race).
func TestCheckpoints(t *testing.T) {
	reg := registry(t)
	plan := compile(t, reg, `
name: checkpoints
target: {driver: http}
sink: {type: http}
interval: 100ms
phases:
  - {name: a, duration: 1s, rate: 300/s}
  - {name: b, duration: 1s, rate: 300/s}
`)
	var mu sync.Mutex
	var sents []float64
	res, err := runner.Run(context.Background(), runner.Params{Plan: plan, Registry: reg, CheckpointEvery: 200 * time.Millisecond,
		Checkpoint: func(r *pipebench.Result) {
			if r.Manifest.Status != pipebench.StatusRunning {
				t.Errorf("checkpoint status %s", r.Manifest.Status)
			}
			if r.Total != nil {
				v, _ := r.Total.Get("sent")
				mu.Lock()
				sents = append(sents, v)
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sents) < 3 {
		t.Fatalf("%d checkpoints in 2 s at 200 ms", len(sents))
	}
	for i := 1; i < len(sents); i++ {
		if sents[i] < sents[i-1] {
			t.Errorf("checkpoints went back: %v", sents)
		}
	}
	if final, _ := res.Total.Get("sent"); final != 600 || sents[len(sents)-1] > final {
		t.Errorf("final sent %v, checkpoints %v", final, sents)
	}
}
