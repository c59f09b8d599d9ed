package natsdriver

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/tlstest"
)

// startTLSServer runs a nats-server with JetStream that requires TLS and a
// client certificate signed by the test's CA.
func startTLSServer(t *testing.T, c tlstest.Certs) *server.Server {
	t.Helper()
	return natstest.Start(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), TLS: true, TLSVerify: true, TLSTimeout: 2,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{c.Server(t)}, ClientCAs: c.Pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}})
}

// Against a real TLS nats-server with certificates the test made: a
// driver with the CA and a client certificate publishes to JetStream over
// TLS; one without the client certificate, or without the CA, is refused
// by the handshake and every send says so (unreached).
func TestTLS(t *testing.T) {
	c := tlstest.New(t)
	s := startTLSServer(t, c)
	addr := s.Addr().String()
	cfg := *DefaultConfig()
	cfg.Connections, cfg.Mode = 2, ModeJS
	cfg.TLS = tlsconf.Client{CAFile: c.CA, CertFile: c.ClientCert, KeyFile: c.ClientKey}
	d := newDriver(t, cfg, "tls://"+addr)
	// A round trip over TLS: no stream yet, and the server says so.
	if o := send(d, newGen(t), 1, 1); o.Class != pipebench.ClassError || o.Detail != "no responders" {
		t.Fatalf("a publish over TLS before any stream: %+v, want no responders (the server answered)", o)
	}
	for _, bad := range []tlsconf.Client{{CAFile: c.CA}, {CertFile: c.ClientCert, KeyFile: c.ClientKey}} {
		cfg.TLS = bad
		d := newDriver(t, cfg, "tls://"+addr)
		o := send(d, newGen(t), 1, 1)
		if o.Class == pipebench.ClassOK || !o.Unreached {
			t.Errorf("TLS %+v: %+v, want a failed handshake, unreached", bad, o)
		}
	}
	// Files that are not what they should be are usage errors.
	cfg.TLS = tlsconf.Client{CAFile: c.ClientKey}
	if _, err := New(cfg, "tls://"+addr); err == nil || !strings.Contains(err.Error(), "tls.ca_file") {
		t.Errorf("a key as the CA: %v", err)
	}
}

// seedFile writes a user NKey seed to a file and returns its path and
// public key.
func seedFile(t *testing.T, kp nkeys.KeyPair) (string, string) {
	t.Helper()
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	p := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(p, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, pub
}

// publishes checks that a driver of cfg opens its connections to s (its
// /connz counts them) and publishes.
func publishes(t *testing.T, cfg Config, s *server.Server) {
	t.Helper()
	d := newDriver(t, cfg, s.ClientURL())
	if o := send(d, newGen(t), 1, 1); o.Class != pipebench.ClassOK {
		t.Fatalf("publish: %+v", o)
	}
	if n := connz(t, s); n != cfg.Connections {
		t.Errorf("%d connections, want %d", n, cfg.Connections)
	}
}

// refused checks that s refuses a driver of cfg at its start, a usage
// error naming the credentials.
func refused(t *testing.T, cfg Config, s *server.Server, what string) {
	t.Helper()
	d, err := New(cfg, s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start(context.Background())
	if err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage || !strings.Contains(err.Error(), "refused the credentials") {
		t.Errorf("%s: %v", what, err)
	}
}

// An NKey user (nats bench --nkey): the driver signs the server's nonce
// with the seed from its file; another user's seed is refused as a usage
// error naming the credentials.
func TestNKey(t *testing.T) {
	user, _ := nkeys.CreateUser()
	path, pub := seedFile(t, user)
	s := natstest.Start(t, &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}, HTTPHost: "127.0.0.1", HTTPPort: -1})
	cfg := *DefaultConfig()
	cfg.Connections, cfg.Mode, cfg.NKey = 3, ModeCore, path
	publishes(t, cfg, s)
	other, _ := nkeys.CreateUser()
	cfg.NKey, _ = seedFile(t, other)
	refused(t, cfg, s, "a seed the server does not know")
}

// A credentials file (nats bench --creds): a user JWT issued by an account
// of the server's trusted operator, and the user's seed. The server
// checks the JWT's chain and the nonce's signature.
func TestCreds(t *testing.T) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	opJWT, err := opClaims.Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := jwt.DecodeOperatorClaims(opJWT)
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	accJWT, err := jwt.NewAccountClaims(accPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(userPub)
	uc.IssuerAccount = accPub
	userJWT, err := uc.Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "user.creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	s := natstest.Start(t, &server.Options{TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: resolver, HTTPHost: "127.0.0.1", HTTPPort: -1})
	cfg := *DefaultConfig()
	cfg.Connections, cfg.Mode, cfg.Creds = 2, ModeCore, path
	publishes(t, cfg, s)
	// The file's seed with another user's JWT: the signature does not
	// match the JWT's key.
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	bad := strings.Replace(string(creds), string(seed), string(otherSeed), 1)
	os.WriteFile(path, []byte(bad), 0o600)
	refused(t, cfg, s, "a seed that is not the JWT's")
	os.WriteFile(path, []byte("not a credentials file"), 0o600)
	if _, err := New(cfg, s.ClientURL()); err == nil || !strings.Contains(err.Error(), "creds:") {
		t.Errorf("a file with no JWT: %v", err)
	}
}
