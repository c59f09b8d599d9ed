package grpcdriver

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
	"github.com/pipebench/pipebench/internal/testkit/tlstest"
)

func TestTLS(t *testing.T) {
	certs := tlstest.New(t)
	s := startServerOpts(t, "tcp", grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{certs.Server(t)}})))
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
	if o := send(TLSConfig{Enabled: true, Client: tlsconf.Client{CAFile: certs.CA}}); o.Class != pipebench.ClassOK {
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
