// Package jars fetches the Apache Kafka jars the embedded broker
// (sut/kafka) runs on from Maven Central: a pinned list (jars.txt, written
// from pom.xml by jars.sh) with each jar's size and SHA-256, checked at
// every start, resumed after a cut, fetched again when corrupted.
package jars

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench"
)

//go:generate ./jars.sh

// Version is the Apache Kafka release pinned (pom.xml's kafka.version).
const Version = "4.1.1"

// LibsEnv names the environment variable that points at a folder of the
// jars, which then is used as it is (nothing fetched).
const LibsEnv = "PIPEBENCH_KAFKA_LIBS"

// ErrMissing wraps every error of a fetch that did not put the jars in
// place.
var ErrMissing = errors.New("the Apache Kafka jars are missing")

// RepoEnv names the environment variable with the Maven repository the
// jars are fetched from (a mirror such as an Artifactory or Nexus proxy of
// Maven Central, as https://HOST/repository/maven-central); MavenCentral
// when unset.
const RepoEnv = "PIPEBENCH_MAVEN_REPO"

// MavenCentral is the repository the jars are fetched from by default.
const MavenCentral = "https://repo.maven.apache.org/maven2"

// Jar is one jar the embedded broker runs on: its path in a Maven
// repository (group/artifact/version/artifact-version.jar), its size and
// its SHA-256 as Maven resolved it from pom.xml.
type Jar struct {
	Path   string
	Size   int64
	SHA256 string
}

// Name is the jar's file name.
func (j Jar) Name() string { return path.Base(j.Path) }

//go:embed jars.txt
var jarsText string

// Jars is the pinned list of jars, compiled in (jars.txt).
var Jars = sync.OnceValue(func() []Jar {
	jars, err := parseJars(jarsText)
	if err != nil {
		panic("sut/kafka/jars.txt: " + err.Error()) // checked by a test
	}
	return jars
})

func parseJars(s string) ([]Jar, error) {
	var out []Jar
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want PATH SIZE SHA256", i+1)
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("line %d: size %q", i+1, f[1])
		}
		if b, err := hex.DecodeString(f[2]); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("line %d: sha256 %q", i+1, f[2])
		}
		out = append(out, Jar{Path: f[0], Size: n, SHA256: f[2]})
	}
	return out, nil
}

// CacheDir is the folder the jars are fetched into:
// os.UserCacheDir()/pipebench/kafka-VERSION ($XDG_CACHE_HOME or ~/.cache
// on Linux).
func CacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", pipebench.UsageError("no cache folder to fetch the Apache Kafka jars into", "set XDG_CACHE_HOME (or HOME), or "+LibsEnv+" to a folder of the jars", err)
	}
	return filepath.Join(d, "pipebench", "kafka-"+Version), nil
}

// FetchProgress is how far a Fetch has come.
type FetchProgress struct {
	// Bytes of the jars in place (verified) or fetched so far, of Total.
	Bytes, Total int64
	// Files verified in place, of FilesTotal.
	Files, FilesTotal int
	// Fetched is the bytes received from the repository by this Fetch.
	Fetched int64
	// Elapsed since the Fetch began.
	Elapsed time.Duration
	// Done is set on the last call, once every jar is in place.
	Done bool
}

// FetchParams says what to fetch, from where, and where to.
type FetchParams struct {
	// Dir receives the jars (flat, by file name); CacheDir() when empty.
	Dir string
	// Repo is the Maven repository's URL; $PIPEBENCH_MAVEN_REPO, then
	// MavenCentral, when empty.
	Repo string
	// Jars to fetch; Jars() when nil.
	Jars []Jar
	// Client makes the requests; a client with the environment's proxy
	// settings when nil.
	Client *http.Client
	// Progress, if set, is called at most once every Every (1 s when
	// zero) while jars are fetched, and once at the end.
	Progress func(FetchProgress)
	Every    time.Duration
	// Parallel is the number of jars fetched at once (4 when zero).
	Parallel int
	// Stall is how long a download may receive nothing before it is cut
	// and resumed (30 s when zero).
	Stall time.Duration
}

// Fetch puts every jar in p.Dir and returns the folder: a jar already
// there is kept when its size and SHA-256 match the pinned list, and
// fetched again when they do not (a corrupted or partial file); a jar
// is downloaded into NAME.part first, resumed from where it stopped (an
// HTTP Range request) after a cut connection or an earlier Fetch that
// was stopped, checked against its SHA-256 and only then renamed into
// place. Jars in the folder that are not on the list are removed (the
// broker's class path is the whole folder). Two processes fetching into
// one folder take turns (a lock file). Errors name the jar, the URL
// (without its password) and what to do.
func Fetch(ctx context.Context, p FetchParams) (string, error) {
	if p.Dir == "" {
		d, err := CacheDir()
		if err != nil {
			return "", err
		}
		p.Dir = d
	}
	if p.Repo == "" {
		p.Repo = os.Getenv(RepoEnv)
	}
	if p.Repo == "" {
		p.Repo = MavenCentral
	}
	p.Repo = strings.TrimRight(p.Repo, "/")
	if !strings.HasPrefix(p.Repo, "http://") && !strings.HasPrefix(p.Repo, "https://") {
		return "", pipebench.UsageError(fmt.Sprintf("%s: %q is not an http(s) URL of a Maven repository", RepoEnv, pipebench.RedactURL(p.Repo)),
			"set it to a repository such as "+MavenCentral, nil)
	}
	if p.Jars == nil {
		p.Jars = Jars()
	}
	if p.Client == nil {
		p.Client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: 30 * time.Second,
			TLSHandshakeTimeout: 15 * time.Second, MaxIdleConnsPerHost: 8}}
	}
	if p.Every <= 0 {
		p.Every = time.Second
	}
	if p.Parallel <= 0 {
		p.Parallel = 4
	}
	if p.Stall <= 0 {
		p.Stall = 30 * time.Second
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return "", fmt.Errorf("create the folder of the Apache Kafka jars: %w", err)
	}
	unlock, err := lockDir(ctx, filepath.Join(p.Dir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := removeStrays(p.Dir, p.Jars); err != nil {
		return "", err
	}

	f := &fetcher{p: p, start: time.Now()}
	for _, j := range p.Jars {
		f.total += j.Size
	}
	stop := make(chan struct{})
	var ticker sync.WaitGroup
	if p.Progress != nil {
		ticker.Add(1)
		go func() {
			defer ticker.Done()
			t := time.NewTicker(p.Every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					p.Progress(f.progress(false))
				}
			}
		}()
	}
	jobs := make(chan Jar)
	errs := make([]error, len(p.Jars))
	var wg sync.WaitGroup
	for range p.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := f.one(ctx, j); err != nil {
					errs[f.index(j)] = err
				}
			}
		}()
	}
	for _, j := range p.Jars {
		if ctx.Err() != nil {
			break
		}
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	close(stop)
	ticker.Wait()
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("fetching the Apache Kafka jars was stopped (%d of %d in place; the next start resumes): %w", f.files.Load(), len(p.Jars), err)
	}
	if err := errors.Join(errs...); err != nil {
		return "", &pipebench.Error{Code: pipebench.ExitFailure,
			Msg:  fmt.Sprintf("could not fetch the Apache Kafka %s jars from %s into %s", Version, pipebench.RedactURL(p.Repo), p.Dir),
			Hint: "check the network and the repository (set " + RepoEnv + " to a mirror of Maven Central), or set " + LibsEnv + " to a folder holding the jars",
			Err:  errors.Join(ErrMissing, err)}
	}
	if p.Progress != nil {
		p.Progress(f.progress(true))
	}
	return p.Dir, nil
}

type fetcher struct {
	p       FetchParams
	start   time.Time
	total   int64
	bytes   atomic.Int64 // in place or received
	fetched atomic.Int64
	files   atomic.Int64
}

func (f *fetcher) index(j Jar) int {
	for i := range f.p.Jars {
		if f.p.Jars[i].Path == j.Path {
			return i
		}
	}
	return 0
}

func (f *fetcher) progress(done bool) FetchProgress {
	return FetchProgress{Bytes: f.bytes.Load(), Total: f.total, Files: int(f.files.Load()), FilesTotal: len(f.p.Jars),
		Fetched: f.fetched.Load(), Elapsed: time.Since(f.start), Done: done}
}

// one puts jar j in place: kept if it checks, else fetched (three tries,
// each resuming what the last received; a finished file that does not
// check is fetched once more from its start).
func (f *fetcher) one(ctx context.Context, j Jar) error {
	dst := filepath.Join(f.p.Dir, j.Name())
	if ok, _ := check(dst, j); ok {
		f.bytes.Add(j.Size)
		f.files.Add(1)
		return nil
	}
	os.Remove(dst)
	part := dst + ".part"
	url := f.p.Repo + "/" + j.Path
	var last error
	mismatches := 0
	for try := 0; try < 4 && ctx.Err() == nil; try++ {
		have := int64(0)
		if st, err := os.Stat(part); err == nil {
			have = st.Size()
		}
		if have > j.Size {
			os.Remove(part)
			have = 0
		}
		f.bytes.Add(have)
		got, err := f.download(ctx, url, part, have, j.Size)
		f.bytes.Add(-have - got)
		if err != nil {
			last = err
			var perm permanent
			if errors.As(err, &perm) {
				break
			}
			continue
		}
		ok, err := check(part, j)
		if err != nil {
			last = err
			continue
		}
		if !ok {
			os.Remove(part)
			mismatches++
			last = fmt.Errorf("%s: what %s serves does not match the pinned SHA-256 %s", j.Name(), pipebench.RedactURL(url), j.SHA256)
			if mismatches == 2 {
				break
			}
			continue
		}
		if err := os.Rename(part, dst); err != nil {
			return err
		}
		f.bytes.Add(j.Size)
		f.files.Add(1)
		return nil
	}
	if last == nil {
		last = ctx.Err()
	}
	return last
}

// permanent is an answer that another try would not change (404).
type permanent struct{ error }

// download appends to part what url serves from byte have on (all of it
// when the server ignores the range), and returns the bytes written by
// this call.
func (f *fetcher) download(ctx context.Context, url, part string, have, size int64) (int64, error) {
	if have == size {
		return 0, nil // complete: the caller checks it
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, permanent{fmt.Errorf("%s: %w", pipebench.RedactURL(url), err)}
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := f.p.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %s", pipebench.RedactURL(url), pipebench.RedactText(err.Error()))
	}
	defer resp.Body.Close()
	flags := os.O_WRONLY | os.O_CREATE
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0 && strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(have, 10)+"-"):
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusOK:
		flags |= os.O_TRUNC // the whole file: start again
		have = 0
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		os.Remove(part)
		return 0, fmt.Errorf("GET %s: the repository refused to resume at byte %d; starting again", pipebench.RedactURL(url), have)
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return 0, permanent{fmt.Errorf("GET %s: %s", pipebench.RedactURL(url), resp.Status)}
	default:
		return 0, fmt.Errorf("GET %s: %s", pipebench.RedactURL(url), resp.Status)
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return 0, err
	}
	// A download that receives nothing for Stall is cut; the next try
	// resumes it.
	progress := make(chan struct{}, 1)
	watch := make(chan struct{})
	defer close(watch)
	go func() {
		t := time.NewTimer(f.p.Stall)
		defer t.Stop()
		for {
			select {
			case <-watch:
				return
			case <-progress:
				t.Reset(f.p.Stall)
			case <-t.C:
				cancel(fmt.Errorf("nothing received for %s", f.p.Stall))
				return
			}
		}
	}()
	var written int64
	buf := make([]byte, 64<<10)
	body := io.LimitReader(resp.Body, size-have+1)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				out.Close()
				return written, werr
			}
			written += int64(n)
			f.bytes.Add(int64(n))
			f.fetched.Add(int64(n))
			select {
			case progress <- struct{}{}:
			default:
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
				rerr = c
			}
			return written, fmt.Errorf("GET %s: cut after %d bytes: %v", pipebench.RedactURL(url), have+written, rerr)
		}
	}
	if err := out.Close(); err != nil {
		return written, err
	}
	if have+written != size {
		if have+written > size {
			os.Remove(part)
		}
		return written, fmt.Errorf("GET %s: %d bytes where %d were pinned", pipebench.RedactURL(url), have+written, size)
	}
	return written, nil
}

// check reports whether the file at p has j's size and SHA-256.
func check(p string, j Jar) (bool, error) {
	fh, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || st.Size() != j.Size {
		return false, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(fh, 256<<10)); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == j.SHA256, nil
}

// Complete reports whether dir holds every jar, each checked.
func Complete(dir string, jars []Jar) bool {
	for _, j := range jars {
		if ok, _ := check(filepath.Join(dir, j.Name()), j); !ok {
			return false
		}
	}
	return true
}

// removeStrays removes the jars in dir that are not on the list.
func removeStrays(dir string, jars []Jar) error {
	want := map[string]bool{}
	for _, j := range jars {
		want[j.Name()] = true
	}
	m, err := filepath.Glob(filepath.Join(dir, "*.jar"))
	if err != nil {
		return err
	}
	for _, p := range m {
		if !want[filepath.Base(p)] {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// FormatProgress is one line for a person: "23.4 of 58.9 MB (40%), 31 of
// 94 jars, 5.1 MB/s".
func FormatProgress(pr FetchProgress) string {
	pct := 100.0
	if pr.Total > 0 {
		pct = 100 * float64(pr.Bytes) / float64(pr.Total)
	}
	s := fmt.Sprintf("%.1f of %.1f MB (%.0f%%), %d of %d jars", float64(pr.Bytes)/1e6, float64(pr.Total)/1e6, pct, pr.Files, pr.FilesTotal)
	if sec := pr.Elapsed.Seconds(); sec > 0 && pr.Fetched > 0 {
		s += fmt.Sprintf(", %.1f MB/s", float64(pr.Fetched)/1e6/sec)
	}
	return s
}
