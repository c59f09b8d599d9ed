// Package storetest is the conformance suite every history backend passes,
// run against the real database (a SQLite file, a PostgreSQL server).
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for PostgresSchema

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	"github.com/pipebench/pipebench/store/sqlstore"
)

// Opener opens the backend under test on the same database every time it is
// called within one test.
type Opener func(t *testing.T) *sqlstore.Store

// OpenerOf is the Opener of a backend's open function on ref (a file, a
// connection string): each call opens the store again, an error fails the
// test, and the store is closed when the test ends.
func OpenerOf(open func(ctx context.Context, ref string) (*sqlstore.Store, error), ref string) Opener {
	return func(t *testing.T) *sqlstore.Store {
		t.Helper()
		s, err := open(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// Result is a saved-run fixture: the reference pipeline shape, one version.
func Result(version string, i int) *pipebench.Result {
	r := resulttest.Pipeline(version, "single", 20000+float64(i))
	r.Manifest.RunID = "run-" + version + "-" + strconv.Itoa(i)
	r.Manifest.Started = time.Date(2026, 11, 1, 0, 0, i, 0, time.UTC)
	r.Manifest.Ended = r.Manifest.Started.Add(time.Minute)
	return r
}

// Run runs the suite. fresh gives each subtest an Opener on an empty
// database of its own.
func Run(t *testing.T, fresh func(t *testing.T) Opener) {
	for _, c := range []struct {
		name string
		test func(*testing.T, Opener)
	}{
		{"SaveListLoad", saveListLoad},
		{"Filters", filters},
		{"SaveTwiceReplaces", saveTwice},
		{"PrefixWildcards", prefixWildcards},
		{"ProbeLeavesNothing", probeLeavesNothing},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, fresh(t)) })
	}
}

func saveListLoad(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	for i, v := range []string{"0.99", "0.100", "0.100"} {
		if _, err := s.Save(ctx, Result(v, i)); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.Runs(ctx, pipebench.RunFilter{})
	if err != nil || len(runs) != 3 || runs[0].ID != "run-0.100-2" {
		t.Fatalf("runs %+v %v", runs, err)
	}
	if runs[0].Duration != time.Minute || runs[0].Status != Result("0.100", 2).Manifest.Status {
		t.Errorf("summary %+v", runs[0])
	}
	got, err := s.Run(ctx, "run-0.99-0")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Phases[0].Get("receiver_accepted_rate", "instance", "collector-0"); v != 20000 {
		t.Errorf("loaded result lost its KPIs: %v", v)
	}
	if len(got.Series) == 0 || len(got.Series[0].Points) == 0 {
		t.Errorf("loaded result lost its series")
	}
	if _, err := s.Run(ctx, "run-0.9"); err != nil {
		t.Errorf("unique prefix: %v", err)
	}
	if _, err := s.Run(ctx, "run-0.1"); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := s.Run(ctx, "nope"); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("missing run: %v", err)
	}
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM kpis WHERE name = 'memory_mb'`).Scan(&n); err != nil || n != 3*3*2 {
		t.Errorf("kpi rows for memory_mb: %d (want 3 runs x 3 phases x 2 instances) %v", n, err)
	}
	// Reopening applies no migration twice.
	s2 := open(t)
	var versions int
	s2.DB().QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&versions)
	if versions != 1 {
		t.Errorf("schema_version rows: %d", versions)
	}
}

func filters(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	for i, v := range []string{"1.0", "1.1", "1.1", "1.2"} {
		r := Result(v, i)
		if i == 3 {
			r.Manifest.Scenario = "other"
		}
		if _, err := s.Save(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		f    pipebench.RunFilter
		want int
	}{
		{"all", pipebench.RunFilter{}, 4},
		{"version", pipebench.RunFilter{Version: "1.1"}, 2},
		{"scenario", pipebench.RunFilter{Scenario: "other"}, 1},
		{"since", pipebench.RunFilter{Since: base.Add(2 * time.Second)}, 2},
		{"until", pipebench.RunFilter{Until: base.Add(1 * time.Second)}, 1},
		{"limit", pipebench.RunFilter{Limit: 3}, 3},
		{"nothing", pipebench.RunFilter{Version: "9"}, 0},
	} {
		runs, err := s.Runs(ctx, c.f)
		if err != nil || len(runs) != c.want {
			t.Errorf("%s: %d runs, want %d (%v)", c.name, len(runs), c.want, err)
		}
	}
}

func saveTwice(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	r := Result("2.0", 0)
	s.Save(ctx, r)
	r.Manifest.Status = pipebench.StatusAborted
	if _, err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	runs, _ := s.Runs(ctx, pipebench.RunFilter{})
	if len(runs) != 1 || runs[0].Status != pipebench.StatusAborted {
		t.Errorf("runs after saving twice: %+v", runs)
	}
	var n int
	s.DB().QueryRow(`SELECT COUNT(*) FROM kpis WHERE name = 'memory_mb'`).Scan(&n)
	if n != 3*2 {
		t.Errorf("kpi rows doubled: %d", n)
	}
}

// An id prefix holding LIKE's wildcards matches them literally.
func prefixWildcards(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	for _, id := range []string{"a_b-1", "axb-2", "50%-3"} {
		r := Result("3.0", 0)
		r.Manifest.RunID = id
		s.Save(ctx, r)
	}
	got, err := s.Run(ctx, "a_")
	if err != nil || got.Manifest.RunID != "a_b-1" {
		t.Errorf("prefix a_: %v %v", got, err)
	}
	if got, err := s.Run(ctx, "50%"); err != nil || got.Manifest.RunID != "50%-3" {
		t.Errorf("prefix 50%%: %v", err)
	}
}

// PostgresEnv names the PostgreSQL server tests use (a database the user
// may create schemas in). .ci/run installs and starts Debian's postgresql
// and sets it; without it PostgreSQL tests skip and say so.
const PostgresEnv = "PIPEBENCH_TEST_POSTGRES"

// PostgresURL returns the test server's URL or skips the test.
func PostgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(PostgresEnv)
	if u == "" {
		t.Skipf("no PostgreSQL server: set %s=postgres://USER:PASS@127.0.0.1:5432/DB (.ci/run does)", PostgresEnv)
	}
	return u
}

var schemas atomic.Int64

// PostgresSchema creates an empty schema, dropped after the test, and
// returns the server URL with search_path set to it: every test has a
// database of its own on the one server.
func PostgresSchema(t *testing.T, base string) string {
	t.Helper()
	name := fmt.Sprintf("pbtest_%d_%d", os.Getpid(), schemas.Add(1))
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE SCHEMA ` + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", base); err == nil {
			db.Exec(`DROP SCHEMA ` + name + ` CASCADE`)
			db.Close()
		}
	})
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// HelperEnv names the environment variable that turns a test binary into
// SaveForever's child.
const HelperEnv = "PIPEBENCH_STORETEST_SAVE_FOREVER"

// SaveForever is the child of KilledMidSave: in a test binary started
// with HelperEnv set, it opens that store with the backend's open function
// and saves big runs in a loop until the process is killed (exit 3: the
// store would not open). Without HelperEnv it skips the test: a backend's
// test function that calls it is no test of its own.
func SaveForever(t *testing.T, open func(ctx context.Context, ref string) (*sqlstore.Store, error)) {
	ref := os.Getenv(HelperEnv)
	if ref == "" {
		t.Skip("helper process")
	}
	s, err := open(context.Background(), ref)
	if err != nil {
		os.Exit(3)
	}
	r := Result("9.9", 0)
	for i := 0; i < 200; i++ { // a big result, so a save takes a while
		r.Series = append(r.Series, r.Series[0])
	}
	for i := 0; ; i++ {
		r.Manifest.RunID = "loop-" + strconv.Itoa(i)
		s.Save(context.Background(), r)
	}
}

// KilledMidSave starts this test binary running the test named helper (which
// calls SaveForever when HelperEnv is set to ref), kills it after a while and
// checks the history: the run saved before is there and every listed run
// loads whole.
func KilledMidSave(t *testing.T, open Opener, helper, ref string) *sqlstore.Store {
	ctx := context.Background()
	s := open(t)
	if _, err := s.Save(ctx, Result("1.0", 0)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), HelperEnv+"="+ref)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	s2 := open(t)
	if _, err := s2.Run(ctx, "run-1.0-0"); err != nil {
		t.Fatalf("the earlier run is gone: %v", err)
	}
	runs, err := s2.Runs(ctx, pipebench.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if _, err := s2.Run(ctx, r.ID); err != nil {
			t.Errorf("run %s half-saved: %v", r.ID, err)
		}
	}
	if len(runs) < 2 {
		t.Errorf("the helper saved nothing in 1.5 s (%d runs)", len(runs))
	}
	return s2
}

// probeLeavesNothing: the test write made before a run is rolled back, and
// a probe after a saved run leaves it as it was.
func probeLeavesNothing(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if runs, err := s.Runs(ctx, pipebench.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("after a probe: %+v %v", runs, err)
	}
	s.Save(ctx, Result("1.0", 0))
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if runs, _ := s.Runs(ctx, pipebench.RunFilter{}); len(runs) != 1 {
		t.Errorf("after a save and a probe: %+v", runs)
	}
}
