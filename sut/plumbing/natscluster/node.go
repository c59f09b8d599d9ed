package natscluster

import (
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// ChildEnv names the environment variable that makes a pipebench process one
// nats-server node: its value is the path of the node's JSON spec.
const ChildEnv = "PIPEBENCH_JETSTREAM_NODE"

// ServerVersion is the nats-server release the nodes run.
const ServerVersion = server.VERSION

// NodeSpec is what the parent hands one node process, written as JSON next
// to the node's store directory. The same spec starts the node again after
// a kill (a restart keeps its ports and its storage, as a pod does).
type NodeSpec struct {
	Name        string   `json:"name"`
	Port        int      `json:"port"`
	HTTPPort    int      `json:"http_port"`
	ClusterName string   `json:"cluster_name,omitempty"`
	ClusterPort int      `json:"cluster_port,omitempty"`
	Routes      []string `json:"routes,omitempty"`
	StoreDir    string   `json:"store_dir"`
	// MaxStore is the node's JetStream file storage limit in bytes (0: the
	// server's default, a share of the disk).
	MaxStore   int64 `json:"max_store,omitempty"`
	MaxPayload int32 `json:"max_payload,omitempty"`
	// Tags are the server's tags, which a stream's placement can ask for.
	Tags []string `json:"tags,omitempty"`
	// LameDuck is how long the node takes to shut down on SIGUSR2 (lame
	// duck mode: it tells its clients to move, then closes them over this
	// time); 0 keeps the server's default.
	LameDuck time.Duration `json:"lame_duck,omitempty"`
	Debug    bool          `json:"debug,omitempty"`
}

// Options turns a spec into nats-server options bound to loopback.
func (n NodeSpec) Options() (*server.Options, error) {
	o := &server.Options{
		ServerName: n.Name,
		Host:       "127.0.0.1",
		Port:       n.Port,
		HTTPHost:   "127.0.0.1",
		HTTPPort:   n.HTTPPort,
		JetStream:  true,
		StoreDir:   n.StoreDir,
		MaxPayload: n.MaxPayload,
		// Thousands of client connections are the point of some
		// scenarios: no server-side cap below the OS limit.
		MaxConn:          1 << 20,
		NoSigs:           true,
		Debug:            n.Debug,
		Tags:             n.Tags,
		LameDuckDuration: n.LameDuck,
	}
	if n.LameDuck > 0 {
		o.LameDuckGracePeriod = min(n.LameDuck/2, 10*time.Second)
	}
	if n.MaxStore > 0 {
		o.JetStreamMaxStore = n.MaxStore
	}
	if n.ClusterName != "" {
		o.Cluster = server.ClusterOpts{Name: n.ClusterName, Host: "127.0.0.1", Port: n.ClusterPort}
		for _, r := range n.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("route %q: %w", r, err)
			}
			o.Routes = append(o.Routes, u)
		}
	}
	return o, nil
}

// MaybeRunChild runs one nats-server node and exits, if this process was
// started as a node child (ChildEnv is set); otherwise it returns at once.
// The main of a binary that starts clusters (cmd/pipebench through
// builtins.MaybeRunChild, and test binaries from TestMain) calls it first
// thing. In the child it is the main, so it exits the process.
func MaybeRunChild() { childproc.RunIfChild(ChildEnv, "embedded nats-server", runNode) }

func runNode(path string) error {
	var spec NodeSpec
	if err := childproc.ReadSpec(path, &spec); err != nil {
		return err
	}
	opts, err := spec.Options()
	if err != nil {
		return err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	s.ConfigureLogger()
	go s.Start()
	if !s.ReadyForConnections(60 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("node %s did not accept connections within 60s", spec.Name)
	}
	fmt.Fprintf(os.Stderr, "node %s ready, pid %s\n", spec.Name, strconv.Itoa(os.Getpid()))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, lameDuckSignal)
	down := make(chan struct{})
	go func() { s.WaitForShutdown(); close(down) }()
	for done := false; !done; {
		select {
		case got := <-sig:
			if got == lameDuckSignal {
				// Lame duck mode: clients are told to move, then the
				// server shuts down by itself.
				go s.LameDuckShutdown()
				continue
			}
			s.Shutdown()
			done = true
		case <-down:
			done = true
		}
	}
	s.WaitForShutdown()
	return nil
}
