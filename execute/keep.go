package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report/jsonreport"
	"github.com/pipebench/pipebench/store"
)

// Keep says where a Result goes once it exists.
type Keep struct {
	// Out is a file the Result is written to as JSON, atomically; "" none.
	Out string
	// Store is the results history (a SQLite file or a postgres:// URL;
	// "" the default file); NoStore keeps the Result out of it.
	Store   string
	NoStore bool
	// Quiet leaves out the line saying where the Result was written.
	Quiet bool
}

// Check finds out before a run, not after a 2-day soak, that the Result
// cannot be kept where asked: Out a folder, its folder missing or not
// writable; the history unusable (it is opened, migrated and written to,
// the write rolled back).
func (k Keep) Check(ctx context.Context) error {
	if k.Out != "" {
		if err := checkOut(k.Out); err != nil {
			return err
		}
	}
	if !k.NoStore {
		return checkStore(ctx, k.Store)
	}
	return nil
}

// checkOut is Check of one output file.
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

// checkStore is Check of the history.
func checkStore(ctx context.Context, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
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

// WriteResult writes res as JSON to path atomically (a temporary file in
// the same folder, synced, renamed over path), readable by its owner
// only: a Result holds the run's arguments and configuration.
func WriteResult(path string, res *pipebench.Result) error {
	return WriteFile(path, 0o600, func(w io.Writer) error { return jsonreport.New().Report(w, res) })
}

// writing holds the temporary files WriteFile is writing, by name: a
// process that Signals ends removes them first.
var writing sync.Map

// removeWriting removes the temporary files being written.
func removeWriting() {
	writing.Range(func(k, _ any) bool {
		os.Remove(k.(string))
		return true
	})
}

// WriteFile writes what write produces to path atomically, with the
// permissions perm.
func WriteFile(path string, perm fs.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	writing.Store(tmp.Name(), struct{}{})
	defer writing.Delete(tmp.Name())
	fail := func(err error) error {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(tmp); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// keeper keeps Results where a Keep says, telling a person on log what it
// did and where a Result went when the asked place failed.
type keeper struct {
	k   Keep
	log io.Writer
}

// write writes res to Out, or, when that fails, to a fallback file. It
// returns where res is and whether that is not where it was asked to go.
func (kp keeper) write(res *pipebench.Result) (keptAt string, notKept bool) {
	if kp.k.Out == "" {
		return "", false
	}
	if err := WriteResult(kp.k.Out, res); err != nil {
		return kp.elsewhere(kp.k.Out, res, err), true
	}
	return kp.k.Out, false
}

// save stores res in the history, unless NoStore, and tells whether it
// was saved. When it was not, res is kept in a fallback file (unless
// keptAt already holds it) and the message names where.
func (kp keeper) save(ctx context.Context, res *pipebench.Result, keptAt string) bool {
	if kp.k.NoStore {
		return true
	}
	// Save even after Ctrl-C: what was measured is kept.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, kp.k.Store)
	if err == nil {
		defer s.Close()
		_, err = s.Save(ctx, res)
	}
	if err != nil {
		err = fmt.Errorf("the run was not saved to the history: %s", pipebench.RedactText(err.Error()))
		if keptAt != "" {
			fmt.Fprintf(kp.log, "pipebench: %v\n  the result is in %s\n", err, keptAt)
		} else {
			kp.elsewhere("", res, err)
		}
		fmt.Fprintln(kp.log, "  hint: check --store, or use --no-store")
		return false
	}
	if !strings.EqualFold(os.Getenv("PIPEBENCH_QUIET_STORE"), "1") {
		fmt.Fprintf(kp.log, "saved as run %s (pipebench show %s)\n", res.Manifest.RunID, res.Manifest.RunID)
	}
	return true
}

// elsewhere writes res to a fallback file when where it was asked to go
// failed, and says where it went. It returns the fallback path, or "" when
// even that failed (then the JSON goes to the log as a last resort).
func (kp keeper) elsewhere(near string, res *pipebench.Result, why error) string {
	name := "pipebench-result-" + res.Manifest.RunID + ".json"
	if res.Manifest.RunID == "" {
		name = fmt.Sprintf("pipebench-result-%d.json", time.Now().UnixNano())
	}
	var dirs []string
	if near != "" {
		dirs = append(dirs, filepath.Dir(near))
	}
	dirs = append(dirs, os.TempDir())
	fmt.Fprintf(kp.log, "pipebench: %s\n", pipebench.RedactText(why.Error()))
	for _, dir := range dirs {
		path := filepath.Join(dir, name)
		if err := WriteResult(path, res); err == nil {
			fmt.Fprintf(kp.log, "  the result was written to %s instead\n", path)
			return path
		}
	}
	fmt.Fprintln(kp.log, "  no fallback file could be written either; the result follows as JSON:")
	b, _ := json.Marshal(res)
	kp.log.Write(append(b, '\n'))
	return ""
}
