package grpcdriver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/tlsconf"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// the certificate's file and the server's TLS certificate.
func selfSigned(t *testing.T) (string, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pipebench test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return file, cert
}

func TestTLS(t *testing.T) {
	caFile, cert := selfSigned(t)
	s := startServerOpts(t, "tcp", grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	send := func(tc TLSConfig) pipebench.Outcome {
		d, err := New(Config{Endpoint: s.target, Method: "pipebench.healthevents.v1.HealthEventService/Report",
			Timeout: pipebench.Duration(5 * time.Second), Connections: 1, TLS: tc}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer d.Shutdown(context.Background())
		if err := d.Start(context.Background()); err != nil {
			return pipebench.Outcome{Class: pipebench.ClassError, Detail: "start", Message: err.Error()}
		}
		b := newGen(t, eventTemplate()).Next(1, 1, time.Now())
		return d.Send(context.Background(), &b)
	}
	// Reflection over TLS, then the call.
	if o := send(TLSConfig{Enabled: true, Client: tlsconf.Client{CAFile: caFile}}); o.Class != pipebench.ClassOK {
		t.Errorf("with the CA: %+v", o)
	}
	// An unknown CA fails at start, when reflection cannot connect.
	if o := send(TLSConfig{Enabled: true}); o.Class == pipebench.ClassOK {
		t.Errorf("an unverified server was accepted: %+v", o)
	}
	// Plaintext to a TLS server does not get through: Start says so, as
	// a server that does not speak (plaintext) gRPC, unreached.
	d, err := New(Config{Endpoint: s.target, Method: "pipebench.healthevents.v1.HealthEventService/Report",
		ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: pipebench.Duration(2 * time.Second), Connections: 1}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	if err := d.Start(context.Background()); err == nil || !pipebench.IsUnreached(err) || !strings.Contains(err.Error(), "protocol mismatch") {
		t.Errorf("plaintext to TLS: Start %v, want a protocol mismatch, unreached", err)
	}
	// With proto files, a certificate the client does not trust fails
	// Start as a TLS handshake, unreached.
	d2, err := New(Config{Endpoint: s.target, Method: "pipebench.healthevents.v1.HealthEventService/Report",
		ProtoFiles: []string{"../../examples/healthevents.proto"}, Timeout: pipebench.Duration(2 * time.Second), Connections: 1, TLS: TLSConfig{Enabled: true}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Shutdown(context.Background())
	if err := d2.Start(context.Background()); err == nil || !pipebench.IsUnreached(err) || !strings.Contains(err.Error(), "tls handshake") {
		t.Errorf("unverified certificate: Start %v, want a TLS handshake failure, unreached", err)
	}
	if _, err := New(Config{Endpoint: s.target, Method: "a.B/C", Timeout: 1, Connections: 1, TLS: TLSConfig{Client: tlsconf.Client{CertFile: "x"}}}, ""); err == nil {
		t.Errorf("cert_file without key_file accepted")
	}
}
