package healthevents

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipebench/pipebench"
)

// Config configures the service.
type Config struct {
	// Listen is where gRPC is served: unix:///path/to.sock, or host:port.
	// Empty: a Unix socket in the run's scratch directory.
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// HTTPListen is host:port for /effects, /nodes and the metrics.
	HTTPListen string `yaml:"http_listen" json:"http_listen"`
	// EffectRate, when more than 0, caps how many events per second the
	// quarantine stage handles (the blast scenarios model a slow
	// fault-quarantine module with it); 0 handles them as fast as the
	// API server and the store answer.
	EffectRate float64 `yaml:"effect_rate" json:"effect_rate"`
	// QueueSize bounds the events received and not yet applied (in the
	// connector's queue, being stored, or in the quarantine backlog); a
	// full queue answers RESOURCE_EXHAUSTED.
	QueueSize int `yaml:"queue_size" json:"queue_size"`
	// StoreWorkers is how many events the connector writes to the store
	// at once (the platform connectors write in parallel).
	StoreWorkers int `yaml:"store_workers" json:"store_workers"`
	// QuarantineWorkers is how many events the quarantine stage handles at
	// once: 1 is the fault-quarantine module's one at a time.
	QuarantineWorkers int `yaml:"quarantine_workers" json:"quarantine_workers"`
	// Store is where each event is stored.
	Store StoreConfig `yaml:"store" json:"store"`
	// Kube is the API server each event's node is cordoned through.
	Kube KubeConfig `yaml:"kube" json:"kube"`
}

// The store types.
const (
	StoreFerretDB = "ferretdb" // FerretDB started for the run (SQLite, or postgres_url)
	StoreMongoDB  = "mongodb"  // a running MongoDB (mongodb_url), such as a replica set
	StoreNone     = "none"     // no store: events go straight to quarantine
)

// StoreConfig chooses the document store.
type StoreConfig struct {
	// Type is ferretdb (default when mongodb_url is empty), mongodb or
	// none.
	Type string `yaml:"type" json:"type,omitempty"`
	// MongoDBURL is a running MongoDB's connection string
	// (mongodb://h1,h2,h3/?replicaSet=rs0); it implies type mongodb. Its
	// password, if any, is never printed.
	MongoDBURL pipebench.Secret `yaml:"mongodb_url" json:"mongodb_url,omitempty"`
	// PostgresURL keeps FerretDB's data in this PostgreSQL database
	// instead of SQLite files in the run's folder.
	PostgresURL pipebench.Secret `yaml:"postgres_url" json:"postgres_url,omitempty"`
	// Database and Collection hold the events (nvsentinel.HealthEvents).
	Database string `yaml:"database" json:"database"`
	// Collection is the collection the events are stored in.
	Collection string `yaml:"collection" json:"collection"`
}

// KubeConfig chooses the API server. With neither Kubeconfig nor Bin the
// service cordons nodes in memory only and says so in its metrics
// (healthevents_kube_connected 0).
type KubeConfig struct {
	// Kubeconfig is a kubeconfig file of a cluster to cordon Node objects
	// in. The service creates Nodes NODE_PREFIX-N labelled
	// pipebench.dev/health-events-node=true there and deletes them at the
	// end: point it at a test cluster.
	Kubeconfig string `yaml:"kubeconfig" json:"kubeconfig,omitempty"`
	// Bin is a folder of the kube binaries (tools/kube/build.sh DIR):
	// the service starts etcd, kube-apiserver and kube-controller-manager
	// on loopback for the run. Kubeconfig, when also set, wins.
	Bin string `yaml:"bin" json:"bin,omitempty"`
	// Nodes is how many Node objects to create ("node-0".."node-N-1"; an
	// event for another node creates it).
	Nodes int `yaml:"nodes" json:"nodes"`
	// Controllers are the kube-controller-manager controllers started with
	// Bin (the cluster's background traffic); empty runs none.
	Controllers []string `yaml:"controllers" json:"controllers,omitempty"`
}

// Enabled reports whether an API server was asked for.
func (k KubeConfig) Enabled() bool { return k.Kubeconfig != "" || k.Bin != "" }

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Listen != "" && !strings.HasPrefix(c.Listen, "unix:///") {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("listen: %q is not unix:///path/to.sock or host:port", c.Listen))
		}
	}
	if _, _, err := net.SplitHostPort(c.HTTPListen); err != nil {
		errs = append(errs, fmt.Errorf("http_listen: %q is not host:port", c.HTTPListen))
	}
	if c.EffectRate < 0 {
		errs = append(errs, errors.New("effect_rate: must be 0 (as fast as it goes) or more (effects per second)"))
	}
	if c.QueueSize < 1 {
		errs = append(errs, errors.New("queue_size: must be at least 1"))
	}
	if c.StoreWorkers < 1 {
		errs = append(errs, errors.New("store_workers: must be at least 1"))
	}
	if c.QuarantineWorkers < 1 {
		errs = append(errs, errors.New("quarantine_workers: must be at least 1 (1: one event at a time)"))
	}
	s := &c.Store
	switch {
	case s.Type == "" && s.MongoDBURL != "":
		s.Type = StoreMongoDB
	case s.Type == "":
		s.Type = StoreFerretDB
	}
	switch s.Type {
	case StoreFerretDB, StoreNone:
		if s.MongoDBURL != "" {
			errs = append(errs, fmt.Errorf("store.mongodb_url: set, but store.type is %s: leave type out or write mongodb", s.Type))
		}
	case StoreMongoDB:
		if u, err := url.Parse(s.MongoDBURL.Reveal()); s.MongoDBURL == "" || err != nil || (u.Scheme != "mongodb" && u.Scheme != "mongodb+srv") {
			errs = append(errs, errors.New("store.mongodb_url: give a running MongoDB's mongodb:// or mongodb+srv:// URL"))
		}
	default:
		errs = append(errs, fmt.Errorf("store.type: %q is not ferretdb, mongodb or none", s.Type))
	}
	if s.PostgresURL != "" && s.Type != StoreFerretDB {
		errs = append(errs, errors.New("store.postgres_url: only the ferretdb store keeps its data in PostgreSQL"))
	}
	if s.Database == "" || s.Collection == "" {
		errs = append(errs, errors.New("store.database, store.collection: must not be empty"))
	}
	if c.Kube.Kubeconfig != "" {
		c.Kube.Bin = "" // a cluster given wins over starting one
	}
	k := c.Kube
	if k.Kubeconfig != "" {
		if err := pipebench.CheckFile("kube.kubeconfig", k.Kubeconfig, 0); err != nil {
			errs = append(errs, fmt.Errorf("kube.kubeconfig: %v", err))
		}
	}
	if k.Bin != "" {
		_, e1 := os.Stat(filepath.Join(k.Bin, "kube"))
		_, e2 := os.Stat(filepath.Join(k.Bin, "kube-apiserver"))
		if e1 != nil && e2 != nil {
			errs = append(errs, fmt.Errorf("kube.bin: %s holds no kube binaries: build them with tools/kube/build.sh %s", k.Bin, k.Bin))
		}
	}
	if k.Nodes < 1 {
		errs = append(errs, errors.New("kube.nodes: must be at least 1"))
	}
	return errors.Join(errs...)
}

// DefaultConfig is the configuration a scenario's keys start from.
func DefaultConfig() Config { return *defaultConfig() }

func defaultConfig() *Config {
	return &Config{HTTPListen: "127.0.0.1:0", QueueSize: 100000, StoreWorkers: 16, QuarantineWorkers: 1,
		Store: StoreConfig{Database: "nvsentinel", Collection: "HealthEvents"},
		Kube:  KubeConfig{Nodes: 1500}}
}

// Factory returns the factory of the "healthevents" SUT: the service runs
// as a child process of pipebench-sut (package service), started by SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("healthevents", "health-event gRPC service (Unix socket or TCP): a connector storing each event in a MongoDB-protocol store (FerretDB started for the run, or mongodb_url) and a quarantine stage cordoning its node through a Kubernetes API server",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) {
			if c.Listen == "" {
				c.Listen = "unix://" + filepath.Join(env.ScratchDir(), "healthevents.sock")
			}
			return &SUT{cfg: *c, dir: env.Dir}, nil
		})
}
