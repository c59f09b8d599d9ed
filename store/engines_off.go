//go:build pipebench_nosqlstore

package store

import (
	"context"

	"github.com/pipebench/pipebench"
)

// HasEngines tells that this build keeps a results history: this one,
// built with the tag pipebench_nosqlstore (the Kubernetes shards' image,
// whose pods hand their results to the launcher), does not.
const HasEngines = false

func openSQLite(context.Context, string) (pipebench.Store, error) { return nil, errNoEngines() }

func openPostgres(context.Context, string) (pipebench.Store, error) { return nil, errNoEngines() }

func errNoEngines() error {
	return pipebench.UsageError("this build keeps no results history (built with the tag pipebench_nosqlstore, as the Kubernetes shards' image is)",
		"use pipebench, or pipebench-load built without the tag", nil)
}
