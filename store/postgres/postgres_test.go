package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/store/storetest"
)

func opener(ref string) storetest.Opener { return storetest.OpenerOf(Open, ref) }

func TestConformance(t *testing.T) {
	base := storetest.PostgresURL(t)
	storetest.Run(t, func(t *testing.T) storetest.Opener { return opener(storetest.PostgresSchema(t, base)) })
}

// Two processes' worth of stores opening an empty database at once: the
// advisory lock makes one migrate and the other find the work done.
func TestConcurrentMigrations(t *testing.T) {
	ref := storetest.PostgresSchema(t, storetest.PostgresURL(t))
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

// TestHelperSaveForever is not a test: it is the child process of
// TestKilledMidSaveKeepsHistory.
func TestHelperSaveForever(t *testing.T) { storetest.SaveForever(t, Open) }

// A process killed in the middle of saves leaves the history intact.
func TestKilledMidSaveKeepsHistory(t *testing.T) {
	ref := storetest.PostgresSchema(t, storetest.PostgresURL(t))
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
