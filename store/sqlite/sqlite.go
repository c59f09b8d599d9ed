// Package sqlite keeps the results history in a SQLite file (pure Go, no
// cgo). Migrations are embedded and each runs in a transaction; a run is
// saved in one transaction, so a process killed mid-save leaves the history
// as it was.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/pipebench/pipebench"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a SQLite history. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
}

var _ pipebench.Store = (*Store)(nil)

// Open opens (creating if needed) the history at path and applies pending
// migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create the history folder: %w", err)
		}
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// migrate applies every embedded migration newer than the schema version,
// each in its own transaction.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var cur int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&cur); err != nil {
		return err
	}
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	sort.Strings(names)
	for _, name := range names {
		var n int
		fmt.Sscanf(filepath.Base(name), "%d_", &n)
		if n <= cur {
			continue
		}
		body, _ := migrations.ReadFile(name)
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, n); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Save stores r in one transaction and returns its id (the manifest's run
// id). Saving the same run twice replaces it.
func (s *Store) Save(ctx context.Context, r *pipebench.Result) (pipebench.RunID, error) {
	m := r.Manifest
	if m.RunID == "" {
		return "", errors.New("the result has no run id")
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	labels, _ := json.Marshal(m.Labels)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, m.RunID); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, scenario, version, run_case, status, started, ended, labels, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.RunID, m.Scenario, m.Version, m.Case, string(m.Status), m.Started.UnixNano(), m.Ended.UnixNano(), string(labels), string(doc)); err != nil {
		return "", err
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO kpis (run_id, phase, name, labels, value, unit) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return "", err
	}
	defer stmt.Close()
	phases := append([]pipebench.PhaseResult(nil), r.Phases...)
	if r.Total != nil {
		phases = append(phases, *r.Total)
	}
	for _, p := range phases {
		for _, k := range p.KPIs {
			lb := ""
			if len(k.Labels) > 0 {
				lb = pipebench.KeyOf("", k.Labels)
			}
			if _, err := stmt.ExecContext(ctx, m.RunID, p.Name, k.Name, lb, k.Value, string(k.Unit)); err != nil {
				return "", err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return "", err
	}
	return pipebench.RunID(m.RunID), nil
}

// Runs lists runs matching f, newest first.
func (s *Store) Runs(ctx context.Context, f pipebench.RunFilter) ([]pipebench.RunSummary, error) {
	q := `SELECT id, scenario, version, status, started, ended FROM runs WHERE 1=1`
	var args []any
	if f.Scenario != "" {
		q += ` AND scenario = ?`
		args = append(args, f.Scenario)
	}
	if f.Version != "" {
		q += ` AND version = ?`
		args = append(args, f.Version)
	}
	if !f.Since.IsZero() {
		q += ` AND started >= ?`
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		q += ` AND started < ?`
		args = append(args, f.Until.UnixNano())
	}
	q += ` ORDER BY started DESC, id DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pipebench.RunSummary
	for rows.Next() {
		var rs pipebench.RunSummary
		var status string
		var st, en int64
		if err := rows.Scan(&rs.ID, &rs.Scenario, &rs.Version, &status, &st, &en); err != nil {
			return nil, err
		}
		rs.Status = pipebench.Status(status)
		rs.Started = time.Unix(0, st).UTC()
		rs.Duration = time.Duration(en - st)
		out = append(out, rs)
	}
	return out, rows.Err()
}

// Run returns the saved Result with this id, or with the one id this prefix
// starts (like git's short hashes).
func (s *Store) Run(ctx context.Context, id pipebench.RunID) (*pipebench.Result, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, result FROM runs WHERE id = ? OR id LIKE ? ESCAPE '\' ORDER BY id LIMIT 3`,
		string(id), likePrefix(string(id)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids, docs []string
	for rows.Next() {
		var i, d string
		if err := rows.Scan(&i, &d); err != nil {
			return nil, err
		}
		if i == string(id) {
			ids, docs = []string{i}, []string{d}
			break
		}
		ids, docs = append(ids, i), append(docs, d)
	}
	switch len(ids) {
	case 0:
		return nil, pipebench.UsageError(fmt.Sprintf("no run %q in the history", id), "list runs with: pipebench history", nil)
	case 1:
	default:
		return nil, pipebench.UsageError(fmt.Sprintf("run %q is ambiguous (%s, ...)", id, strings.Join(ids, ", ")), "give more of the id", nil)
	}
	var r pipebench.Result
	if err := json.Unmarshal([]byte(docs[0]), &r); err != nil {
		return nil, fmt.Errorf("run %s is damaged: %w", ids[0], err)
	}
	return &r, nil
}

func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}
