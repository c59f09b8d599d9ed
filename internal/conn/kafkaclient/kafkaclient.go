// Package kafkaclient is what the Kafka plug-ins (driver/kafka, sink/kafka,
// observer/kafka) share of connecting to brokers with franz-go: the bootstrap
// list, SASL (PLAIN, SCRAM) and TLS settings as scenario keys, and the
// client options made of them.
package kafkaclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
)

// SASL is SASL authentication: PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512.
type SASL struct {
	// Mechanism is "" (none), PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `yaml:"mechanism" json:"mechanism,omitempty"`
	// User is the name to authenticate as.
	User string `yaml:"user" json:"user,omitempty"`
	// Password is the user's password: reference it as ${VAR}, it is
	// never written anywhere.
	Password pipebench.Secret `yaml:"password" json:"password,omitempty"`
}

// TLS is client TLS: enabled with the system's roots, or a CA file;
// a client certificate for mutual TLS (the settings every driver shares).
type TLS struct {
	// Enabled turns TLS on with the system's roots; any other setting
	// turns it on too.
	Enabled        bool `yaml:"enabled" json:"enabled,omitempty"`
	tlsconf.Client `yaml:",inline"`
}

// Validate reports every problem, each prefixed with its key.
func (s SASL) Validate() []error {
	var errs []error
	switch strings.ToUpper(s.Mechanism) {
	case "":
		if s.User != "" || s.Password != "" {
			errs = append(errs, fmt.Errorf("sasl.mechanism: a user and password need a mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)"))
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if s.User == "" {
			errs = append(errs, fmt.Errorf("sasl.user: must not be empty"))
		}
	default:
		errs = append(errs, fmt.Errorf("sasl.mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism))
	}
	return errs
}

// mechanism returns the SASL mechanism to authenticate with, or nil.
func (s SASL) mechanism() sasl.Mechanism {
	switch strings.ToUpper(s.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: s.User, Pass: s.Password.Reveal()}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.User, Pass: s.Password.Reveal()}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.User, Pass: s.Password.Reveal()}.AsSha512Mechanism()
	}
	return nil
}

// Validate reports every problem, each prefixed with its key.
func (t TLS) Validate() []error {
	if err := t.Client.Validate("tls"); err != nil {
		return []error{err}
	}
	return nil
}

// on reports whether TLS is asked for.
func (t TLS) on() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.InsecureSkipVerify || t.ServerName != ""
}

// Config builds the client TLS configuration, or nil without TLS.
func (t TLS) Config() (*tls.Config, error) { return t.config() }

// config builds the client TLS configuration, or nil without TLS.
func (t TLS) config() (*tls.Config, error) {
	if !t.on() {
		return nil, nil
	}
	return t.Client.Load("")
}

// Opts are the franz-go options that connect to the brokers at bootstrap
// as clientID with the SASL and TLS settings.
func Opts(bootstrap, clientID string, s SASL, t TLS) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(SplitAddrs(bootstrap)...), kgo.ClientID(clientID)}
	tc, err := t.config()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if m := s.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// TopicKind is the kind of pipebench.Resource a Kafka topic is: the
// embedded kafka system under test holds topics, the kafka driver and
// sink use one.
const TopicKind = "topic"

// ValidTopic reports whether s is a legal topic name.
func ValidTopic(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// SplitAddrs splits a comma-separated list of host:port.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// ValidateBootstrap reports each entry of a comma-separated bootstrap list
// that is not host:port.
func ValidateBootstrap(s string) []error {
	var errs []error
	for _, a := range SplitAddrs(s) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("bootstrap: %q is not host:port", a))
		}
	}
	return errs
}

// ErrNoTopic marks a topic the brokers do not have.
var ErrNoTopic = errors.New("no such topic")

// CheckTopic asks the brokers cl talks to, once, whether topic exists: an
// error naming it (wrapping ErrNoTopic) when they do not have it, or one
// naming it when they do not let the client use it; nil when it exists,
// or when they do not answer within ctx (what uses the topic finds out
// then). franz-go's producers and consumers never ask the brokers to
// create a topic: without this, a missing topic fails each send after
// its retries, or leaves a consumer group waiting for partitions for
// ever.
func CheckTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil
	}
	for _, rt := range resp.Topics {
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("topic %q: %w (%s)", topic, ErrNoTopic, err)
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			return fmt.Errorf("topic %q: the brokers do not let this client use it (%s)", topic, err)
		}
	}
	return nil
}
