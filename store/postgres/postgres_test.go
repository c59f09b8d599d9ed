package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/store/sqlstore"
	"github.com/pipebench/pipebench/store/storetest"
)

// URLEnv names the PostgreSQL server the tests use (a database the user
// may create schemas in). .ci/run installs and starts Debian's postgresql
// and sets it; without it these tests skip and say so.
const URLEnv = "PIPEBENCH_TEST_POSTGRES"

func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		t.Skipf("no PostgreSQL server: set %s=postgres://USER:PASS@127.0.0.1:5432/DB (.ci/run does)", URLEnv)
	}
	return u
}

var schemas atomic.Int64

// freshSchema creates an empty schema, dropped after the test, and returns
// the server URL with search_path set to it: every test has a database of
// its own on the one server.
func freshSchema(t *testing.T, base string) string {
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
		db, err := sql.Open("pgx", base)
		if err == nil {
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

func opener(ref string) storetest.Opener {
	return func(t *testing.T) *sqlstore.Store {
		t.Helper()
		s, err := Open(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestConformance(t *testing.T) {
	base := serverURL(t)
	storetest.Run(t, func(t *testing.T) storetest.Opener { return opener(freshSchema(t, base)) })
}

// Two processes' worth of stores opening an empty database at once: the
// advisory lock makes one migrate and the other find the work done.
func TestConcurrentMigrations(t *testing.T) {
	ref := freshSchema(t, serverURL(t))
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			s, err := Open(context.Background(), ref)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	s := opener(ref)(t)
	var n int
	s.DB().QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&n)
	if n != 1 {
		t.Errorf("schema_version rows: %d", n)
	}
}

func TestHelperSaveForever(t *testing.T) {
	ref := os.Getenv(storetest.HelperEnv)
	if ref == "" {
		t.Skip("helper process")
	}
	s, err := Open(context.Background(), ref)
	if err != nil {
		os.Exit(3)
	}
	storetest.SaveForever(s)
}

// A process killed in the middle of saves leaves the history intact.
func TestKilledMidSaveKeepsHistory(t *testing.T) {
	ref := freshSchema(t, serverURL(t))
	storetest.KilledMidSave(t, opener(ref), "TestHelperSaveForever", ref)
}

// A server that is not there, and a URL that does not parse, are usage
// errors that name the store without its password.
func TestBadStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := Open(ctx, "postgres://me:hunter2@127.0.0.1:1/none")
	if err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Fatalf("closed port: %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error %q", err)
	}
	if _, err := Open(ctx, "postgres://%zz"); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("bad url: %v", err)
	}
}
