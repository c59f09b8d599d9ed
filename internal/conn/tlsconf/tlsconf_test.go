package tlsconf

import (
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Validate names every problem with its key, one line each.
func TestValidateNamesTheKeys(t *testing.T) {
	if err := (Client{}).Validate("tls"); err != nil {
		t.Errorf("the zero settings: %v", err)
	}
	err := Client{CAFile: "/nonexistent/ca.pem", CertFile: "/nonexistent/cert.pem"}.Validate("tls")
	for _, want := range []string{"tls: cert_file and key_file go together", "tls.ca_file: the file /nonexistent/ca.pem does not exist", "tls.cert_file: the file /nonexistent/cert.pem does not exist"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 3 {
		t.Errorf("%d lines, want 3:\n%v", n, err)
	}
}

// Load trusts the CA file's certificate: a handshake with a real TLS
// server on loopback succeeds with it and fails without it.
func TestLoadTrustsTheCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	handshake := func(c Client) error {
		cfg, err := c.Load("127.0.0.1")
		if err != nil {
			return err
		}
		conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), cfg)
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := handshake(Client{CAFile: ca}); err != nil {
		t.Errorf("with the server's certificate as the CA: %v", err)
	}
	if err := handshake(Client{}); err == nil {
		t.Error("a certificate signed by no trusted CA was accepted")
	}
	if err := handshake(Client{InsecureSkipVerify: true}); err != nil {
		t.Errorf("insecure_skip_verify: %v", err)
	}
	cfg, _ := Client{ServerName: "example.test"}.Load("127.0.0.1")
	if cfg.ServerName != "example.test" || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("server_name and the floor: %q, %x", cfg.ServerName, cfg.MinVersion)
	}
}

// A file that holds no certificate, and a key pair that does not load, are
// errors naming the key.
func TestLoadNamesBadFiles(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o600)
	if _, err := (Client{CAFile: junk}).Load(""); err == nil || !strings.Contains(err.Error(), "tls.ca_file") {
		t.Errorf("a CA file without a certificate: %v", err)
	}
	if _, err := (Client{CertFile: junk, KeyFile: junk}).Load(""); err == nil || !strings.Contains(err.Error(), "tls.cert_file/key_file") {
		t.Errorf("a key pair that does not load: %v", err)
	}
}
