package command

import (
	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/kpi"
)

func (a *app) mergeCommand() *cobra.Command {
	var out, format, store string
	var noStore bool
	cmd := &cobra.Command{
		Use:   "merge SHARD.json...",
		Short: "Merge the Results of the shards of one plan into one Result, with one verdict",
		Long: `merge joins shard Results (pipebench run --shard I/N --out shardI.json) into the Result one
generator would have recorded: counts added, rates over the shared phase windows, percentiles
from the merged latency histograms; thresholds and detectors are evaluated on the merged numbers,
and the merged run is saved to the history. Shards of different plans, a slice given twice or a
missing slice are refused.`,
		Example: `  pipebench run s.yaml --shard 1/2 --start-at +10s --out s1.json &
  pipebench run s.yaml --shard 2/2 --start-at +10s --out s2.json
  pipebench merge s1.json s2.json --out merged.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := a.reporter(format)
			if err != nil {
				return err
			}
			// Where the Result goes is checked before the shards are
			// read: they may be large.
			keep := execute.Keep{Out: out, Store: store, NoStore: noStore}
			if err := keep.Check(a.ctx); err != nil {
				return err
			}
			shards, err := execute.ReadShards(a.ctx, args)
			if err != nil {
				return err
			}
			return a.mergeShards(shards, rep, keep)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "out", "o", "", "write the merged Result (JSON) to this file")
	fl.StringVarP(&format, "format", "f", "text", "report printed")
	storeFlag(cmd, &store)
	fl.BoolVar(&noStore, "no-store", false, "do not save the merged run in the results history")
	return cmd
}

// mergeShards merges shard Results into one, then keeps it as any run's
// (pipebench merge, pipebench k8s run).
func (a *app) mergeShards(shards []*pipebench.Result, rep pipebench.Reporter, keep execute.Keep) error {
	merged, err := kpi.Merge(shards, a.reg)
	if err != nil {
		return pipebench.UsageError("cannot merge these shards", "give every shard Result of one plan, once each", err)
	}
	p := a.execParams(false, keep)
	p.Show = func(res *pipebench.Result) error { return rep.Report(a.stdout, res) }
	return &silentExit{code: execute.KeepResult(a.ctx, merged, p).Code}
}
