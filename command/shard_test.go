package command

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/sinktest"
)

// Four shards as separate pipebench processes against one real sink, from
// a shared start: `pipebench merge` of their Results counts, item for item,
// what the sink received and what the plan sends, and a shard given twice
// or missing is refused.
func TestShardProcessesMergeExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four pipebench processes")
	}
	sink, arr := sinktest.HTTP(t)
	dir := t.TempDir()
	scen := writeScenario(t, dir, scenariotest.TwoPhases("sharded-cli", sink.Endpoint(), 4, 400, 800))
	const n = 4
	start := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	var outs []string
	var dones []chan struct{}
	var errs []*lockedBuffer
	for i := 1; i <= n; i++ {
		out := filepath.Join(dir, fmt.Sprintf("shard%d.json", i))
		outs = append(outs, out)
		_, _, stderr, done := startChild(t, "run", scen, "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start,
			"--out", out, "--no-store", "--quiet")
		dones, errs = append(dones, done), append(errs, stderr)
	}
	for i, done := range dones {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("shard %d did not finish: %s", i+1, errs[i].String())
		}
	}
	for i, out := range outs {
		if r := readJSONResult(t, out); r.Plan.Shard == nil || r.Plan.Shard.Index != i {
			t.Fatalf("%s is not shard %d: %+v\n%s", out, i+1, r.Plan.Shard, errs[i].String())
		}
	}
	merged := filepath.Join(dir, "merged.json")
	stdout, stderr, code := cli(t, append([]string{"merge", "--out", merged, "--no-store"}, outs...)...)
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := readJSONResult(t, merged)
	if res.Manifest.Status != pipebench.StatusPassed {
		t.Errorf("merged status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	accepted, _ := res.Total.Get("accepted")
	sent, _ := res.Total.Get("sent")
	if got := float64(arr.Delivered()); accepted != got {
		t.Errorf("merged accepted %v, the sink received %v unique items", accepted, got)
	}
	if sent != 1200 {
		t.Errorf("merged sent %v, want the plan's 1,200", sent)
	}
	for _, bad := range [][]string{outs[:3], {outs[0], outs[0], outs[2], outs[3]}} {
		_, stderr, code := cli(t, append([]string{"merge", "--no-store"}, bad...)...)
		if code != pipebench.ExitUsage || !strings.Contains(stderr, "shard") {
			t.Errorf("merge %d files: exit %d, %s", len(bad), code, stderr)
		}
	}
}
