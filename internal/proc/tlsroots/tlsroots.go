// Package tlsroots gives TLS verification roots to a pipebench process on a
// machine that has none, as pipebench's container image (one static binary,
// no CA certificates): Mozilla's, as the Go project bundles them. Where the
// machine has roots of its own, they are used and the bundle is never
// parsed, so a process does not hold 1.2 MB of certificates it will not
// use.
package tlsroots

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Where Go's crypto/x509 looks for a Linux machine's roots, in this order;
// SSL_CERT_FILE replaces the files and SSL_CERT_DIR (colon-separated) the
// folders.
var (
	certFiles = []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem",
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
		"/etc/ssl/cert.pem",
	}
	certDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}
)

// FallbackWhereNone makes the bundle crypto/x509's fallback roots when
// this is Linux and none of the places it reads roots from holds any
// (other systems verify with their platform's own verifier). Call it once,
// first thing in main, before anything verifies a certificate.
func FallbackWhereNone() {
	if runtime.GOOS != "linux" || machineHasRoots(os.Getenv) {
		return
	}
	x509.SetFallbackRoots(Bundle())
}

// machineHasRoots reports whether a roots file crypto/x509 reads is there
// and not empty, or one of its roots folders has an entry.
func machineHasRoots(getenv func(string) string) bool {
	files, dirs := certFiles, certDirs
	if f := getenv("SSL_CERT_FILE"); f != "" {
		files = []string{f}
	}
	if d := getenv("SSL_CERT_DIR"); d != "" {
		dirs = filepath.SplitList(d)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return true
		}
	}
	for _, d := range dirs {
		if f, err := os.Open(d); err == nil {
			names, _ := f.Readdirnames(1)
			f.Close()
			if len(names) > 0 {
				return true
			}
		}
	}
	return false
}

// Bundle parses the bundled roots into a pool, with the distrust-after
// dates some of them carry.
func Bundle() *x509.CertPool {
	p := x509.NewCertPool()
	for r := range bundle.Roots() {
		c, err := x509.ParseCertificate(r.Certificate)
		if err != nil {
			panic(fmt.Sprintf("tlsroots: a bundled root does not parse: %v", err)) // the bundle is fixed at build time
		}
		if r.Constraint == nil {
			p.AddCert(c)
		} else {
			p.AddCertWithConstraint(c, r.Constraint)
		}
	}
	return p
}
