package jetstream

import "github.com/pipebench/pipebench/sut/plumbing/natscluster"

// ChildEnv names the environment variable that makes a pipebench process one
// embedded nats-server node: its value is the path of the node's JSON spec.
const ChildEnv = natscluster.ChildEnv

// ServerVersion is the nats-server release embedded.
const ServerVersion = natscluster.ServerVersion

// MaybeRunChild runs one embedded nats-server node and exits, if this process
// was started as a node child (ChildEnv is set); otherwise it returns at
// once. cmd/pipebench's main calls it first thing, and test binaries from
// TestMain. In the child it is the main, so it exits the process.
func MaybeRunChild() { natscluster.MaybeRunChild() }
