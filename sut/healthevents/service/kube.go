package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipebench/pipebench/sut/plumbing/kubecp"
)

// NodeLabel marks the Node objects the service created, so that they (and
// only they) are deleted at the end.
const NodeLabel = "pipebench.dev/health-events-node"

// kube cordons nodes through a real API server: one the service started
// (Bin) or a cluster's (Kubeconfig).
type kube struct {
	cluster *kubecp.Cluster // when started here
	config  *rest.Config
	client  kubernetes.Interface
	owned   bool // the cluster is ours: no need to delete the Nodes

	mu      sync.Mutex
	created map[string]bool
}

// openKube connects to the API server of cfg (starting one from Bin) and
// creates the Node objects node-0..node-N-1.
func openKube(ctx context.Context, cfg KubeConfig, dir string) (*kube, error) {
	k := &kube{created: map[string]bool{}}
	if cfg.Bin != "" {
		c, err := kubecp.StartIn(cfg.Bin, dir, kubecp.Options{Controllers: cfg.Controllers})
		if err != nil {
			return nil, fmt.Errorf("healthevents: start the API server from kube.bin %s: %w", cfg.Bin, err)
		}
		k.cluster, k.config, k.owned = c, rest.CopyConfig(c.Config), true
	} else {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("healthevents: kube.kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		k.config = rc
	}
	// The service makes its requests as fast as it needs to, as a
	// controller with a raised client limit would.
	k.config.QPS, k.config.Burst = 5000, 10000
	var err error
	if k.client, err = kubernetes.NewForConfig(k.config); err != nil {
		k.close(context.Background())
		return nil, err
	}
	if err := k.createNodes(ctx, cfg.Nodes); err != nil {
		k.close(context.Background())
		return nil, fmt.Errorf("healthevents: create %d Nodes through the API server: %w", cfg.Nodes, err)
	}
	return k, nil
}

// createNodes creates node-0..node-n-1 (those that exist are kept), 16 at
// a time.
func (k *kube) createNodes(ctx context.Context, n int) error {
	work := make(chan int)
	errc := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := k.ensureNode(ctx, "node-"+strconv.Itoa(i)); err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case work <- i:
		case err := <-errc:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

func (k *kube) ensureNode(ctx context.Context, name string) error {
	k.mu.Lock()
	done := k.created[name]
	k.mu.Unlock()
	if done {
		return nil
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NodeLabel: "true"}}}
	_, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	k.mu.Lock()
	k.created[name] = true
	k.mu.Unlock()
	return nil
}

// cordon does what the fault-quarantine module does to a node for a fatal
// event: reads the Node and, unless it is already cordoned for this
// event, marks it unschedulable with the event's annotations (two
// requests: a GET and a PATCH).
func (k *kube) cordon(ctx context.Context, ev event) error {
	if err := k.ensureNode(ctx, ev.node); err != nil {
		return err
	}
	if _, err := k.client.CoreV1().Nodes().Get(ctx, ev.node, metav1.GetOptions{}); err != nil {
		return err
	}
	ann := map[string]string{"pipebench.dev/health-event-seq": strconv.FormatUint(ev.seq, 10)}
	if !ev.sent.IsZero() {
		ann["pipebench.dev/sent-at"] = ev.sent.UTC().Format(time.RFC3339Nano)
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": ann},
		"spec":     map[string]any{"unschedulable": true},
	})
	_, err := k.client.CoreV1().Nodes().Patch(ctx, ev.node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// metrics reads the API server's own /metrics with the service's
// credentials (for Prometheus, which then needs none).
func (k *kube) metrics(ctx context.Context) ([]byte, error) {
	return k.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
}

// apiServerPID is the API server's process id when the service started it.
func (k *kube) apiServerPID() int {
	if k.cluster == nil {
		return 0
	}
	return k.cluster.APIServerPID()
}

// close deletes the Nodes the service created in a cluster not its own, and
// stops a cluster it started.
func (k *kube) close(ctx context.Context) {
	if k.client != nil && !k.owned {
		_ = k.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: NodeLabel + "=true"})
	}
	if k.cluster != nil {
		k.cluster.Stop()
	}
}
