// Package store opens the results history. A Store keeps every Result whole
// (so any report can be rendered again) plus its KPIs in rows (so runs of
// different versions line up for comparisons).
package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/store/sqlstore"
)

// DefaultPath is where the history lives unless --store says otherwise:
// $PIPEBENCH_HOME/history.db, else $XDG_DATA_HOME/pipebench/history.db, else
// ~/.local/share/pipebench/history.db.
func DefaultPath() string {
	if h := os.Getenv("PIPEBENCH_HOME"); h != "" {
		return filepath.Join(h, "history.db")
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "pipebench", "history.db")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "pipebench", "history.db")
	}
	return filepath.Join(home, ".local", "share", "pipebench", "history.db")
}

// Open opens the store at ref: a file path or sqlite:///path (SQLite), or
// postgres://user:password@host:port/database (PostgreSQL).
func Open(ctx context.Context, ref string) (pipebench.Store, error) {
	if ref == "" {
		ref = DefaultPath()
	}
	if strings.HasPrefix(ref, "postgres://") || strings.HasPrefix(ref, "postgresql://") {
		return openPostgres(ctx, ref)
	}
	path := strings.TrimPrefix(ref, "sqlite://")
	if fi, err := os.Stat(strings.SplitN(path, "?", 2)[0]); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		// SQLite would open a FIFO or a device and wait on it, or read
		// it without end.
		return nil, pipebench.UsageError(fmt.Sprintf("the results history %s is not a regular file (%s)", path, fi.Mode().Type()),
			"give --store a SQLite file, or a postgres:// URL", nil)
	}
	return openSQLite(ctx, path)
}

// Check opens the store at ref, applies its migrations and proves that a
// run can be saved (a write rolled back), then closes it. Call it before a
// run so that a corrupt file, a read-only path or an unreachable server is
// found before any load is sent. The error never holds a password.
func Check(ctx context.Context, ref string) error {
	s, err := Open(ctx, ref)
	if err != nil {
		return err
	}
	defer s.Close()
	if p, ok := s.(interface{ Probe(context.Context) error }); ok {
		return p.Probe(ctx)
	}
	return nil
}

// ReadAll reads every run in st (of scenario, when it is not ""), whole,
// oldest first. A run whose Result the history holds damaged stands as
// Damaged: one bad row leaves that run out of comparisons, named, not
// the whole history.
func ReadAll(ctx context.Context, st pipebench.Store, scenario string) ([]*pipebench.Result, error) {
	runs, err := st.Runs(ctx, pipebench.RunFilter{Scenario: scenario})
	if err != nil {
		return nil, err
	}
	out := make([]*pipebench.Result, 0, len(runs))
	for i := len(runs) - 1; i >= 0; i-- {
		r, err := ReadRun(ctx, st, runs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadRun reads the run sum lists, whole, or Damaged when the history
// holds its Result damaged.
func ReadRun(ctx context.Context, st pipebench.Store, sum pipebench.RunSummary) (*pipebench.Result, error) {
	r, err := st.Run(ctx, sum.ID)
	if de := (*sqlstore.DamagedError)(nil); errors.As(err, &de) {
		return Damaged(sum, err), nil
	}
	return r, err
}

// Damaged stands in for a run whose Result the history holds damaged: its
// manifest as the history's list of runs has it, status error, and why as
// its reason, so that comparisons and tables leave it out and name it.
func Damaged(sum pipebench.RunSummary, why error) *pipebench.Result {
	return &pipebench.Result{Schema: pipebench.ResultSchema, Manifest: pipebench.Manifest{
		RunID: string(sum.ID), Scenario: sum.Scenario, Version: sum.Version, Case: sum.Case, Labels: sum.Labels,
		Started: sum.Started, Ended: sum.Started.Add(sum.Duration), Status: pipebench.StatusError,
		Reasons: []string{why.Error()},
	}}
}
