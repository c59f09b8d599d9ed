package pod

import (
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipebench/pipebench"
)

// Config loads the client configuration: the kubeconfig file given,
// $KUBECONFIG, ~/.kube/config, or the pod's service account; namespace,
// if set, overrides the configuration's, which is returned (default when
// there is none). The client keeps to 50 requests a second (bursts of
// 100).
func Config(kubeconfig, namespace string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	if kubeconfig != "" {
		// client-go reads it whole: a regular file, bounded, checked
		// first.
		if err := pipebench.CheckFile("--kubeconfig", kubeconfig, 0); err != nil {
			return nil, "", err
		}
	}
	over := &clientcmd.ConfigOverrides{}
	if namespace != "" {
		over.Context.Namespace = namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", pipebench.UsageError("no Kubernetes cluster to talk to", "give --kubeconfig FILE or set KUBECONFIG", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

// Connect connects a pod to the API server (see Config): the pods read and
// write ConfigMaps alone, through the core group's client, which is all of
// client-go they link.
func Connect(namespace string) (corev1client.CoreV1Interface, string, error) {
	cfg, ns, err := Config("", namespace)
	if err != nil {
		return nil, "", err
	}
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}
