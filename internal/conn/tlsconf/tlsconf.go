// Package tlsconf is the client TLS settings every network driver takes
// (the `tls` section of a target): a CA to trust, a client certificate and
// key, the server name to verify, and the escape hatch of not verifying.
// Drivers embed Client in their configuration, call Validate from theirs
// and Load when they build their connections.
package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/pipebench/pipebench"
)

// Client holds the client TLS settings of a driver. The zero value trusts
// the system's roots and verifies the target's host name.
type Client struct {
	// CAFile is a PEM file of the certificates to trust (instead of the
	// system's roots).
	CAFile string `yaml:"ca_file" json:"ca_file,omitempty"`
	// CertFile and KeyFile are the client's certificate and key (PEM),
	// for servers that ask for one; both or neither.
	CertFile string `yaml:"cert_file" json:"cert_file,omitempty"`
	// KeyFile is the key of CertFile (PEM).
	KeyFile string `yaml:"key_file" json:"key_file,omitempty"`
	// ServerName is the name the server's certificate must carry; empty
	// means the target's host.
	ServerName string `yaml:"server_name" json:"server_name,omitempty"`
	// InsecureSkipVerify accepts any server certificate.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// Validate reports every problem of the settings, one line each, prefixed
// with key (the section's key, "tls") as a configuration's Validate must:
// a certificate without its key (or the reverse), a file that cannot be
// read (it must be a regular file of at most MaxFileSize: see ReadFile).
// It does not parse the files: Load does.
func (c Client) Validate(key string) error {
	var errs []error
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s: cert_file and key_file go together", key))
	}
	for _, f := range []struct{ name, path string }{{"ca_file", c.CAFile}, {"cert_file", c.CertFile}, {"key_file", c.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := ReadFile(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", key, f.name, err))
		}
	}
	return errors.Join(errs...)
}

// MaxFileSize bounds a CA, certificate or key file (PEM): a bundle of every
// public CA is about 250 KiB.
const MaxFileSize = 4 << 20

// ReadFile reads a file a scenario key names (a tls section's PEM files,
// NATS credentials) as pipebench reads every file a user names: a regular
// file (a driver reads it while the run starts, where a FIFO would hold
// it), at most MaxFileSize. Its errors say "the file PATH ...": the caller
// puts the key before them.
func ReadFile(path string) ([]byte, error) {
	return pipebench.ReadInput(context.Background(), pipebench.Input{Path: path, What: "the file", Limit: MaxFileSize, Regular: true})
}

// Load builds the crypto/tls client configuration: TLS 1.2 at least, the
// CA file's certificates as the roots when one is given, the client
// certificate when one is given, and serverName as the name to verify
// when ServerName is empty (empty too: the library's default, the dialed
// host). Its errors name the key (tls.ca_file, tls.cert_file/key_file).
func (c Client) Load(serverName string) (*tls.Config, error) {
	t := &tls.Config{ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.ServerName == "" {
		t.ServerName = serverName
	}
	if c.CAFile != "" {
		pem, err := ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", c.CAFile)
		}
		t.RootCAs = pool
	}
	if c.CertFile != "" {
		certPEM, err := ReadFile(c.CertFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file: %w", err)
		}
		keyPEM, err := ReadFile(c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.key_file: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}
