// Package tlstest makes the certificates a test of a TLS connection needs:
// a CA and, signed by it, a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files where the test's configuration can
// name them. The certificates are valid for an hour around now.
package tlstest

import (
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
	"testing"
	"time"
)

// Certs are the PEM files New wrote and the pool of the CA that signed
// the other two certificates.
type Certs struct {
	// CA is the CA's certificate: what a client or server trusts.
	CA string
	// ServerCert and ServerKey are a server certificate for 127.0.0.1
	// and its key.
	ServerCert, ServerKey string
	// ClientCert and ClientKey are a client certificate and its key.
	ClientCert, ClientKey string
	// Pool holds the CA, for a server that verifies client certificates.
	Pool *x509.CertPool
}

// New writes a fresh CA, server and client certificate in a temporary
// directory of tb's; it fails the test when it cannot.
func New(tb testing.TB) Certs {
	tb.Helper()
	dir := tb.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pipebench test CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			tb.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(k)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	c := Certs{CA: write("ca.pem", "CERTIFICATE", caDER), Pool: x509.NewCertPool()}
	c.Pool.AddCert(caCert)
	c.ServerCert, c.ServerKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	c.ClientCert, c.ClientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return c
}

// Server returns the server certificate and key loaded for a
// tls.Config's Certificates; it fails the test when it cannot.
func (c Certs) Server(tb testing.TB) tls.Certificate {
	tb.Helper()
	cert, err := tls.LoadX509KeyPair(c.ServerCert, c.ServerKey)
	if err != nil {
		tb.Fatal(err)
	}
	return cert
}
