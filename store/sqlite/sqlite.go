// Package sqlite keeps the results history in a SQLite file (pure Go, no
// cgo), the default backend.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/pipebench/pipebench/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Open opens (creating if needed) the history at path and applies pending
// migrations. A new history (and a folder made for it) is readable by its
// owner only: it holds every run's arguments and configuration; SQLite
// gives its journal files the database file's permissions.
func Open(ctx context.Context, path string) (*sqlstore.Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create the history folder: %w", err)
		}
	}
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	sub, _ := fs.Sub(migrations, "migrations")
	s, err := sqlstore.New(ctx, db, sqlstore.Dialect{Name: "sqlite", Migrations: sub}, path)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}
