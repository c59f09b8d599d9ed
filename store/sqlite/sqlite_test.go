package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pipebench/pipebench/store/storetest"
)

func opener(path string) storetest.Opener { return storetest.OpenerOf(Open, path) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		return opener(filepath.Join(t.TempDir(), "h.db"))
	})
}

func TestReopenSameFile(t *testing.T) {
	open := opener(filepath.Join(t.TempDir(), "h.db"))
	s := open(t)
	s.Save(context.Background(), storetest.Result("1.0", 0))
	s.Close()
	if _, err := open(t).Run(context.Background(), "run-1.0-0"); err != nil {
		t.Fatal(err)
	}
}

// TestHelperSaveForever is not a test: it is the child process of
// TestKilledMidSaveKeepsHistory.
func TestHelperSaveForever(t *testing.T) { storetest.SaveForever(t, Open) }

// A process killed in the middle of saves leaves the history intact: the
// earlier runs are there and the file passes SQLite's integrity check.
func TestKilledMidSaveKeepsHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s := storetest.KilledMidSave(t, opener(path), "TestHelperSaveForever", path)
	var check string
	if err := s.DB().QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity: %q %v", check, err)
	}
}
