package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/store"
)

// ExitCut is the exit code of a run cut short by a second Ctrl-C (128 +
// SIGINT, as shells report it). The partial Result was still written.
const ExitCut = 130

// signals returns a context done at the first SIGINT or SIGTERM (stop the
// load, drain, write the result), one done at the second (abandon the
// drain and in-flight sends, still write the result) and a function that
// stops listening. A third signal ends the process at once. Each step is
// announced on w.
func signals(w io.Writer) (stopCtx, cut context.Context, release func()) {
	stopCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cut, cutNow := context.WithCancel(context.Background())
	again := make(chan os.Signal, 2)
	quit := make(chan struct{})
	next := func() bool {
		select {
		case <-again:
			return true
		case <-quit:
			return false
		}
	}
	go func() {
		<-stopCtx.Done()
		select {
		case <-quit: // released, not signalled
			return
		default:
		}
		// Listen again before NotifyContext lets go, so that no signal in
		// between gets Go's default handling (an immediate exit).
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		stop()
		fmt.Fprintln(w, "pipebench: stopping: waiting for the sends in flight and the drain (Ctrl-C again to cut them short)")
		if !next() {
			return
		}
		cutNow()
		fmt.Fprintln(w, "pipebench: cut short: writing what was measured (Ctrl-C again to quit without it)")
		if !next() {
			return
		}
		os.Exit(ExitCut)
	}()
	return stopCtx, cut, func() {
		close(quit)
		stop()
		cutNow()
		signal.Stop(again)
	}
}

// finalCode is the exit code of a finished run: ExitCut when a second
// signal cut it short, else code, made non-zero when the result could not
// be kept where it was asked to go (--out, the history).
func (a *app) finalCode(code int, notKept bool) int {
	if a.cut != nil && a.cut.Err() != nil {
		return ExitCut
	}
	if notKept && code == pipebench.ExitOK {
		return pipebench.ExitFailure
	}
	return code
}

// checkOut finds out before a run, not after a 2-day soak, that --out
// cannot be written: a folder, a missing parent folder, no write permission.
func checkOut(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return pipebench.UsageError(fmt.Sprintf("--out %s is a directory", path), "give a file name, like "+filepath.Join(path, "result.json"), nil)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return pipebench.UsageError(fmt.Sprintf("cannot write --out %s: the folder %s does not exist", path, dir), "create it first (mkdir -p "+dir+") or choose another path", nil)
	case err != nil:
		return pipebench.UsageError(fmt.Sprintf("cannot write --out %s", path), "choose a writable path", err)
	case !fi.IsDir():
		return pipebench.UsageError(fmt.Sprintf("cannot write --out %s: %s is not a folder", path, dir), "choose a path inside a folder", nil)
	}
	f, err := os.CreateTemp(dir, ".pipebench-check-*")
	if err != nil {
		return pipebench.UsageError(fmt.Sprintf("cannot write --out %s: the folder %s is not writable", path, dir), "choose a writable path", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkStore opens the history, applies its migrations and makes a test
// write (rolled back) before any load is sent.
func (a *app) checkStore(ref string) error {
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	err := store.Check(ctx, ref)
	if err == nil {
		return nil
	}
	where := ref
	if where == "" {
		where = store.DefaultPath()
	}
	if fi, serr := os.Stat(strings.TrimPrefix(where, "sqlite://")); serr == nil && fi.IsDir() {
		err = errors.New("it is a folder, not a SQLite file")
	}
	hint := "fix it, point --store at another file (--store ./history.db), or run with --no-store"
	var pe *pipebench.Error
	if errors.As(err, &pe) && pe.Hint != "" {
		hint = pe.Hint + "; or run with --no-store"
	}
	return pipebench.UsageError(fmt.Sprintf("the results history %s cannot be used, so nothing was sent", pipebench.RedactURL(where)),
		hint, errors.New(pipebench.RedactText(strings.TrimPrefix(err.Error(), "history "+pipebench.RedactURL(where)+": "))))
}

// keepElsewhere writes res to a fallback file when where it was asked to go
// failed, and says where it went. It returns the fallback path, or "" when
// even that failed (then the JSON goes to stderr as a last resort).
func (a *app) keepElsewhere(near string, res *pipebench.Result, why error) string {
	name := "pipebench-result-" + res.Manifest.RunID + ".json"
	if res.Manifest.RunID == "" {
		name = fmt.Sprintf("pipebench-result-%d.json", time.Now().UnixNano())
	}
	var dirs []string
	if near != "" {
		dirs = append(dirs, filepath.Dir(near))
	}
	dirs = append(dirs, os.TempDir())
	fmt.Fprintf(a.stderr, "pipebench: %s\n", pipebench.RedactText(why.Error()))
	for _, dir := range dirs {
		path := filepath.Join(dir, name)
		if err := writeResult(path, res); err == nil {
			fmt.Fprintf(a.stderr, "  the result was written to %s instead\n", path)
			return path
		}
	}
	fmt.Fprintln(a.stderr, "  no fallback file could be written either; the result follows as JSON:")
	b, _ := json.Marshal(res)
	a.stderr.Write(append(b, '\n'))
	return ""
}

// scrubResult hides any credential that reached a Result through a URL, a
// label or a message, before it is printed, written or saved.
func scrubResult(res *pipebench.Result) {
	m := &res.Manifest
	m.Args = pipebench.RedactArgs(m.Args)
	m.Target = pipebench.RedactText(m.Target)
	m.File = pipebench.RedactText(m.File)
	for i := range m.Reasons {
		m.Reasons[i] = pipebench.RedactText(m.Reasons[i])
	}
	for k, v := range m.Labels {
		m.Labels[k] = pipebench.RedactText(v)
	}
	for i := range res.Thresholds {
		res.Thresholds[i].Message = pipebench.RedactText(res.Thresholds[i].Message)
	}
	for i := range res.Detections {
		res.Detections[i].Message = pipebench.RedactText(res.Detections[i].Message)
	}
	phases := res.Phases
	if res.Total != nil {
		phases = append(append([]pipebench.PhaseResult(nil), phases...), *res.Total)
	}
	for _, p := range phases {
		for _, k := range p.KPIs {
			for lk, lv := range k.Labels {
				k.Labels[lk] = pipebench.RedactText(lv)
			}
		}
	}
}

// redacting writes through to w with every URL's password replaced, for
// logs (slog writes a record in one call).
type redacting struct{ w io.Writer }

func (r redacting) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, pipebench.RedactText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// checkpointTo makes the runner write the Result so far to out every
// interval (--checkpoint), atomically, credentials removed; the final
// Result replaces it at the end.
func (a *app) checkpointTo(p *runner.Params, out string, every time.Duration) error {
	switch {
	case every == 0:
		return nil
	case every < 0:
		return pipebench.UsageError(fmt.Sprintf("--checkpoint %s is negative", every), "write it like 5m", nil)
	case out == "":
		return pipebench.UsageError("--checkpoint needs --out", "the checkpoints are written to the --out file", nil)
	}
	p.CheckpointEvery = every
	p.Checkpoint = func(res *pipebench.Result) {
		scrubResult(res)
		if err := writeResult(out, res); err != nil {
			fmt.Fprintf(a.stderr, "pipebench: checkpoint: %v\n", pipebench.RedactText(err.Error()))
		}
	}
	return nil
}
