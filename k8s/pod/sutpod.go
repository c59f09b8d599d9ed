package pod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/pipebench/pipebench"
)

// KeyInstances is the in-cluster system under test's instances (JSON:
// name and metrics URL each), in its ConfigMap.
const KeyInstances = "instances"

// SUTStarted is what the system under test's pod Start returns: where the
// embedded system receives and its instances, as it reports them (on
// loopback, where embedded systems listen).
type SUTStarted struct {
	Endpoint  string
	Endpoints map[string]string
	Instances []pipebench.Instance
}

// SUTPod is the in-cluster system under test's side of a launch: one
// system that every shard sends to and observes, as one gateway serves
// many clients, instead of one per shard.
type SUTPod struct {
	// The system is reached on the pod's address, IP.
	InPod
	// Start starts the scenario's system under test from the run's
	// ConfigMap; it exports to the in-cluster sink, if there is one.
	Start func(ctx context.Context, run *corev1.ConfigMap) (*SUTStarted, error)
}

// Main runs the system under test: it starts it, forwards each address
// the system listens on (loopback, or a Unix socket) from a port on the
// pod's address, publishes those in ConfigMap NAME-sut, reports ready and
// stays up until ctx ends (the run's deletion).
func (p SUTPod) Main(ctx context.Context) error {
	st, mine, stop, err := startInPod(ctx, &p.InPod, "the system under test is reached", SUTName(p.Run), RoleSUT, p.Start)
	if stop {
		return err
	}
	fail := mine.Fail
	fw := &forwarders{ip: p.IP, by: map[string]string{}}
	defer fw.close()
	pub := func(endpoint string) (string, error) {
		if endpoint == "" {
			return "", nil
		}
		return fw.publish(endpoint)
	}
	endpoint, err := pub(st.Endpoint)
	if err != nil {
		return fail(err)
	}
	eps := map[string]string{}
	for k, v := range st.Endpoints {
		if eps[k], err = pub(v); err != nil {
			return fail(err)
		}
	}
	type instance struct {
		Name       string `json:"name"`
		MetricsURL string `json:"metrics_url,omitempty"`
	}
	var ins []instance
	for _, in := range st.Instances {
		u, err := pub(in.MetricsURL)
		if err != nil {
			return fail(err)
		}
		ins = append(ins, instance{Name: in.Name, MetricsURL: u})
	}
	epsJSON, _ := json.Marshal(eps)
	insJSON, _ := json.Marshal(ins)
	unready, err := mine.ready(ctx, "sut", func(cm *corev1.ConfigMap) {
		cm.Data[KeyEndpoint] = endpoint
		cm.Data[KeyEndpoints], cm.Data[KeyInstances] = string(epsJSON), string(insJSON)
	})
	if err != nil {
		return err
	}
	defer unready()
	fmt.Fprintf(p.Log, "system under test receiving on %s (forwarded to %s)\n", endpoint, st.Endpoint)
	// Up until the launcher says the run ended (or deletes it): its Job
	// then completes.
	_, err = awaitConfigMap(ctx, p.Client, p.Namespace, p.Run, 1<<62, func(cm *corev1.ConfigMap) (bool, error) {
		return cm.Data[KeyEnded] != "", nil
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, errGone) {
		return err
	}
	fmt.Fprintln(p.Log, "run ended")
	return nil
}

// SUTEndpoints waits until the in-cluster system under test of run is
// ready and returns its endpoints and instances with host (its Service's
// name) in place of its pod's address. Each instance has no PID: its
// process is in another pod.
func SUTEndpoints(ctx context.Context, c Client, ns, run, host string, timeout time.Duration) (target string, targets map[string]string, instances []pipebench.Instance, err error) {
	cm, err := waitReadyConfigMap(ctx, c, ns, SUTName(run), "system under test", timeout)
	if err != nil {
		return "", nil, nil, err
	}
	if cm.Data[KeyEndpoint] != "" {
		if target, err = Rehost(cm.Data[KeyEndpoint], host); err != nil {
			return "", nil, nil, err
		}
	}
	var eps map[string]string
	if s := cm.Data[KeyEndpoints]; s != "" && s != "null" {
		if err := json.Unmarshal([]byte(s), &eps); err != nil {
			return "", nil, nil, fmt.Errorf("ConfigMap %s: endpoints: %w", SUTName(run), err)
		}
	}
	if len(eps) > 0 {
		targets = map[string]string{}
		for k, v := range eps {
			if targets[k], err = Rehost(v, host); err != nil {
				return "", nil, nil, err
			}
		}
	}
	var ins []struct {
		Name       string `json:"name"`
		MetricsURL string `json:"metrics_url"`
	}
	if s := cm.Data[KeyInstances]; s != "" && s != "null" {
		if err := json.Unmarshal([]byte(s), &ins); err != nil {
			return "", nil, nil, fmt.Errorf("ConfigMap %s: instances: %w", SUTName(run), err)
		}
	}
	for _, in := range ins {
		u := in.MetricsURL
		if u != "" {
			if u, err = Rehost(u, host); err != nil {
				return "", nil, nil, err
			}
		}
		instances = append(instances, pipebench.Instance{Name: in.Name, MetricsURL: u})
	}
	return target, targets, instances, nil
}

// forwarders forward TCP connections from ports on the pod's address to
// where the embedded system listens (embedded systems listen on loopback
// or on Unix sockets, out of the Service's reach). One forwarder per
// address the system reports, shared by every endpoint naming it.
type forwarders struct {
	ip string
	mu sync.Mutex
	by map[string]string // the system's address -> ip:port
	ls []net.Listener
	wg sync.WaitGroup
}

// publish returns endpoint with its address replaced by the forwarder's
// on the pod's address (a Unix socket's endpoint becomes host:port).
func (f *forwarders) publish(endpoint string) (string, error) {
	network, addr, err := listenAddr(endpoint)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pub, ok := f.by[network+" "+addr]
	if !ok {
		ln, err := net.Listen("tcp", net.JoinHostPort(f.ip, "0"))
		if err != nil {
			return "", fmt.Errorf("forward %s: %w", endpoint, err)
		}
		f.ls = append(f.ls, ln)
		pub = ln.Addr().String()
		f.by[network+" "+addr] = pub
		f.wg.Add(1)
		go f.serve(ln, network, addr)
	}
	if network == "unix" || !strings.Contains(endpoint, "://") {
		return pub, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	u.Host = pub
	return u.String(), nil
}

func (f *forwarders) serve(ln net.Listener, network, addr string) {
	defer f.wg.Done()
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			out, err := net.DialTimeout(network, addr, 5*time.Second)
			if err != nil {
				in.Close()
				return
			}
			pipe(in, out)
		}()
	}
}

// pipe copies both ways until both directions end, passing a half close
// on.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			c.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

func (f *forwarders) close() {
	f.mu.Lock()
	for _, ln := range f.ls {
		ln.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// listenAddr is the network and address an endpoint names: unix:///path,
// scheme://host:port/..., or host:port.
func listenAddr(endpoint string) (network, addr string, err error) {
	if p, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		return "unix", p, nil
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Port() == "" {
			return "", "", fmt.Errorf("endpoint %q names no host:port to forward", endpoint)
		}
		return "tcp", u.Host, nil
	}
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return "", "", fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	return "tcp", endpoint, nil
}
