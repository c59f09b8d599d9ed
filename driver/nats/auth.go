package natsdriver

import (
	"github.com/nats-io/nkeys"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/nats/wire"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
)

// applyAuth reads the credentials file, NKey seed and TLS files of cfg
// into opts; a file that cannot be read or parsed is a usage error naming
// it. The seed stays in memory only.
func applyAuth(cfg Config, opts *wire.Options) error {
	switch {
	case cfg.Creds != "":
		data, err := tlsconf.ReadFile(cfg.Creds)
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
		data, err := tlsconf.ReadFile(cfg.NKey)
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
	if cfg.TLS == (tlsconf.Client{}) {
		return nil
	}
	tc, err := cfg.TLS.Load("")
	if err != nil {
		return pipebench.UsageError("nats driver: "+err.Error(), "give PEM files: the CA that signed the server's certificate, a client certificate and its key", err)
	}
	opts.TLS = tc
	return nil
}
