package natsdriver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nkeys"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/nats/wire"
)

// applyAuth reads the credentials file, NKey seed and TLS files of cfg
// into opts; a file that cannot be read or parsed is a usage error naming
// it. The seed stays in memory only.
func applyAuth(cfg Config, opts *wire.Options) error {
	switch {
	case cfg.Creds != "":
		data, err := os.ReadFile(cfg.Creds)
		if err != nil {
			return pipebench.UsageError("nats driver: creds: cannot read "+cfg.Creds, "give the path of a credentials file (nsc generate creds)", err)
		}
		jwt, err := nkeys.ParseDecoratedJWT(data)
		if err != nil || jwt == "" {
			return pipebench.UsageError("nats driver: creds: "+cfg.Creds+" holds no user JWT", "give a credentials file as nsc writes it: a user JWT and its seed", err)
		}
		kp, err := nkeys.ParseDecoratedUserNKey(data)
		if err != nil {
			return pipebench.UsageError("nats driver: creds: "+cfg.Creds+" holds no user seed", "give a credentials file as nsc writes it: a user JWT and its seed", err)
		}
		opts.JWT, opts.Sign = jwt, kp.Sign
	case cfg.NKey != "":
		data, err := os.ReadFile(cfg.NKey)
		if err != nil {
			return pipebench.UsageError("nats driver: nkey: cannot read "+cfg.NKey, "give the path of a file holding an NKey seed (SU...)", err)
		}
		kp, err := nkeys.ParseDecoratedNKey(data)
		if err != nil {
			return pipebench.UsageError("nats driver: nkey: "+cfg.NKey+" holds no NKey seed", "give a file holding a user seed (SU...), as nk -gen user writes it", err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return pipebench.UsageError("nats driver: nkey: "+cfg.NKey+" holds no seed with a public key", "give a seed (SU...), not a public key", err)
		}
		opts.NKey, opts.Sign = pub, kp.Sign
	}
	t := cfg.TLS
	if t == (TLSConfig{}) {
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return pipebench.UsageError("nats driver: tls.ca_file: cannot read "+t.CAFile, "give a PEM file of the CA that signed the server's certificate", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return pipebench.UsageError("nats driver: tls.ca_file: "+t.CAFile+" holds no PEM certificate", "give a PEM file of the CA that signed the server's certificate", errors.New("no certificate"))
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return pipebench.UsageError(fmt.Sprintf("nats driver: tls: cannot load the client certificate %s and key %s", t.CertFile, t.KeyFile), "give PEM files of a certificate and its key", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	opts.TLS = tc
	return nil
}
