// Package wing finds the programs that carry pipebench's heavy parts, so
// that the pipebench command itself stays small and quick to build: the
// embedded systems under test that run as child processes
// (pipebench-sut: the OpenTelemetry Collector, the health-event service)
// and the Kubernetes launcher (pipebench-k8s).
//
// A program is looked for, in order: in the folder PIPEBENCH_BIN_DIR
// names; beside the running executable (go install ./cmd/... and the
// image put them there); built from the source this binary was built from,
// when it was built in a checkout that is still there and the go command
// is at hand (go run ./cmd/pipebench: the first use compiles it, with
// progress, into the user's cache, and later uses find it up to date);
// then on PATH.
package wing

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The programs of the wing.
const (
	SUT = "pipebench-sut" // the embedded systems under test's child processes
	K8s = "pipebench-k8s" // the Kubernetes launcher
)

// DirEnv names a folder that holds the wing's programs.
const DirEnv = "PIPEBENCH_BIN_DIR"

// module is this module's path: a checkout is a folder whose go.mod names
// it.
const module = "github.com/pipebench/pipebench"

var (
	mu    sync.Mutex
	found = map[string]string{}
)

// Path returns the path of the program name (SUT, K8s), building it from
// the source when that is where it comes from; progress, if not nil, is
// told what a build does. The answer is kept for the process's life.
func Path(ctx context.Context, name string, progress io.Writer) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := found[name]; ok {
		return p, nil
	}
	p, err := locate(ctx, name, progress)
	if err == nil {
		found[name] = p
	}
	return p, err
}

func locate(ctx context.Context, name string, progress io.Writer) (string, error) {
	if dir := os.Getenv(DirEnv); dir != "" {
		p := filepath.Join(dir, name)
		if !executable(p) {
			return "", fmt.Errorf("%s=%s holds no program %s", DirEnv, dir, name)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), name)
		if executable(p) {
			if err := sameBuild(p); err != nil {
				return "", err
			}
			return p, nil
		}
	}
	if root, ok := SourceRoot(); ok {
		if gobin, err := exec.LookPath("go"); err == nil {
			return build(ctx, gobin, root, name, progress)
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		if err := sameBuild(p); err != nil {
			return "", err
		}
		return p, nil
	}
	return "", fmt.Errorf("%s is not installed beside pipebench (%s), in %s or on PATH, and pipebench was not built from a checkout it could build it from: "+
		"install both from the same source (go install ./cmd/..., or go install %s/cmd/%s@VERSION), or set %s to the folder that holds it",
		name, filepath.Dir(os.Args[0]), DirEnv, module, name, DirEnv)
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// SourceRoot returns the root of the checkout this binary was compiled
// from, when it was compiled there without -trimpath and the checkout is
// still there.
func SourceRoot() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false // -trimpath: no folder to build in
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "module "+module+"\n") {
		return "", false
	}
	return root, true
}

// sameBuild refuses a program of another build than this one: the child
// of a system under test reads what its parent writes, and the two must
// agree. Builds that do not say what they were built from (no version
// control stamp, no module version) are not compared.
func sameBuild(p string) error {
	self, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	other, err := buildinfo.ReadFile(p)
	if err != nil {
		return fmt.Errorf("%s: not a Go program of pipebench's (%v)", p, err)
	}
	a, b := stamp(self), stamp(other)
	if a == "" || b == "" || a == b {
		return nil
	}
	return fmt.Errorf("%s is of another build (%s) than pipebench (%s): install both from the same source (go install ./cmd/...)", p, b, a)
}

// stamp is what a build says it was built from: its module version and
// version control revision ("" when it says neither).
func stamp(bi *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" && (bi.Main.Version == "" || bi.Main.Version == "(devel)") {
		return ""
	}
	return strings.TrimSpace(bi.Main.Version + " " + rev + " " + modified)
}

// CacheDir is where programs built from a checkout go: one folder per
// checkout, in the user's cache.
func CacheDir(root string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	h := uint64(14695981039346656037)
	for _, c := range []byte(root) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return filepath.Join(base, "pipebench", "bin", fmt.Sprintf("%016x", h)), nil
}

// build installs cmd/name of the checkout at root into its cache folder
// (go install: nothing is compiled or written when it is up to date),
// one process at a time (a lock file), telling progress how far it came.
func build(ctx context.Context, gobin, root, name string, progress io.Writer) (string, error) {
	dir, err := CacheDir(root)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make %s for %s: %w", dir, name, err)
	}
	unlock, err := lock(ctx, filepath.Join(dir, name+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	target := filepath.Join(dir, name)
	fresh := !executable(target)
	total := 0
	if fresh && progress != nil {
		// How many packages a build compiles, to say how far it came.
		if out, err := goCmd(ctx, gobin, root, dir, "list", "-deps", "./cmd/"+name).Output(); err == nil {
			total = strings.Count(string(out), "\n")
		}
		fmt.Fprintf(progress, "building %s from %s once (the first run after a change compiles it; later runs find it): %d packages\n", name, root, total)
	}
	cmd := goCmd(ctx, gobin, root, dir, "install", "-v", "./cmd/"+name)
	out, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	var tail []string
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	sc := bufio.NewScanner(out)
	n, last := 0, time.Now()
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "/") || strings.Contains(line, ".") {
			n++
		}
		tail = append(tail, line)
		if len(tail) > 20 {
			tail = tail[1:]
		}
		if progress != nil && time.Since(last) >= 5*time.Second {
			last = time.Now()
			if total > 0 {
				fmt.Fprintf(progress, "building %s: %d of %d packages compiled, %s\n", name, n, total, time.Since(start).Round(time.Second))
			} else {
				fmt.Fprintf(progress, "building %s: %d packages compiled, %s\n", name, n, time.Since(start).Round(time.Second))
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("build %s in %s: %w\n%s", name, root, err, strings.Join(tail, "\n"))
	}
	if progress != nil && n > 0 {
		fmt.Fprintf(progress, "built %s in %s\n", name, time.Since(start).Round(time.Second))
	}
	if !executable(target) {
		return "", fmt.Errorf("build %s: go install wrote no %s", name, target)
	}
	return target, nil
}

func goCmd(ctx context.Context, gobin, root, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=readonly")
	return cmd
}

// lock takes an exclusive lock on the file at path, waiting for another
// process's (a build in a parallel test binary) as long as ctx lets it.
func lock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another build of %s: %w", filepath.Base(path), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
