package otlpsink

import (
	"net"
	"strconv"

	"github.com/pipebench/pipebench"
)

// The ports of the otlp sink shared by a run's generators in a cluster:
// OTLP's own.
const (
	SharedGRPCPort = 4317
	SharedHTTPPort = 4318
)

var _ pipebench.SharedSink = (*Config)(nil)

// Shared implements pipebench.SharedSink: the sink listens on host:4317
// (gRPC) and host:4318 (HTTP), each only where the configuration asks for
// that protocol.
func (c *Config) Shared(host string) (any, []pipebench.NamedPort) {
	n := *c
	var ports []pipebench.NamedPort
	if c.GRPCListen != "" {
		n.GRPCListen = net.JoinHostPort(host, strconv.Itoa(SharedGRPCPort))
		ports = append(ports, pipebench.NamedPort{Name: "otlp-grpc", Port: SharedGRPCPort})
	}
	if c.HTTPListen != "" {
		n.HTTPListen = net.JoinHostPort(host, strconv.Itoa(SharedHTTPPort))
		ports = append(ports, pipebench.NamedPort{Name: "otlp-http", Port: SharedHTTPPort})
	}
	return &n, ports
}
