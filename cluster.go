package pipebench

// SharedSink is the optional ability of a sink's configuration to run as
// one sink that many generators share, in a pod of its own (`pipebench
// k8s run` puts such a sink behind a Service, and the shards send to it).
// A sink whose configuration does not implement it runs inside each
// generator instead (the nats sink, which consumes from a server).
//
// Shared returns a copy of the configuration that listens on host at fixed
// ports (every port above 1024, so that a non-root user may bind it, and
// none of them 7070, the arrivals feed's, or 9464, the shard's metrics'),
// and those ports, named. The receiver is not changed.
type SharedSink interface {
	Shared(host string) (cfg any, ports []NamedPort)
}

// NamedPort is one port a component listens on, with its IANA service
// name (http, otlp-grpc, ...): a Service's and a container's port name.
type NamedPort struct {
	Name string
	Port int
}
