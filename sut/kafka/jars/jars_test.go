package jars_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/sut/kafka/jars"
)

// libs is the folder of the jars Maven resolved from pom.xml
// ($PIPEBENCH_KAFKA_LIBS, as .ci/run sets it): the test repository is
// built from it, and the pinned list is held to it.
func libs(t *testing.T) string {
	t.Helper()
	d := os.Getenv(jars.LibsEnv)
	if d == "" {
		if os.Getenv("PIPEBENCH_KAFKA_REQUIRED") == "1" {
			t.Fatalf("%s is not set", jars.LibsEnv)
		}
		t.Skipf("%s is not set: no jars to serve as a Maven repository", jars.LibsEnv)
	}
	return d
}

// repo is a real HTTP server on loopback serving a Maven repository's
// layout (group/artifact/version/file.jar) made of the jars in libs,
// through net/http's file server (which answers Range requests with 206).
// It records every request, and can be told to misbehave for one path.
type repo struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
	// hook, if set, answers a request instead of the file server when it
	// returns true.
	hook func(w http.ResponseWriter, r *http.Request, n int) bool
}

type request struct{ path, rng string }

func newRepo(t *testing.T, list []jars.Jar) *repo {
	t.Helper()
	src := libs(t)
	root := t.TempDir()
	for _, j := range list {
		p := filepath.Join(root, filepath.FromSlash(j.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(src, j.Name()), p); err != nil {
			t.Fatal(err)
		}
	}
	rp := &repo{}
	files := http.StripPrefix("/maven2", http.FileServer(http.Dir(root)))
	rp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.mu.Lock()
		rp.reqs = append(rp.reqs, request{r.URL.Path, r.Header.Get("Range")})
		n := 0
		for _, q := range rp.reqs {
			if q.path == r.URL.Path {
				n++
			}
		}
		hook := rp.hook
		rp.mu.Unlock()
		if hook != nil && hook(w, r, n) {
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(rp.Close)
	return rp
}

func (rp *repo) url() string { return rp.URL + "/maven2" }

func (rp *repo) requests() []request {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return slices.Clone(rp.reqs)
}

// pick returns the listed jars whose names start with one of prefixes.
func pick(t *testing.T, prefixes ...string) []jars.Jar {
	t.Helper()
	var out []jars.Jar
	for _, j := range jars.Jars() {
		for _, p := range prefixes {
			if strings.HasPrefix(j.Name(), p) {
				out = append(out, j)
			}
		}
	}
	if len(out) != len(prefixes) {
		t.Fatalf("picked %d jars for %q", len(out), prefixes)
	}
	return out
}

func sum(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The pinned list is what Maven resolves from pom.xml: the same file
// names, sizes and SHA-256 as the folder Maven filled, and pom.xml's
// kafka.version is Version.
func TestListIsWhatMavenResolved(t *testing.T) {
	pom, err := os.ReadFile("pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(pom); m == nil || string(m[1]) != jars.Version {
		t.Fatalf("pom.xml's kafka.version is %q, Version %q", m, jars.Version)
	}
	list := jars.Jars()
	if len(list) < 90 {
		t.Fatalf("%d jars pinned", len(list))
	}
	src := libs(t)
	onDisk, _ := filepath.Glob(filepath.Join(src, "*.jar"))
	var names []string
	for _, p := range onDisk {
		names = append(names, filepath.Base(p))
	}
	var pinned []string
	for _, j := range list {
		pinned = append(pinned, j.Name())
		st, err := os.Stat(filepath.Join(src, j.Name()))
		if err != nil {
			t.Errorf("%s is pinned but Maven's folder has no such jar: %v", j.Name(), err)
			continue
		}
		if st.Size() != j.Size || sum(t, filepath.Join(src, j.Name())) != j.SHA256 {
			t.Errorf("%s: pinned %d bytes %s, Maven's is %d bytes %s", j.Name(), j.Size, j.SHA256, st.Size(), sum(t, filepath.Join(src, j.Name())))
		}
	}
	slices.Sort(names)
	slices.Sort(pinned)
	if !slices.Equal(names, pinned) {
		t.Errorf("Maven's folder has %d jars, %d are pinned:\nmaven  %q\npinned %q", len(names), len(pinned), names, pinned)
	}
	if !strings.Contains(strings.Join(pinned, " "), "kafka_2.13-"+jars.Version+".jar") {
		t.Errorf("kafka_2.13-%s.jar is not pinned", jars.Version)
	}
}

// Every pinned jar from an empty folder: each file byte for byte the
// jar Maven resolved, the progress ending at the whole size, one request
// a jar; a second fetch checks them and asks for nothing.
func TestFetchEveryJar(t *testing.T) {
	list := jars.Jars()
	rp := newRepo(t, list)
	dir := filepath.Join(t.TempDir(), "kafka")
	var last jars.FetchProgress
	var calls atomic.Int64
	got, err := jars.Fetch(context.Background(), jars.FetchParams{Dir: dir, Repo: rp.url(), Every: 10 * time.Millisecond,
		Progress: func(p jars.FetchProgress) { calls.Add(1); last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if got != dir {
		t.Fatalf("fetched into %s, asked %s", got, dir)
	}
	var total int64
	for _, j := range list {
		total += j.Size
		a, err := os.ReadFile(filepath.Join(dir, j.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(libs(t), j.Name()))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs from Maven's", j.Name())
		}
	}
	if !last.Done || last.Bytes != total || last.Total != total || last.Files != len(list) || last.Fetched != total {
		t.Fatalf("last progress %+v, want done with %d bytes, %d files", last, total, len(list))
	}
	if n := len(rp.requests()); n != len(list) {
		t.Fatalf("%d requests for %d jars", n, len(list))
	}
	t.Logf("%d jars, %.1f MB, %d progress calls, %s", len(list), float64(total)/1e6, calls.Load(), jars.FormatProgress(last))
	if !jars.Complete(dir, list) {
		t.Fatal("Complete is false after a fetch")
	}
	if _, err := jars.Fetch(context.Background(), jars.FetchParams{Dir: dir, Repo: rp.url(), Progress: func(p jars.FetchProgress) { last = p }}); err != nil {
		t.Fatal(err)
	}
	if n := len(rp.requests()); n != len(list) || last.Fetched != 0 || last.Files != len(list) {
		t.Fatalf("a second fetch made %d requests in all and fetched %d bytes", n, last.Fetched)
	}
}

// A jar changed in place (same size), one cut short, and a jar not on the
// list: the first two are fetched again (and only they), the third
// removed.
func TestCorruptedJarFetchedAgain(t *testing.T) {
	list := pick(t, "slf4j-api-", "jopt-simple-", "re2j-")
	rp := newRepo(t, list)
	dir := t.TempDir()
	if _, err := jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: dir, Repo: rp.url()}); err != nil {
		t.Fatal(err)
	}
	flip := filepath.Join(dir, list[0].Name())
	b, _ := os.ReadFile(flip)
	b[len(b)/2] ^= 0xff
	os.WriteFile(flip, b, 0o644)
	short := filepath.Join(dir, list[1].Name())
	os.Truncate(short, list[1].Size/2)
	stray := filepath.Join(dir, "old-1.0.jar")
	os.WriteFile(stray, []byte("x"), 0o644)
	if jars.Complete(dir, list) {
		t.Fatal("Complete is true with a corrupted jar")
	}
	before := len(rp.requests())
	if _, err := jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: dir, Repo: rp.url()}); err != nil {
		t.Fatal(err)
	}
	var again []string
	for _, r := range rp.requests()[before:] {
		again = append(again, filepath.Base(r.path))
	}
	slices.Sort(again)
	want := []string{list[1].Name(), list[0].Name()}
	slices.Sort(want)
	if !slices.Equal(again, want) {
		t.Fatalf("fetched again %q, want %q", again, want)
	}
	for _, j := range list {
		if sum(t, filepath.Join(dir, j.Name())) != j.SHA256 {
			t.Fatalf("%s does not check after the second fetch", j.Name())
		}
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray jar is still there: %v", err)
	}
}

// A part left by a stopped fetch is resumed: the request asks for the
// rest (Range), the server answers 206, and only the rest is received. A
// server that ignores Range sends the whole file, which replaces the part.
func TestResumeAPart(t *testing.T) {
	list := pick(t, "scala-library-")
	j := list[0]
	rp := newRepo(t, list)
	whole, _ := os.ReadFile(filepath.Join(libs(t), j.Name()))
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignores-range=%v", ignore), func(t *testing.T) {
			dir := t.TempDir()
			have := j.Size / 3
			os.WriteFile(filepath.Join(dir, j.Name()+".part"), whole[:have], 0o644)
			rp.hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
				if ignore {
					r.Header.Del("Range")
				}
				return false
			}
			before := len(rp.requests())
			var last jars.FetchProgress
			if _, err := jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: dir, Repo: rp.url(), Progress: func(p jars.FetchProgress) { last = p }}); err != nil {
				t.Fatal(err)
			}
			reqs := rp.requests()[before:]
			if len(reqs) != 1 || reqs[0].rng != "bytes="+strconv.FormatInt(have, 10)+"-" {
				t.Fatalf("requests %+v, want one asking for bytes=%d-", reqs, have)
			}
			wantFetched := j.Size - have
			if ignore {
				wantFetched = j.Size
			}
			if last.Fetched != wantFetched {
				t.Fatalf("fetched %d bytes, want %d", last.Fetched, wantFetched)
			}
			if sum(t, filepath.Join(dir, j.Name())) != j.SHA256 {
				t.Fatal("the resumed jar does not check")
			}
			if _, err := os.Stat(filepath.Join(dir, j.Name()+".part")); !os.IsNotExist(err) {
				t.Fatalf("the part is still there: %v", err)
			}
		})
	}
}

// A connection cut in the middle of a jar, and one that stalls: the next
// try resumes from what arrived, and the jar checks.
func TestCutAndStalledDownloadsResume(t *testing.T) {
	list := pick(t, "scala-reflect-", "zstd-jni-")
	rp := newRepo(t, list)
	srcs := map[string][]byte{}
	for _, j := range list {
		srcs["/maven2/"+j.Path], _ = os.ReadFile(filepath.Join(libs(t), j.Name()))
	}
	release := make(chan struct{})
	defer close(release)
	rp.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n > 1 {
			return false
		}
		b := srcs[r.URL.Path]
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		if strings.Contains(r.URL.Path, "zstd") {
			select { // stall until the client gives up on it
			case <-r.Context().Done():
			case <-release:
			}
			return true
		}
		panic(http.ErrAbortHandler) // cut the connection
	}
	dir := t.TempDir()
	if _, err := jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: dir, Repo: rp.url(), Stall: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]string{}
	for _, r := range rp.requests() {
		byPath[filepath.Base(r.path)] = append(byPath[filepath.Base(r.path)], r.rng)
	}
	for _, j := range list {
		rs := byPath[j.Name()]
		if len(rs) != 2 || rs[0] != "" || !strings.HasPrefix(rs[1], "bytes=") {
			t.Fatalf("%s: ranges asked %q, want the whole file then the rest", j.Name(), rs)
		}
		if sum(t, filepath.Join(dir, j.Name())) != j.SHA256 {
			t.Fatalf("%s does not check", j.Name())
		}
	}
}

// A repository that serves another file under a pinned name: refused,
// nothing left in place, and the error says so.
func TestWrongFileRefused(t *testing.T) {
	list := pick(t, "re2j-")
	rp := newRepo(t, list)
	rp.hook = func(w http.ResponseWriter, r *http.Request, _ int) bool {
		w.Write(bytes.Repeat([]byte{'x'}, int(list[0].Size)))
		return true
	}
	dir := t.TempDir()
	_, err := jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: dir, Repo: rp.url()})
	if err == nil || !errors.Is(err, jars.ErrMissing) || !strings.Contains(err.Error(), "does not match the pinned SHA-256") {
		t.Fatalf("err = %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 || left[0].Name() != ".lock" {
		t.Fatalf("left in the folder: %v", left)
	}
	if n := len(rp.requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (the second from the start)", n)
	}
}

// A repository without the jar (a mirror that lacks it): one request, and
// the error names the URL and the variable to set. The password of a
// mirror's URL is never shown.
func TestMissingJarNamed(t *testing.T) {
	list := pick(t, "re2j-")
	rp := newRepo(t, list)
	repoURL := strings.Replace(rp.url(), "http://", "http://user:s3cret@", 1) + "/nothing"
	_, err := jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: t.TempDir(), Repo: repoURL})
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), list[0].Path) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
	var pe *pipebench.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Hint, jars.RepoEnv) || !strings.Contains(pe.Hint, jars.LibsEnv) {
		t.Fatalf("hint: %+v", pe)
	}
	if n := len(rp.requests()); n != 1 {
		t.Fatalf("%d requests for a missing jar, want 1", n)
	}
	if _, err := jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: t.TempDir(), Repo: "ftp://mirror"}); err == nil || !strings.Contains(err.Error(), jars.RepoEnv) {
		t.Fatalf("ftp repository: err = %v", err)
	}
}

// Two fetches into one folder at once take turns: every jar is requested
// once in all.
func TestFetchesTakeTurns(t *testing.T) {
	list := pick(t, "slf4j-api-", "jopt-simple-", "re2j-", "scala-reflect-")
	rp := newRepo(t, list)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = jars.Fetch(context.Background(), jars.FetchParams{Jars: list, Dir: dir, Repo: rp.url()})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := len(rp.requests()); n != len(list) {
		t.Fatalf("%d requests for %d jars", n, len(list))
	}
}
