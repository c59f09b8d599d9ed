// Package natscluster runs real nats-server nodes with JetStream as child
// processes of the pipebench binary (which re-executes itself once per
// node, so each node's memory and CPU are its own): one node, or a cluster
// of N on loopback, each storing on disk in the run's directory with a
// storage limit of its own. A node can be killed and started again on the
// same ports and storage (a pod restart), frozen and thawed (a hung
// process), or put into lame duck mode. The systems under test that hold
// nats-server nodes (sut/jetstream, sut/eventproxy) share it, and with it a
// schedule of such faults (Chaos).
//
// Every node's monitoring (/varz, /jsz, /connz, /routez, /healthz) is also
// served through one front listener of the parent at /NODE/... (Front), so
// that a node's instance URL answers even while the node is frozen or down
// (an error, at once), and a Prometheus scrape of it is an empty page
// rather than nats-server's HTML.
package natscluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// Params describe the nodes to start.
type Params struct {
	// Nodes is the number of nats-server processes; more than 1 forms a
	// cluster on loopback.
	Nodes int
	// MaxStore is each node's JetStream file storage limit in bytes: one
	// value for every node, or one per node (0: the server's default).
	MaxStore []int64
	// Tags are each node's server tags (nil: none), for stream placement.
	Tags [][]string
	// MaxPayload is the largest message accepted (0: 1 MiB).
	MaxPayload int32
	// Dir is where the storage directory is made (the run's scratch
	// directory).
	Dir string
	// GoMemLimit for every node, e.g. "400MiB" ("" = unset).
	GoMemLimit string
	// LameDuck is how long a node in lame duck mode takes to close its
	// clients (0: the server's default of 2 minutes).
	LameDuck time.Duration
	// StartTimeout bounds the wait for every node.
	StartTimeout time.Duration
}

// NodeNames returns the names n nodes have: nats-0, nats-1, ... (none for
// a count below 1, which a configuration's Validate refuses on its own).
func NodeNames(n int) []string {
	out := make([]string, max(n, 0))
	for i := range out {
		out[i] = "nats-" + strconv.Itoa(i)
	}
	return out
}

// Cluster is the running nodes. Start once, Stop once.
type Cluster struct {
	base  string
	exe   string
	nodes []*Node
	front *Front
	env   []string
}

// Node is one nats-server process. Its methods are safe for concurrent use.
type Node struct {
	spec NodeSpec
	c    *Cluster

	procState
	starts int
	// leaving: put into lame duck mode, so its exit is the one asked for.
	leaving bool
}

// procState is what a chaos victim knows of its process: the process
// itself, whether it is frozen, and whether it was killed and not started
// again. Node and Proc embed it, so that killing, freezing and thawing
// follow one set of rules for both; mu guards these fields, and a node's
// own starts and leaving with them.
type procState struct {
	mu     sync.Mutex
	proc   *childproc.Proc
	frozen bool
	down   bool // killed and not started again
}

// PID is the current process id.
func (s *procState) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.PID()
}

// thawLocked continues the process if it is frozen: a frozen process
// neither dies of SIGTERM nor answers, so every way of ending it thaws it
// first. The caller holds mu.
func (s *procState) thawLocked() {
	if s.frozen {
		signalPID(s.proc.PID(), sigThaw)
		s.frozen = false
	}
}

// kill ends the process at once (SIGKILL) and waits for it to be gone;
// name is the victim's, for the error.
func (s *procState) kill(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return fmt.Errorf("%s is down already", name)
	}
	s.thawLocked()
	s.proc.Kill()
	s.down = true
	return nil
}

// freeze stops the process (SIGSTOP) and returns once it is stopped.
func (s *procState) freeze(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down || s.frozen {
		return fmt.Errorf("%s is not running", name)
	}
	if err := freezePID(s.proc.PID()); err != nil {
		return err
	}
	s.frozen = true
	return nil
}

// thaw continues a frozen process (SIGCONT); one that is not frozen is
// left alone.
func (s *procState) thaw() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.frozen {
		return nil
	}
	s.frozen = false
	return signalPID(s.proc.PID(), sigThaw)
}

// Start starts every node and waits until each serves clients and its
// monitoring; with several, until the cluster has a JetStream meta leader.
// A node that found one of its ports taken in the meantime (another
// process got it between choosing and listening) makes it start again on
// new ports, up to three times.
func Start(ctx context.Context, p Params) (*Cluster, error) {
	for try := 1; ; try++ {
		c, err := startOnce(ctx, p)
		if err == nil || try == 3 || !childproc.PortTaken(err) {
			return c, err
		}
	}
}

func startOnce(ctx context.Context, p Params) (*Cluster, error) {
	if p.Nodes < 1 {
		return nil, fmt.Errorf("natscluster: %d nodes", p.Nodes)
	}
	if p.StartTimeout <= 0 {
		p.StartTimeout = 60 * time.Second
	}
	dir := p.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	base, err := os.MkdirTemp(dir, "jetstream-")
	if err != nil {
		return nil, fmt.Errorf("create the storage directory: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the pipebench binary to run nats-server: %w", err)
	}
	c := &Cluster{base: base, exe: exe, env: os.Environ()}
	if p.GoMemLimit != "" {
		c.env = append(c.env, "GOMEMLIMIT="+p.GoMemLimit)
	}
	specs := make([]NodeSpec, p.Nodes)
	for i := range specs {
		sp := &specs[i]
		sp.Name = "nats-" + strconv.Itoa(i)
		sp.StoreDir = filepath.Join(base, sp.Name)
		sp.MaxPayload, sp.LameDuck = p.MaxPayload, p.LameDuck
		switch {
		case len(p.MaxStore) == 1:
			sp.MaxStore = p.MaxStore[0]
		case i < len(p.MaxStore):
			sp.MaxStore = p.MaxStore[i]
		}
		if i < len(p.Tags) {
			sp.Tags = p.Tags[i]
		}
		ports := []*int{&sp.Port, &sp.HTTPPort}
		if p.Nodes > 1 {
			ports = append(ports, &sp.ClusterPort)
			sp.ClusterName = "pipebench"
		}
		for _, port := range ports {
			if *port, err = childproc.FreePort(); err != nil {
				return nil, err
			}
		}
	}
	for i := range specs {
		for j := range specs {
			if i != j && p.Nodes > 1 {
				specs[i].Routes = append(specs[i].Routes, "nats-route://127.0.0.1:"+strconv.Itoa(specs[j].ClusterPort))
			}
		}
	}
	for _, sp := range specs {
		nd := &Node{spec: sp, c: c}
		c.nodes = append(c.nodes, nd)
		if err := nd.start(); err != nil {
			c.Stop(context.Background())
			return nil, err
		}
	}
	deadline := time.Now().Add(p.StartTimeout)
	for _, nd := range c.nodes {
		if err := nd.proc.WaitReady(ctx, time.Until(deadline), nd.ready); err != nil {
			c.Stop(context.Background())
			return nil, err
		}
	}
	if p.Nodes > 1 {
		if err := c.waitMetaLeader(ctx, deadline); err != nil {
			c.Stop(context.Background())
			return nil, err
		}
	}
	if c.front, err = newFront(c.nodes); err != nil {
		c.Stop(context.Background())
		return nil, err
	}
	return c, nil
}

// start starts the node's process from its spec.
func (nd *Node) start() error {
	path := filepath.Join(nd.c.base, nd.spec.Name+".json")
	if err := childproc.WriteSpec(path, nd.spec); err != nil {
		return err
	}
	cmd := exec.Command(nd.c.exe)
	cmd.Env = append(append([]string(nil), nd.c.env...), ChildEnv+"="+path)
	nd.starts++
	log := nd.spec.Name + ".log"
	if nd.starts > 1 {
		log = nd.spec.Name + "." + strconv.Itoa(nd.starts) + ".log"
	}
	proc, err := childproc.Start("nats-server node "+nd.spec.Name, cmd, filepath.Join(nd.c.base, log))
	if err != nil {
		return err
	}
	nd.proc = proc
	return nil
}

// ready reports whether the node takes client connections and answers
// its monitoring.
func (nd *Node) ready() bool {
	return childproc.Listening("127.0.0.1:"+strconv.Itoa(nd.spec.Port)) &&
		childproc.Answers(nd.MonitorURL()+"/varz", http.StatusOK, time.Second)
}

// waitMetaLeader waits until some node reports a JetStream meta leader.
func (c *Cluster) waitMetaLeader(ctx context.Context, deadline time.Time) error {
	cl := http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		for _, nd := range c.nodes {
			resp, err := cl.Get(nd.MonitorURL() + "/jsz")
			if err != nil {
				continue
			}
			var j struct {
				Meta *struct {
					Leader string `json:"leader"`
				} `json:"meta_cluster"`
			}
			err = json.NewDecoder(resp.Body).Decode(&j)
			resp.Body.Close()
			if err == nil && j.Meta != nil && j.Meta.Leader != "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the %d nats-server nodes elected no JetStream leader in time; the first node's log:\n%s", len(c.nodes), c.nodes[0].proc.Tail())
}

// Nodes returns the nodes in order (nats-0, nats-1, ...).
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns the node called name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, nd := range c.nodes {
		if nd.spec.Name == name {
			return nd
		}
	}
	return nil
}

// ClientURL is every node's client URL, separated by commas (nats.go and
// pipebench's nats driver take that as a server list).
func (c *Cluster) ClientURL() string {
	urls := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		urls[i] = nd.ClientURL()
	}
	return strings.Join(urls, ",")
}

// Instances lists every node with its PID and its monitoring base URL
// through the front (serving /varz, /jsz, /connz, /routez, /healthz).
func (c *Cluster) Instances() []pipebench.Instance {
	out := make([]pipebench.Instance, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = pipebench.Instance{Name: nd.spec.Name, PID: nd.PID(), MetricsURL: c.front.URL(nd.spec.Name), CurrentPID: nd.PID}
	}
	return out
}

// Stop thaws a frozen node, sends SIGTERM to every node, waits (bounded by
// ctx, at most 15 s), kills what is left and closes the front.
func (c *Cluster) Stop(ctx context.Context) error {
	var procs []*childproc.Proc
	for _, nd := range c.nodes {
		nd.mu.Lock()
		nd.thawLocked()
		if !nd.down {
			procs = append(procs, nd.proc)
		}
		nd.down = true
		nd.mu.Unlock()
	}
	err := childproc.Stop(ctx, procs...)
	if c.front != nil {
		c.front.close()
	}
	return err
}

// Name is the node's name: nats-0, nats-1, ...
func (nd *Node) Name() string { return nd.spec.Name }

// Spec is the node's spec.
func (nd *Node) Spec() NodeSpec { return nd.spec }

// ClientURL is the node's nats:// URL.
func (nd *Node) ClientURL() string { return "nats://127.0.0.1:" + strconv.Itoa(nd.spec.Port) }

// MonitorURL is the node's own monitoring base URL (http://127.0.0.1:PORT).
func (nd *Node) MonitorURL() string { return "http://127.0.0.1:" + strconv.Itoa(nd.spec.HTTPPort) }

// Kill ends the node at once (SIGKILL, as when a pod is evicted or the
// kernel kills it) and waits for it to be gone.
func (nd *Node) Kill() error { return nd.kill(nd.spec.Name) }

// Restart starts a killed node again on the same ports and storage and
// waits (bounded by ctx and timeout) until it serves clients. The node's
// lock is not held while it waits, so PID answers meanwhile.
func (nd *Node) Restart(ctx context.Context, timeout time.Duration) error {
	var err error
	for try := 0; try < 5; try++ {
		nd.mu.Lock()
		if !nd.down {
			nd.mu.Unlock()
			return fmt.Errorf("%s is running: kill it first", nd.spec.Name)
		}
		if err = nd.start(); err != nil {
			nd.mu.Unlock()
			return err
		}
		proc := nd.proc
		nd.down, nd.leaving = false, false // a process runs from here on
		nd.mu.Unlock()
		err = proc.WaitReady(ctx, timeout, nd.ready)
		if err == nil || !childproc.PortTaken(err) {
			return err
		}
		nd.mu.Lock()
		nd.down = true // a port still held: try again shortly
		nd.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// Freeze stops the node's process (SIGSTOP) and returns once it is
// stopped: it holds its connections and answers nothing, as a hung
// process does, until Thaw.
func (nd *Node) Freeze() error { return nd.freeze(nd.spec.Name) }

// Thaw continues a frozen node (SIGCONT).
func (nd *Node) Thaw() error { return nd.thaw() }

// LameDuck puts the node into lame duck mode: it tells its clients to
// connect elsewhere, closes them over Params.LameDuck, then exits.
func (nd *Node) LameDuck() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.down || nd.frozen {
		return fmt.Errorf("%s is not running", nd.spec.Name)
	}
	nd.leaving = true
	return signalPID(nd.proc.PID(), sigLameDuck)
}

// Exited describes the node's process if it ended without being asked to
// (killed by the chaos schedule or put into lame duck mode are asked):
// its exit status and the tail of its log; none while it runs.
func (nd *Node) Exited() []string {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.down || nd.leaving {
		return nil
	}
	return childproc.Exits(nd.proc)
}

// Exited describes every node that ended without being asked to, for a
// system under test's pipebench.ExitReporter.
func (c *Cluster) Exited() []string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.Exited()...)
	}
	return out
}

// Down reports whether the node was killed and not started again.
func (nd *Node) Down() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.down
}
