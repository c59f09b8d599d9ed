package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// ReadShards reads the shard Results at paths for a merge, one after the
// other, each through pipebench's input limit (MaxResultSize) and
// kpi.DecodeShard, which refuses a shard holding more than a run of its
// plan records while it reads it: what the merge holds is bounded by the
// plan, not by what the files were made to hold. A signal (ctx) stops it
// at once.
func ReadShards(ctx context.Context, paths []string) ([]*pipebench.Result, error) {
	out := make([]*pipebench.Result, 0, len(paths))
	for _, p := range paths {
		r, err := readShard(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func readShard(ctx context.Context, path string) (*pipebench.Result, error) {
	in := pipebench.Input{Path: path, What: "shard", Limit: pipebench.MaxResultSize}
	f, err := pipebench.OpenInput(ctx, in)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := kpi.DecodeShard(f)
	if err != nil {
		if pe := (*pipebench.Error)(nil); errors.As(err, &pe) {
			return nil, err // too large, interrupted
		}
		return nil, pipebench.UsageError(fmt.Sprintf("%s is not a pipebench result of a shard that can be merged", path),
			"give the files `pipebench run --shard I/N --out FILE` wrote, unchanged", err)
	}
	if res.Schema == 0 || res.Schema > pipebench.ResultSchema {
		return nil, pipebench.UsageError(fmt.Sprintf("%s has result schema %d; this pipebench reads up to %d", path, res.Schema, pipebench.ResultSchema), "", nil)
	}
	return res, nil
}
