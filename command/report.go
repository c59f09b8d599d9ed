package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/report/chart"
)

func (a *app) reportCommand() *cobra.Command {
	var format, out, storeRef, charts string
	cmd := &cobra.Command{
		Use:   "report RESULT.json|RUN [RESULT.json|RUN...]",
		Short: "Render saved Results again, in any format, offline; several runs overlay in one HTML page",
		Example: `  pipebench report result.json --format html --out report.html
  pipebench report 2026112 --format md
  pipebench report old.json new.json --format html --out overlay.html
  pipebench report result.json --charts docs/img     # every chart as SVG and PNG`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := a.reporter(format)
			if err != nil {
				return err
			}
			multi, _ := rep.(pipebench.MultiReporter)
			if len(args) > 1 && multi == nil && charts == "" {
				var overlays []string
				for _, name := range a.reg.Reporters.Names() {
					if r, err := a.reg.Reporter(name); err == nil {
						if _, ok := r.(pipebench.MultiReporter); ok {
							overlays = append(overlays, name)
						}
					}
				}
				return pipebench.UsageError(fmt.Sprintf("%d results given: --format %s shows one run", len(args), format),
					"formats that overlay several runs: "+strings.Join(overlays, ", ")+"; or `pipebench compare` for a table of versions", nil)
			}
			var results []*pipebench.Result
			for _, arg := range args {
				r, err := a.loadResult(storeRef, arg)
				if err != nil {
					return err
				}
				results = append(results, r)
			}
			if charts != "" {
				return writeCharts(a.stdout, charts, results)
			}
			render := func(w io.Writer) error {
				// A signal stops the rendering at its next write.
				w = ctxWriter{a.ctx, w}
				if multi != nil {
					return multi.ReportAll(w, results)
				}
				return rep.Report(w, results[0])
			}
			if out == "" {
				return render(a.stdout)
			}
			// Readable by its owner only, as the Result it shows.
			return execute.WriteFile(out, 0o600, render)
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "report format: "+strings.Join(a.reg.Reporters.Names(), ", "))
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&charts, "charts", "", "write every chart as SVG and PNG into this folder instead of a report")
	storeFlag(cmd, &storeRef)
	return cmd
}

// loadResult reads a Result file, or a run of the history when no such
// file exists.
func (a *app) loadResult(storeRef, arg string) (*pipebench.Result, error) {
	_, statErr := os.Stat(arg)
	if statErr == nil || strings.HasSuffix(arg, ".json") || strings.ContainsRune(arg, filepath.Separator) {
		return pipebench.ReadResultContext(a.ctx, arg) // a path: say what is wrong with the file
	}
	r, err := a.loadRun(storeRef, arg)
	if err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("%q is neither a result file nor a run in the history: %v", arg, err),
			"give a file written by `pipebench run --out`, or a run id from `pipebench history`", nil)
	}
	return r, nil
}

// writeCharts writes each chart of the results as ID.svg and ID.png.
func writeCharts(stdout io.Writer, dir string, results []*pipebench.Result) error {
	if !chart.HasPNG {
		return pipebench.UsageError("--charts: this build draws no PNG (built with the tag pipebench_nopng, as the Kubernetes shards' image is)",
			"write the charts with pipebench, or with pipebench-load built without the tag (go install ./cmd/pipebench-load)", nil)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pipebench.UsageError(fmt.Sprintf("cannot create --charts folder %s", dir), "", err)
	}
	cs := chart.Build(results...)
	if len(cs) == 0 {
		return pipebench.UsageError("the result has no series to chart", "series are recorded by `pipebench run`; a result from another tool has none", nil)
	}
	for _, c := range cs {
		for _, f := range []struct {
			ext  string
			draw func(io.Writer) error
		}{{"svg", c.SVG}, {"png", c.PNG}} {
			path := filepath.Join(dir, c.ID+"."+f.ext)
			if err := execute.WriteFile(path, 0o600, f.draw); err != nil {
				return err
			}
			fmt.Fprintln(stdout, path)
		}
	}
	return nil
}

// ctxWriter writes to w until ctx is done, then fails every write with
// ctx's error.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("stopped while writing the report: %w", err)
	}
	return c.w.Write(p)
}
