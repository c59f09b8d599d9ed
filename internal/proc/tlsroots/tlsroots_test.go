package tlsroots

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Which places count as the machine's roots: a file that is not empty,
// a folder with an entry; the environment's names replace the defaults.
func TestMachineHasRoots(t *testing.T) {
	dir := t.TempDir()
	empty, full := filepath.Join(dir, "empty.pem"), filepath.Join(dir, "full.pem")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(full, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644)
	noDir, someDir := filepath.Join(dir, "none"), filepath.Join(dir, "certs")
	os.Mkdir(noDir, 0o755)
	os.Mkdir(someDir, 0o755)
	os.WriteFile(filepath.Join(someDir, "a.pem"), []byte("x"), 0o644)
	for _, tc := range []struct {
		file, dir string
		want      bool
	}{
		{empty, noDir, false},
		{filepath.Join(dir, "missing.pem"), filepath.Join(dir, "missing"), false},
		{full, noDir, true},
		{empty, someDir, true},
		{empty, noDir + string(filepath.ListSeparator) + someDir, true},
		{dir + "/none", noDir, false}, // a folder where the file should be
	} {
		env := map[string]string{"SSL_CERT_FILE": tc.file, "SSL_CERT_DIR": tc.dir}
		if got := machineHasRoots(func(k string) string { return env[k] }); got != tc.want {
			t.Errorf("SSL_CERT_FILE=%s SSL_CERT_DIR=%s: has roots %v, want %v", tc.file, tc.dir, got, tc.want)
		}
	}
}

// The bundle parses whole, with its distrust-after constraints.
func TestBundle(t *testing.T) {
	if n := len(Bundle().Subjects()); n < 100 { //nolint:staticcheck // Subjects only to count them
		t.Fatalf("the bundle holds %d roots, want Mozilla's (over 100)", n)
	}
}

// In a process of its own (crypto/x509 takes fallback roots once): on a
// machine without roots, crypto/x509 verifies with the bundle; on one with
// roots, with those, and the bundle is not installed.
func TestFallbackWhereNone(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	dir := t.TempDir()
	pemFile, empty, emptyDir := filepath.Join(dir, "srv.pem"), filepath.Join(dir, "empty.pem"), filepath.Join(dir, "certs")
	os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	os.WriteFile(empty, nil, 0o644)
	os.Mkdir(emptyDir, 0o755)
	for _, tc := range []struct{ mode, file string }{{"none", empty}, {"own", pemFile}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRoots$", "-test.v")
		cmd.Env = append(os.Environ(), "PIPEBENCH_TLSROOTS_HELPER="+tc.mode, "PIPEBENCH_TLSROOTS_URL="+srv.URL,
			"SSL_CERT_FILE="+tc.file, "SSL_CERT_DIR="+emptyDir)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestHelperRoots") {
			t.Errorf("machine with roots %q: %v\n%s", tc.mode, err, out)
		}
	}
}

// TestHelperRoots is TestFallbackWhereNone's process: it calls
// FallbackWhereNone and checks what crypto/x509 verifies with.
func TestHelperRoots(t *testing.T) {
	mode := os.Getenv("PIPEBENCH_TLSROOTS_HELPER")
	if mode == "" {
		t.Skip("helper process for TestFallbackWhereNone")
	}
	FallbackWhereNone()
	_, verr := firstBundled(t).Verify(x509.VerifyOptions{}) // with the system's roots
	resp, gerr := http.Get(os.Getenv("PIPEBENCH_TLSROOTS_URL"))
	if resp != nil {
		resp.Body.Close()
	}
	switch mode {
	case "none":
		if verr != nil {
			t.Errorf("no roots on the machine: a bundled root did not verify: %v", verr)
		}
		if gerr == nil {
			t.Errorf("no roots on the machine: the test server's own certificate verified")
		}
	case "own":
		if verr == nil {
			t.Errorf("roots on the machine: a bundled root verified, so the bundle was installed")
		}
		if gerr != nil {
			t.Errorf("roots on the machine (the test server's certificate): %v", gerr)
		}
	}
}

// firstBundled parses the bundle's first root.
func firstBundled(t *testing.T) *x509.Certificate {
	t.Helper()
	for r := range bundle.Roots() {
		c, err := x509.ParseCertificate(r.Certificate)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Fatal("an empty bundle")
	return nil
}
