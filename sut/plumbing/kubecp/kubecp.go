// Package kubecp starts a real Kubernetes control plane: etcd,
// kube-apiserver and kube-controller-manager, all on 127.0.0.1 free ports,
// with their data in a folder, from the binaries the separate module
// tools/kube builds (its build.sh). The health-event system under test
// starts one for a run when no kubeconfig is given (kube.bin), and the
// tests start theirs through internal/testkit/kubetest, which adds what
// they simulate (a kubelet).
package kubecp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// EnvBin is the environment variable naming the directory of the kube
// binaries (tools/kube/build.sh DIR) that tests and built-in scenarios
// read.
const EnvBin = "PIPEBENCH_TEST_KUBE_BIN"

// Cluster is a running control plane.
type Cluster struct {
	// Config is an administrator's client configuration (system:masters).
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file holding Config.
	Kubeconfig string
	// Client is a clientset made from Config.
	Client kubernetes.Interface
	// Dir is the cluster's temporary directory.
	Dir string

	procs []proc
}

type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// Options choose what runs besides etcd and the API server.
type Options struct {
	// Controllers, if not empty, starts kube-controller-manager with these
	// controllers (like "job", "daemonset", "garbagecollector").
	Controllers []string
	// ControllerQPS, if set, is the controller manager's client rate
	// (--kube-api-qps; bursts twice as large); its default is 20 a
	// second, which a DaemonSet of 1,500 pods waits on.
	ControllerQPS int
}

// component returns the command running one component: DIR/kube
// COMPONENT (the multi-call binary), else DIR/COMPONENT.
func component(bin, name string, args ...string) *exec.Cmd {
	if fi, err := os.Stat(filepath.Join(bin, "kube")); err == nil && !fi.IsDir() {
		return exec.Command(filepath.Join(bin, "kube"), append([]string{name}, args...)...)
	}
	return exec.Command(filepath.Join(bin, name), args...)
}

func start(bin, dir string, o Options) (*Cluster, error) {
	c := &Cluster{Dir: dir}
	token := randomHex(16)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return c, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	saKey := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(saKey, keyPEM, 0o600); err != nil {
		return c, err
	}

	// etcd
	var etcdURL string
	err = retryPorts(func() error {
		cp, err1 := childproc.FreePort()
		pp, err2 := childproc.FreePort()
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		etcdURL = fmt.Sprintf("http://127.0.0.1:%d", cp)
		peer := fmt.Sprintf("http://127.0.0.1:%d", pp)
		cmd := component(bin, "etcd",
			"--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "default="+peer, "--unsafe-no-fsync",
			"--log-level", "warn")
		return c.run(cmd, filepath.Join(dir, "etcd.log"), func(ctx context.Context) bool {
			return httpOK(ctx, nil, etcdURL+"/health", "")
		})
	})
	if err != nil {
		return c, fmt.Errorf("etcd: %w", err)
	}

	// kube-apiserver
	var host string
	err = retryPorts(func() error {
		port, err := childproc.FreePort()
		if err != nil {
			return err
		}
		host = "https://127.0.0.1:" + strconv.Itoa(port)
		cmd := component(bin, "kube-apiserver",
			"--etcd-servers", etcdURL,
			"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
			"--secure-port", strconv.Itoa(port), "--cert-dir", filepath.Join(dir, "certs"),
			"--token-auth-file", filepath.Join(dir, "tokens.csv"),
			"--authorization-mode", "RBAC",
			"--service-account-issuer", "https://kubernetes.default.svc",
			"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
			"--service-cluster-ip-range", "10.96.0.0/24",
			"--endpoint-reconciler-type", "none",
			"--enable-priority-and-fairness=false",
			"--v", "0")
		return c.run(cmd, filepath.Join(dir, "apiserver.log"), func(ctx context.Context) bool {
			return httpOK(ctx, insecureClient(), host+"/readyz", token)
		})
	})
	if err != nil {
		return c, fmt.Errorf("kube-apiserver: %w", err)
	}
	c.Config = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS: 200, Burst: 400}
	c.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := WriteKubeconfig(c.Kubeconfig, host, token, ""); err != nil {
		return c, err
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return c, err
	}

	if len(o.Controllers) > 0 {
		err = retryPorts(func() error {
			port, err := childproc.FreePort()
			if err != nil {
				return err
			}
			cmd := component(bin, "kube-controller-manager",
				"--kubeconfig", c.Kubeconfig,
				"--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
				"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
				"--cert-dir", filepath.Join(dir, "kcm-certs"),
				"--controllers", strings.Join(o.Controllers, ","),
				"--leader-elect=false", "--use-service-account-credentials=false",
				"--concurrent-job-syncs", "5", "--v", verbosity())
			if o.ControllerQPS > 0 {
				cmd.Args = append(cmd.Args, "--kube-api-qps", strconv.Itoa(o.ControllerQPS), "--kube-api-burst", strconv.Itoa(2*o.ControllerQPS))
			}
			return c.run(cmd, filepath.Join(dir, "controller-manager.log"), func(ctx context.Context) bool {
				return httpOK(ctx, insecureClient(), fmt.Sprintf("https://127.0.0.1:%d/healthz", port), "")
			})
		})
		if err != nil {
			return c, fmt.Errorf("kube-controller-manager: %w", err)
		}
	}
	return c, nil
}

// errPortTaken asks retryPorts to try other ports.
var errPortTaken = errors.New("port taken")

// retryPorts runs start up to three times while it fails on a port that
// another process took between FreePort and the child's bind.
func retryPorts(start func() error) error {
	var err error
	for range 3 {
		if err = start(); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

// run starts cmd logging to logPath and waits up to 90 s until ready.
func (c *Cluster) run(cmd *exec.Cmd, logPath string, ready func(context.Context) bool) error {
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	// The component dies with the test binary, whatever ends it.
	cmd.SysProcAttr = childproc.DieWithParent()
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ok := ready(ctx)
		cancel()
		if ok {
			c.procs = append(c.procs, proc{cmd, exited})
			return nil
		}
		select {
		case <-exited:
			tail := childproc.Tail(logPath, 15)
			if strings.Contains(tail, "address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("%s exited: %s\n%s", filepath.Base(cmd.Path), cmd.ProcessState, tail)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("%s not ready within 90s:\n%s", filepath.Base(cmd.Path), childproc.Tail(logPath, 15))
		}
	}
}

// Stop stops the components, the last started first.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	c.procs = nil
}

// Log returns the tail of a component's log ("apiserver", "etcd",
// "controller-manager"), for failure messages.
func (c *Cluster) Log(name string, lines int) string {
	return childproc.Tail(filepath.Join(c.Dir, name+".log"), lines)
}

func insecureClient() *http.Client {
	cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		return http.DefaultClient
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Second}
}

func httpOK(ctx context.Context, client *http.Client, url, token string) bool {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WriteKubeconfig writes a kubeconfig for host with a bearer token and, if
// namespace is set, that default namespace. TLS verification is off: the
// API server's certificate is self-signed for the test.
func WriteKubeconfig(path, host, token, namespace string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: namespace}
	cfg.CurrentContext = "test"
	return clientcmd.WriteToFile(*cfg, path)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// verbosity is the components' log level: PIPEBENCH_TEST_KUBE_V, else 0.
func verbosity() string {
	if v := os.Getenv("PIPEBENCH_TEST_KUBE_V"); v != "" {
		return v
	}
	return "0"
}
