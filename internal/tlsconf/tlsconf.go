// Package tlsconf is the client TLS settings every network driver takes
// (the `tls` section of a target): a CA to trust, a client certificate and
// key, the server name to verify, and the escape hatch of not verifying.
// Drivers embed Client in their configuration, call Validate from theirs
// and Load when they build their connections.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
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
// read. It does not parse the files: Load does.
func (c Client) Validate(key string) error {
	var errs []error
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s: cert_file and key_file go together", key))
	}
	for _, f := range []struct{ name, path string }{{"ca_file", c.CAFile}, {"cert_file", c.CertFile}, {"key_file", c.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: cannot read %s", key, f.name, f.path))
		}
	}
	return errors.Join(errs...)
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
		pem, err := os.ReadFile(c.CAFile)
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
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}
