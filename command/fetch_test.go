package command

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/sut/kafka/jars"
)

// `pipebench fetch kafka` against a real HTTP server on loopback serving a
// Maven repository made of the jars Maven resolved: every pinned jar in
// --dir, the folder printed, its progress on stderr; a repository that is
// not http(s) is a usage error.
func TestFetchKafkaCommand(t *testing.T) {
	src := os.Getenv(jars.LibsEnv)
	if src == "" {
		t.Skip(jars.LibsEnv + " is not set: no jars to serve as a Maven repository")
	}
	root := t.TempDir()
	for _, j := range jars.Jars() {
		p := filepath.Join(root, filepath.FromSlash(j.Path))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(filepath.Join(src, j.Name()), p); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "libs")
	stdout, stderr, code := cli(t, "fetch", "kafka", "--dir", dir, "--repo", srv.URL)
	if code != 0 || strings.TrimSpace(stdout) != dir || !strings.Contains(stderr, "94 of 94 jars") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !jars.Complete(dir, jars.Jars()) {
		t.Fatal("the folder does not hold every pinned jar")
	}
	if _, stderr, code := cli(t, "fetch", "kafka", "--dir", dir, "--repo", "ftp://mirror"); code != pipebench.ExitUsage || !strings.Contains(stderr, jars.RepoEnv) {
		t.Fatalf("ftp: exit %d\n%s", code, stderr)
	}
}
