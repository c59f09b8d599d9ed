// Package postgres keeps the results history in PostgreSQL, for teams that
// share one history. It uses pgx through database/sql.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is an arbitrary advisory-lock key held by each migration
// transaction, so two pipebench processes starting at once take turns.
const migrationLock = `SELECT pg_advisory_xact_lock(7305682391)`

// Open connects to the database at url (postgres://user:pass@host/db) and
// applies pending migrations.
func Open(ctx context.Context, dsn string) (*sqlstore.Store, error) {
	where := redact(dsn)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("history %s: %s", where, scrub(err)), "write --store as postgres://USER:PASSWORD@HOST:PORT/DATABASE", nil)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, pipebench.UsageError(fmt.Sprintf("history %s: cannot connect: %s", where, scrub(err)), "check that the server runs and the user, password and database in --store are right", nil)
	}
	sub, _ := fs.Sub(migrations, "migrations")
	s, err := sqlstore.New(ctx, db, sqlstore.Dialect{Name: "postgres", Migrations: sub, Numbered: true, MigrationLock: migrationLock}, where)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// redact hides the password of a connection URL, even one that does not
// parse.
func redact(dsn string) string { return pipebench.RedactURL(dsn) }

// scrub hides any password an error of the driver might repeat.
func scrub(err error) string { return pipebench.RedactText(err.Error()) }
