// Package kubetest starts a real Kubernetes control plane for tests
// (sut/plumbing/kubecp: etcd, kube-apiserver and kube-controller-manager on
// 127.0.0.1), stopped at the test's end. The binaries are built from the
// separate module tools/kube (its build.sh); PIPEBENCH_TEST_KUBE_BIN names
// the directory holding them, and tests skip with a message when it is
// unset.
//
// No scheduler and no kubelet run: the Kubelet in this package plays both
// parts for the tests (see kubelet.go, which says exactly what it
// simulates).
package kubetest

import (
	"os"
	"testing"

	"github.com/pipebench/pipebench/sut/plumbing/kubecp"
)

// EnvBin is the environment variable naming the directory of the kube
// binaries (tools/kube/build.sh DIR).
const EnvBin = kubecp.EnvBin

// Options choose what runs besides etcd and the API server.
type Options = kubecp.Options

// Cluster is a running control plane, with what tests play beside it.
type Cluster struct{ *kubecp.Cluster }

// WriteKubeconfig writes a kubeconfig for host with a bearer token (see
// kubecp.WriteKubeconfig).
var WriteKubeconfig = kubecp.WriteKubeconfig

// Start starts a control plane for the test and stops it at the test's
// end. It skips the test when PIPEBENCH_TEST_KUBE_BIN is unset.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	bin := os.Getenv(EnvBin)
	if bin == "" {
		t.Skipf("%s is not set: build the kube test binaries with tools/kube/build.sh DIR and set %s=DIR (.ci/run does)", EnvBin, EnvBin)
	}
	c, err := kubecp.StartIn(bin, t.TempDir(), o)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(c.Stop)
	return &Cluster{c}
}
