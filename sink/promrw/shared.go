package promrwsink

import (
	"net"
	"strconv"

	"github.com/pipebench/pipebench"
)

// SharedPort is the port of the remote-write sink shared by a run's
// generators in a cluster.
const SharedPort = 9201

var _ pipebench.SharedSink = (*Config)(nil)

// Shared implements pipebench.SharedSink: the sink listens on host:9201.
func (c *Config) Shared(host string) (any, []pipebench.NamedPort) {
	n := *c
	n.Listen = net.JoinHostPort(host, strconv.Itoa(SharedPort))
	return &n, []pipebench.NamedPort{{Name: "remote-write", Port: SharedPort}}
}
