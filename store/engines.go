//go:build !pipebench_nosqlstore

package store

import (
	"context"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/store/postgres"
	"github.com/pipebench/pipebench/store/sqlite"
)

// HasEngines tells that this build keeps a results history: a build with
// the tag pipebench_nosqlstore (the Kubernetes shards' image, whose pods
// hand their results to the launcher) carries neither SQLite nor
// PostgreSQL.
const HasEngines = true

func openSQLite(ctx context.Context, path string) (pipebench.Store, error) {
	return sqlite.Open(ctx, path)
}

func openPostgres(ctx context.Context, url string) (pipebench.Store, error) {
	return postgres.Open(ctx, url)
}
