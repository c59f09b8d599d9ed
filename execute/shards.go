package execute

import (
	"fmt"
	"os"

	"github.com/pipebench/pipebench"
)

// MaxShardsSize bounds what `pipebench merge` reads in all: the shard
// Results are held in memory together while they are merged.
const MaxShardsSize = 2 << 30

// ReadShards reads the shard Results at paths for a merge, each through
// pipebench.ReadResult's limit, refusing before reading any when together
// they are larger than MaxShardsSize.
func ReadShards(paths []string) ([]*pipebench.Result, error) {
	var total int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
	}
	if total > MaxShardsSize {
		return nil, pipebench.UsageError(fmt.Sprintf("the %d shard files hold %s, more than the %s merge reads at once", len(paths), pipebench.FormatBytes(total), pipebench.FormatBytes(MaxShardsSize)),
			"run the shards with a longer interval (fewer points in their series), or the run in shorter parts", nil)
	}
	out := make([]*pipebench.Result, 0, len(paths))
	for _, p := range paths {
		r, err := pipebench.ReadResult(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
