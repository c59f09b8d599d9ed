package sqlite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report/reporttest"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func result(version string, i int) *pipebench.Result {
	r := reporttest.Pipeline(version, "single", 20000+float64(i))
	r.Manifest.RunID = "run-" + version + "-" + strconv.Itoa(i)
	r.Manifest.Started = time.Date(2026, 11, 1, 0, 0, i, 0, time.UTC)
	r.Manifest.Ended = r.Manifest.Started.Add(time.Minute)
	return r
}

func TestSaveListLoad(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s := open(t, path)
	for i, v := range []string{"0.99", "0.100", "0.100"} {
		if _, err := s.Save(ctx, result(v, i)); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.Runs(ctx, pipebench.RunFilter{})
	if err != nil || len(runs) != 3 || runs[0].ID != "run-0.100-2" {
		t.Fatalf("runs %+v %v", runs, err)
	}
	runs, _ = s.Runs(ctx, pipebench.RunFilter{Version: "0.99"})
	if len(runs) != 1 {
		t.Errorf("filter by version: %d", len(runs))
	}
	got, err := s.Run(ctx, "run-0.99-0")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Phases[0].Get("receiver_accepted_rate", "instance", "collector-0"); v != 20000 {
		t.Errorf("loaded result lost its KPIs: %v", v)
	}
	if _, err := s.Run(ctx, "run-0.9"); err != nil {
		t.Errorf("unique prefix: %v", err)
	}
	if _, err := s.Run(ctx, "run-0.1"); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := s.Run(ctx, "nope"); err == nil {
		t.Error("missing run found")
	}
	var n int
	s.db.QueryRow(`SELECT COUNT(*) FROM kpis WHERE name = 'memory_mb'`).Scan(&n)
	if n != 3*3*2 { // 3 runs x 3 phases x 2 instances
		t.Errorf("kpi rows for memory_mb: %d", n)
	}
	// Reopening applies no migration twice.
	s.Close()
	s2 := open(t, path)
	var versions int
	s2.db.QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&versions)
	if versions != 1 {
		t.Errorf("schema_version rows: %d", versions)
	}
}

// TestHelperSaveForever is not a test: it saves runs in a loop until killed,
// for TestKilledMidSaveKeepsHistory.
func TestHelperSaveForever(t *testing.T) {
	path := os.Getenv("PIPEBENCH_HELPER_DB")
	if path == "" {
		t.Skip("helper process")
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		os.Exit(3)
	}
	r := result("9.9", 0)
	// A big result so a save takes a while.
	for i := 0; i < 200; i++ {
		r.Series = append(r.Series, r.Series[0])
	}
	for i := 0; ; i++ {
		r.Manifest.RunID = "loop-" + strconv.Itoa(i)
		s.Save(context.Background(), r)
	}
}

// A process killed in the middle of saves leaves the history intact: the
// earlier runs are there, the database passes an integrity check.
func TestKilledMidSaveKeepsHistory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s := open(t, path)
	s.Save(ctx, result("1.0", 0))
	s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSaveForever$")
	cmd.Env = append(os.Environ(), "PIPEBENCH_HELPER_DB="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	s2 := open(t, path)
	var check string
	if err := s2.db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity: %q %v", check, err)
	}
	if _, err := s2.Run(ctx, "run-1.0-0"); err != nil {
		t.Fatalf("the earlier run is gone: %v", err)
	}
	runs, _ := s2.Runs(ctx, pipebench.RunFilter{})
	for _, r := range runs {
		if _, err := s2.Run(ctx, r.ID); err != nil {
			t.Errorf("run %s half-saved: %v", r.ID, err)
		}
	}
	if len(runs) < 2 {
		t.Errorf("the helper saved nothing in 1.5 s (%d runs)", len(runs))
	}
}
