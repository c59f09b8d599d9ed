// Package sqlstore is the results history over database/sql, shared by the
// SQLite and PostgreSQL backends. A Dialect supplies what differs: the
// migrations, the placeholder style and how concurrent migrators are kept
// apart.
//
// Every Result is kept whole as JSON (so any report can be rendered again)
// and its KPIs as rows (so runs of different versions line up in SQL).
// Migrations each run in a transaction; a run is saved in one transaction,
// so a process killed mid-save leaves the history as it was.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// Dialect is what one database needs done its own way.
type Dialect struct {
	// Name is shown in errors: "sqlite", "postgres".
	Name string
	// Migrations holds NNNN_name.sql files at its root, applied in order.
	Migrations fs.FS
	// Numbered placeholders ($1, $2, ...) instead of ?.
	Numbered bool
	// MigrationLock, when set, is executed first in every migration
	// transaction so that two processes migrating at once take turns.
	MigrationLock string
}

// Store is a history in one database. It is safe for concurrent use.
type Store struct {
	db    *sql.DB
	d     Dialect
	where string
}

var _ pipebench.Store = (*Store)(nil)

// New applies pending migrations to db and returns the store. where names
// the database in errors (a path or a URL without its password).
func New(ctx context.Context, db *sql.DB, d Dialect, where string) (*Store, error) {
	s := &Store{db: db, d: d, where: where}
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("history %s: %w", where, err)
	}
	return s, nil
}

// DB is the underlying database, for tests and maintenance.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// q rewrites ? placeholders for the dialect.
func (s *Store) q(query string) string {
	if !s.d.Numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// migrate applies every migration newer than the schema version, each in
// its own transaction together with its schema_version row.
func (s *Store) migrate(ctx context.Context) error {
	if err := s.inLock(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`)
		return err
	}); err != nil {
		return err
	}
	names, err := fs.Glob(s.d.Migrations, "*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		n, err := strconv.Atoi(strings.SplitN(path.Base(name), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: the name must start with its number", name)
		}
		body, err := fs.ReadFile(s.d.Migrations, name)
		if err != nil {
			return err
		}
		if err := s.apply(ctx, n, name, string(body)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, n int, name, body string) error {
	return s.inLock(ctx, func(tx *sql.Tx) error {
		var cur int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&cur); err != nil {
			return err
		}
		if n <= cur {
			return nil
		}
		if _, err := tx.ExecContext(ctx, body); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_version (version) VALUES (?)`), n)
		return err
	})
}

// inLock runs f in a transaction holding the dialect's migration lock and
// commits when f succeeds.
func (s *Store) inLock(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.d.MigrationLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.MigrationLock); err != nil {
			return err
		}
	}
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Probe proves that a run can be saved: it writes a row in a transaction
// and rolls it back, so the history is left as it was. It finds a file that
// opens but is read-only, or a database user without INSERT rights, before
// a long run rather than after it.
func (s *Store) Probe(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history %s: %w", s.where, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO runs (id, scenario, version, run_case, status, started, ended, labels, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		"pipebench-probe", "", "", "", "", 0, 0, "{}", "{}"); err != nil {
		return fmt.Errorf("history %s: a test write failed: %w", s.where, err)
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
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM kpis WHERE run_id = ?`), m.RunID); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM runs WHERE id = ?`), m.RunID); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO runs (id, scenario, version, run_case, status, started, ended, labels, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		m.RunID, m.Scenario, m.Version, m.Case, string(m.Status), m.Started.UnixNano(), m.Ended.UnixNano(), string(labels), string(doc)); err != nil {
		return "", err
	}
	stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO kpis (run_id, phase, name, labels, value, unit) VALUES (?, ?, ?, ?, ?, ?)`))
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
	q := `SELECT id, scenario, version, run_case, status, started, ended, labels FROM runs WHERE 1=1`
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
	rows, err := s.db.QueryContext(ctx, s.q(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pipebench.RunSummary
	for rows.Next() {
		var rs pipebench.RunSummary
		var status, labels string
		var st, en int64
		if err := rows.Scan(&rs.ID, &rs.Scenario, &rs.Version, &rs.Case, &status, &st, &en, &labels); err != nil {
			return nil, err
		}
		json.Unmarshal([]byte(labels), &rs.Labels) // a damaged column leaves none
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
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, result FROM runs WHERE id = ? OR id LIKE ? ESCAPE '!' ORDER BY id LIMIT 3`),
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
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch len(ids) {
	case 0:
		return nil, pipebench.UsageError(fmt.Sprintf("no run %q in the history %s", id, s.where), "list runs with: pipebench history", nil)
	case 1:
	default:
		return nil, pipebench.UsageError(fmt.Sprintf("run %q is ambiguous (%s, ...)", id, strings.Join(ids, ", ")), "give more of the id", nil)
	}
	var r pipebench.Result
	if err := json.Unmarshal([]byte(docs[0]), &r); err != nil {
		return nil, &DamagedError{ID: ids[0], Err: err}
	}
	if r.Schema == 0 || r.Schema > pipebench.ResultSchema {
		return nil, &DamagedError{ID: ids[0], Err: fmt.Errorf("its Result has schema %d; this pipebench reads up to %d", r.Schema, pipebench.ResultSchema)}
	}
	return &r, nil
}

// DamagedError is a run the history holds but whose Result cannot be read
// (changed, truncated, or written by a newer pipebench).
type DamagedError struct {
	ID  string
	Err error
}

func (e *DamagedError) Error() string {
	return "run " + e.ID + " is damaged in the history: " + e.Err.Error()
}
func (e *DamagedError) Unwrap() error { return e.Err }

// likePrefix escapes LIKE's wildcards with '!' (the same in every SQL
// dialect, unlike backslash) and appends %.
func likePrefix(p string) string {
	r := strings.NewReplacer(`!`, `!!`, `%`, `!%`, `_`, `!_`)
	return r.Replace(p) + "%"
}
